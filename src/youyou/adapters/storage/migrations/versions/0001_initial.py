"""Initial session storage schema: sessions and the append-only ledger.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.exc import DBAPIError

from youyou.adapters.storage.tables import TITLE_TRGM_INDEX, UtcDateTime, session_id_type

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", session_id_type(), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("title_folded", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Column("message_count", sa.BigInteger(), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("profile_seq", sa.BigInteger(), nullable=True),
        sa.Column("compaction_seq", sa.BigInteger(), nullable=True),
        sa.Column("checkpoint_seq", sa.BigInteger(), nullable=True),
        sa.Column("memory_mode_seq", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_sessions"),
    )
    op.create_index("ix_sessions_recent", "sessions", ["updated_at", "id", "title_folded"])
    op.create_table(
        "ledger_events",
        sa.Column("session_id", session_id_type(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("timestamp", UtcDateTime(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("metadata_key", sa.String(255), nullable=True),
        sa.Column("schema_version", sa.Integer(), nullable=False),
        sa.Column("event_json", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("session_id", "seq", name="pk_ledger_events"),
        sa.ForeignKeyConstraint(
            ["session_id"], ["sessions.id"], name="fk_ledger_events_session", ondelete="CASCADE"
        ),
    )
    if op.get_bind().dialect.name == "postgresql":
        _create_title_trigram_index()


def _create_title_trigram_index() -> None:
    """Title search (LIKE '%…%') through a trigram GIN index, if pg_trgm may be installed here.

    Without the extension (not shipped, or no privilege) search still works by a table scan.
    """
    bind = op.get_bind()
    savepoint = bind.begin_nested()
    try:
        bind.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DBAPIError:
        savepoint.rollback()
        return
    savepoint.commit()
    op.create_index(
        TITLE_TRGM_INDEX,
        "sessions",
        ["title_folded"],
        postgresql_using="gin",
        postgresql_ops={"title_folded": "gin_trgm_ops"},
    )


def downgrade() -> None:
    op.drop_table("ledger_events")
    op.drop_index("ix_sessions_recent", table_name="sessions")
    op.drop_table("sessions")
