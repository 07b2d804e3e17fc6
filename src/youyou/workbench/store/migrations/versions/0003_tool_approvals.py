"""Tool approvals: the calls that wait for a person's decision, and the decisions.

Revision ID: wb0003
Revises: wb0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from youyou.adapters.storage.tables import UtcDateTime
from youyou.workbench.store.tables import chat_session_id_type

revision = "wb0003"
down_revision = "wb0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "wb_tool_approvals",
        sa.Column("chat_session_id", chat_session_id_type(), nullable=False),
        sa.Column("call_id", sa.String(255), nullable=False),
        sa.Column("tool_name", sa.String(255), nullable=False),
        sa.Column("arguments", sa.Text(), nullable=False),
        sa.Column("server_id", sa.String(255), nullable=True),
        sa.Column("requested_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=True),
        sa.Column("decision", sa.String(16), nullable=True),
        sa.Column("decided_by", sa.String(255), nullable=True),
        sa.Column("decided_at", UtcDateTime(), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("remember", sa.String(16), nullable=True),
        sa.Column("applied", sa.Boolean(), nullable=False),
        sa.Column("settled", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("chat_session_id", "call_id", name="pk_wb_tool_approvals"),
        sa.ForeignKeyConstraint(
            ["chat_session_id"],
            ["wb_chat_sessions.id"],
            name="fk_wb_tool_approvals_session",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_wb_tool_approvals_open", "wb_tool_approvals", ["settled", "chat_session_id"]
    )


def downgrade() -> None:
    op.drop_index("ix_wb_tool_approvals_open", table_name="wb_tool_approvals")
    op.drop_table("wb_tool_approvals")
