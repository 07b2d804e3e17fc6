"""Message text for search, and the durations of tool calls.

Revision ID: wb0005
Revises: wb0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.exc import DBAPIError

from youyou.adapters.storage.tables import UtcDateTime
from youyou.workbench.store.tables import MESSAGE_TRGM_INDEX, chat_session_id_type

revision = "wb0005"
down_revision = "wb0004"
branch_labels = None
depends_on = None


def _session_key(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["chat_session_id"], ["wb_chat_sessions.id"], name=f"fk_{table}_session", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "wb_message_texts",
        sa.Column("chat_session_id", chat_session_id_type(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("body_folded", sa.Text(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("chat_session_id", "seq", name="pk_wb_message_texts"),
        _session_key("wb_message_texts"),
    )
    op.create_table(
        "wb_tool_durations",
        sa.Column("chat_session_id", chat_session_id_type(), nullable=False),
        sa.Column("turn_seq", sa.BigInteger(), nullable=False),
        sa.Column("call_id", sa.String(255), nullable=False),
        sa.Column("duration_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "chat_session_id", "turn_seq", "call_id", name="pk_wb_tool_durations"
        ),
        _session_key("wb_tool_durations"),
    )
    if op.get_bind().dialect.name == "postgresql":
        _create_body_trigram_index()


def _create_body_trigram_index() -> None:
    """Message search (LIKE '%…%') through a trigram GIN index, if pg_trgm may be installed
    here; without it search still works by scanning the user's messages."""
    bind = op.get_bind()
    savepoint = bind.begin_nested()
    try:
        bind.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    except DBAPIError:
        savepoint.rollback()
        return
    savepoint.commit()
    op.create_index(
        MESSAGE_TRGM_INDEX,
        "wb_message_texts",
        ["body_folded"],
        postgresql_using="gin",
        postgresql_ops={"body_folded": "gin_trgm_ops"},
    )


def downgrade() -> None:
    op.drop_table("wb_tool_durations")
    op.drop_table("wb_message_texts")  # its index goes with it
