"""Session leases: one writer per session across processes.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from youyou.adapters.storage.tables import UtcDateTime, session_id_type

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "session_leases",
        sa.Column("session_id", session_id_type(), nullable=False),
        sa.Column("holder", sa.String(255), nullable=False),
        sa.Column("acquired_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("cancel_requested", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.PrimaryKeyConstraint("session_id", name="pk_session_leases"),
    )


def downgrade() -> None:
    op.drop_table("session_leases")
