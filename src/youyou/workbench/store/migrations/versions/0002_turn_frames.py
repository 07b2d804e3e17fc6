"""Turn followers and frames: a running turn's SSE frames for clients re-attaching through
another process.

Revision ID: wb0002
Revises: wb0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from youyou.adapters.storage.tables import UtcDateTime
from youyou.workbench.store.tables import chat_session_id_type

revision = "wb0002"
down_revision = "wb0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "wb_turn_followers",
        sa.Column("chat_session_id", chat_session_id_type(), nullable=False),
        sa.Column("requested_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("chat_session_id", name="pk_wb_turn_followers"),
        sa.ForeignKeyConstraint(
            ["chat_session_id"],
            ["wb_chat_sessions.id"],
            name="fk_wb_turn_followers_session",
            ondelete="CASCADE",
        ),
    )
    op.create_table(
        "wb_turn_frames",
        sa.Column("chat_session_id", chat_session_id_type(), nullable=False),
        sa.Column("turn_seq", sa.BigInteger(), nullable=False),
        sa.Column("frame_id", sa.Integer(), nullable=False),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("frame", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint(
            "chat_session_id", "turn_seq", "frame_id", name="pk_wb_turn_frames"
        ),
        sa.ForeignKeyConstraint(
            ["chat_session_id"],
            ["wb_chat_sessions.id"],
            name="fk_wb_turn_frames_session",
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    op.drop_table("wb_turn_frames")
    op.drop_table("wb_turn_followers")
