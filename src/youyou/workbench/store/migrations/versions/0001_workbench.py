"""Initial workbench schema: users, tokens, prompts, skills, selections, chat sessions.

Revision ID: wb0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from youyou.adapters.storage.tables import UtcDateTime
from youyou.workbench.store.tables import chat_session_id_type

revision = "wb0001"
down_revision = None
branch_labels = None
depends_on = None


def _owner(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["owner_id"], ["wb_users.id"], name=f"fk_{table}_owner", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "wb_users",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("username", sa.String(255), nullable=False),
        sa.Column("username_folded", sa.String(255), nullable=False),
        sa.Column("password_hash", sa.String(255), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_wb_users"),
        sa.UniqueConstraint("username_folded", name="uq_wb_users_username_folded"),
    )
    op.create_table(
        "wb_tokens",
        sa.Column("token_hash", sa.String(128), nullable=False),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("revoked_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("token_hash", name="pk_wb_tokens"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["wb_users.id"], name="fk_wb_tokens_user", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_wb_tokens_user", "wb_tokens", ["user_id"])
    op.create_table(
        "wb_prompts",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("owner_id", sa.String(64), nullable=False),
        sa.Column("label", sa.String(160), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("is_default", sa.Boolean(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_wb_prompts"),
        _owner("wb_prompts"),
    )
    op.create_index("ix_wb_prompts_owner", "wb_prompts", ["owner_id"])
    op.create_table(
        "wb_skills",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("owner_id", sa.String(64), nullable=False),
        sa.Column("filename", sa.String(255), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("size_bytes", sa.Integer(), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_wb_skills"),
        _owner("wb_skills"),
        sa.UniqueConstraint("owner_id", "name", name="uq_wb_skills_owner_name"),
    )
    op.create_table(
        "wb_selections",
        sa.Column("owner_id", sa.String(64), nullable=False),
        sa.Column("system_prompt_id", sa.String(64), nullable=True),
        sa.Column("skill_ids", sa.Text(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("owner_id", name="pk_wb_selections"),
        _owner("wb_selections"),
    )
    op.create_table(
        "wb_chat_sessions",
        sa.Column("id", chat_session_id_type(), nullable=False),
        sa.Column("owner_id", sa.String(64), nullable=False),
        sa.Column("ledger_session_id", sa.String(255), nullable=False),
        sa.Column("title", sa.Text(), nullable=False),
        sa.Column("title_folded", sa.Text(), nullable=False),
        sa.Column("model_id", sa.String(255), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("updated_at", UtcDateTime(), nullable=False),
        sa.Column("message_count", sa.BigInteger(), nullable=False),
        sa.Column("memory_mode", sa.String(32), nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("compacted_message_count", sa.BigInteger(), nullable=False),
        sa.Column("context_tokens", sa.BigInteger(), nullable=False),
        sa.Column("context_window_tokens", sa.BigInteger(), nullable=False),
        sa.Column("last_compacted_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_wb_chat_sessions"),
        _owner("wb_chat_sessions"),
        sa.UniqueConstraint("ledger_session_id", name="uq_wb_chat_sessions_ledger_session"),
    )
    op.create_index(
        "ix_wb_chat_sessions_recent", "wb_chat_sessions", ["owner_id", "updated_at", "id"]
    )


def downgrade() -> None:
    op.drop_index("ix_wb_chat_sessions_recent", table_name="wb_chat_sessions")
    op.drop_table("wb_chat_sessions")
    op.drop_table("wb_selections")
    op.drop_table("wb_skills")
    op.drop_index("ix_wb_prompts_owner", table_name="wb_prompts")
    op.drop_table("wb_prompts")
    op.drop_index("ix_wb_tokens_user", table_name="wb_tokens")
    op.drop_table("wb_tokens")
    op.drop_table("wb_users")
