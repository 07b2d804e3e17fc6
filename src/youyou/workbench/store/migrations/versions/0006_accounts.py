"""Accounts and roles: a role and a disabled mark on every user (existing users become
members), administrator-managed groups, one-time sign-up invites, and single sign-on
identities with the sign-ons under way.

Revision ID: wb0006
Revises: wb0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from youyou.adapters.storage.tables import UtcDateTime

revision = "wb0006"
down_revision = "wb0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("wb_users") as batch:
        batch.add_column(sa.Column("role", sa.String(16), nullable=False, server_default="member"))
        batch.add_column(sa.Column("disabled_at", UtcDateTime(), nullable=True))
    op.create_table(
        "wb_groups",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("name_folded", sa.String(64), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_wb_groups"),
        sa.UniqueConstraint("name_folded", name="uq_wb_groups_name_folded"),
    )
    op.create_table(
        "wb_group_members",
        sa.Column("group_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("group_id", "user_id", name="pk_wb_group_members"),
        sa.ForeignKeyConstraint(
            ["group_id"], ["wb_groups.id"], name="fk_wb_group_members_group", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["wb_users.id"], name="fk_wb_group_members_user", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_wb_group_members_user", "wb_group_members", ["user_id"])
    op.create_table(
        "wb_invites",
        sa.Column("token_hash", sa.String(128), nullable=False),
        sa.Column("created_by", sa.String(64), nullable=False),
        sa.Column("created_at", UtcDateTime(), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.Column("used_at", UtcDateTime(), nullable=True),
        sa.PrimaryKeyConstraint("token_hash", name="pk_wb_invites"),
        sa.ForeignKeyConstraint(
            ["created_by"], ["wb_users.id"], name="fk_wb_invites_creator", ondelete="CASCADE"
        ),
    )
    op.create_table(
        "wb_identities",
        sa.Column("issuer", sa.String(255), nullable=False),
        sa.Column("subject", sa.String(255), nullable=False),
        sa.Column("user_id", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("issuer", "subject", name="pk_wb_identities"),
        sa.ForeignKeyConstraint(
            ["user_id"], ["wb_users.id"], name="fk_wb_identities_user", ondelete="CASCADE"
        ),
    )
    op.create_table(
        "wb_oidc_logins",
        sa.Column("state_hash", sa.String(128), nullable=False),
        sa.Column("nonce", sa.String(128), nullable=False),
        sa.Column("code_verifier", sa.String(128), nullable=False),
        sa.Column("expires_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("state_hash", name="pk_wb_oidc_logins"),
    )


def downgrade() -> None:
    op.drop_table("wb_oidc_logins")
    op.drop_table("wb_identities")
    op.drop_table("wb_invites")
    op.drop_index("ix_wb_group_members_user", table_name="wb_group_members")
    op.drop_table("wb_group_members")
    op.drop_table("wb_groups")
    with op.batch_alter_table("wb_users") as batch:
        batch.drop_column("disabled_at")
        batch.drop_column("role")
