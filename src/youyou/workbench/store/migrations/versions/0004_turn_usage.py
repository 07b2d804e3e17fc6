"""Turn usage: tokens and cost of every completed turn, summed per session and per user.

Revision ID: wb0004
Revises: wb0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from youyou.adapters.storage.tables import UtcDateTime
from youyou.workbench.store.tables import chat_session_id_type

revision = "wb0004"
down_revision = "wb0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "wb_turn_usage",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("owner_id", sa.String(64), nullable=False),
        sa.Column("chat_session_id", chat_session_id_type(), nullable=False),
        sa.Column("turn_seq", sa.BigInteger(), nullable=False),
        sa.Column("model_id", sa.String(255), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_wb_turn_usage"),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["wb_users.id"], name="fk_wb_turn_usage_owner", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_wb_turn_usage_owner", "wb_turn_usage", ["owner_id", "created_at"])
    op.create_index("ix_wb_turn_usage_session", "wb_turn_usage", ["chat_session_id", "turn_seq"])


def downgrade() -> None:
    op.drop_index("ix_wb_turn_usage_session", table_name="wb_turn_usage")
    op.drop_index("ix_wb_turn_usage_owner", table_name="wb_turn_usage")
    op.drop_table("wb_turn_usage")
