"""The workbench's relational schema, beside the kernel's ledger in the same database.

It has its own MetaData and its own Alembic chain (``migrations/``, version table
``VERSION_TABLE``), so the kernel's schema and this one evolve independently. The migrations
create exactly this schema; a test compares the two.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from youyou.adapters.storage.tables import UtcDateTime

VERSION_TABLE = "youyou_workbench_alembic_version"


def chat_session_id_type() -> String:
    """Code point order on both databases, so an id-prefix search is a plain range."""
    return String(64).with_variant(String(64, collation="C"), "postgresql")


def owner_column(table: str) -> Column[str]:
    """The owning user; an account's rows go with it."""
    return Column(
        "owner_id",
        String(64),
        ForeignKey("wb_users.id", ondelete="CASCADE", name=f"fk_{table}_owner"),
        nullable=False,
    )


metadata = MetaData()

users = Table(
    "wb_users",
    metadata,
    Column("id", String(64), nullable=False),
    Column("username", String(255), nullable=False),  # as the user typed it
    Column("username_folded", String(255), nullable=False),  # what uniqueness and sign-in match
    Column("password_hash", String(255), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("role", String(16), nullable=False, server_default="member"),  # admin | member
    Column("disabled_at", UtcDateTime, nullable=True),  # set: no sign-in, no token works
    PrimaryKeyConstraint("id", name="pk_wb_users"),
    UniqueConstraint("username_folded", name="uq_wb_users_username_folded"),
)

# Groups an administrator manages; ``groups = [...]`` of access lists name them.
groups = Table(
    "wb_groups",
    metadata,
    Column("id", String(64), nullable=False),
    Column("name", String(64), nullable=False),
    Column("name_folded", String(64), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("id", name="pk_wb_groups"),
    UniqueConstraint("name_folded", name="uq_wb_groups_name_folded"),
)

group_members = Table(
    "wb_group_members",
    metadata,
    Column(
        "group_id",
        String(64),
        ForeignKey("wb_groups.id", ondelete="CASCADE", name="fk_wb_group_members_group"),
        nullable=False,
    ),
    Column(
        "user_id",
        String(64),
        ForeignKey("wb_users.id", ondelete="CASCADE", name="fk_wb_group_members_user"),
        nullable=False,
    ),
    PrimaryKeyConstraint("group_id", "user_id", name="pk_wb_group_members"),
    Index("ix_wb_group_members_user", "user_id"),
)

# One-time sign-up links; only a hash of each invite token is stored.
invites = Table(
    "wb_invites",
    metadata,
    Column("token_hash", String(128), nullable=False),
    Column(
        "created_by",
        String(64),
        ForeignKey("wb_users.id", ondelete="CASCADE", name="fk_wb_invites_creator"),
        nullable=False,
    ),
    Column("created_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("used_at", UtcDateTime, nullable=True),
    PrimaryKeyConstraint("token_hash", name="pk_wb_invites"),
)

tokens = Table(
    "wb_tokens",
    metadata,
    Column("token_hash", String(128), nullable=False),
    Column(
        "user_id",
        String(64),
        ForeignKey("wb_users.id", ondelete="CASCADE", name="fk_wb_tokens_user"),
        nullable=False,
    ),
    Column("created_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    Column("revoked_at", UtcDateTime, nullable=True),
    PrimaryKeyConstraint("token_hash", name="pk_wb_tokens"),
    Index("ix_wb_tokens_user", "user_id"),
)

prompts = Table(
    "wb_prompts",
    metadata,
    Column("id", String(64), nullable=False),
    owner_column("wb_prompts"),
    Column("label", String(160), nullable=False),
    Column("content", Text, nullable=False),
    Column("is_default", Boolean, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("id", name="pk_wb_prompts"),
    Index("ix_wb_prompts_owner", "owner_id"),
)

skills = Table(
    "wb_skills",
    metadata,
    Column("id", String(64), nullable=False),
    owner_column("wb_skills"),
    Column("filename", String(255), nullable=False),
    Column("name", String(64), nullable=False),
    Column("description", Text, nullable=False),
    Column("content", Text, nullable=False),
    Column("size_bytes", Integer, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("id", name="pk_wb_skills"),
    # also serves "the owner's skills" lookups (owner_id leads)
    UniqueConstraint("owner_id", "name", name="uq_wb_skills_owner_name"),
)

selections = Table(
    "wb_selections",
    metadata,
    owner_column("wb_selections"),
    Column("system_prompt_id", String(64), nullable=True),
    Column("skill_ids", Text, nullable=False),  # JSON array of skill ids, in the chosen order
    Column("updated_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("owner_id", name="pk_wb_selections"),
)

chat_sessions = Table(
    "wb_chat_sessions",
    metadata,
    Column("id", chat_session_id_type(), nullable=False),
    owner_column("wb_chat_sessions"),
    Column("ledger_session_id", String(255), nullable=False),
    Column("title", Text, nullable=False),
    Column("title_folded", Text, nullable=False),  # catalog.fold(title), what search matches
    Column("model_id", String(255), nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    Column("updated_at", UtcDateTime, nullable=False),
    Column("message_count", BigInteger, nullable=False),
    Column("memory_mode", String(32), nullable=False),
    Column("summary", Text, nullable=True),
    Column("compacted_message_count", BigInteger, nullable=False),
    Column("context_tokens", BigInteger, nullable=False),
    Column("context_window_tokens", BigInteger, nullable=False),
    Column("last_compacted_at", UtcDateTime, nullable=True),
    PrimaryKeyConstraint("id", name="pk_wb_chat_sessions"),
    UniqueConstraint("ledger_session_id", name="uq_wb_chat_sessions_ledger_session"),
    Index("ix_wb_chat_sessions_recent", "owner_id", "updated_at", "id"),  # newest-first paging
)


def chat_session_column(table: str) -> Column[str]:
    """The chat session a row belongs to; the session's rows go with it."""
    return Column(
        "chat_session_id",
        chat_session_id_type(),
        ForeignKey("wb_chat_sessions.id", ondelete="CASCADE", name=f"fk_{table}_session"),
        nullable=False,
    )


# Sessions whose running turn a client follows through another process, and the frames of the
# session's newest turn that the process running it copies for that client
# (``workbench/relay.py``; PostgreSQL only).
turn_followers = Table(
    "wb_turn_followers",
    metadata,
    chat_session_column("wb_turn_followers"),
    Column("requested_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("chat_session_id", name="pk_wb_turn_followers"),
)

turn_frames = Table(
    "wb_turn_frames",
    metadata,
    chat_session_column("wb_turn_frames"),
    Column("turn_seq", BigInteger, nullable=False),  # the ledger seq of the turn's user message
    Column("frame_id", Integer, nullable=False),
    Column("event", String(32), nullable=False),
    Column("frame", Text, nullable=False),  # the SSE frame as sent
    PrimaryKeyConstraint("chat_session_id", "turn_seq", "frame_id", name="pk_wb_turn_frames"),
)

# Accounts signed in through an OpenID Connect provider, by the provider's (issuer, subject):
# never by a name, which the provider's users may change.
identities = Table(
    "wb_identities",
    metadata,
    Column("issuer", String(255), nullable=False),
    Column("subject", String(255), nullable=False),
    Column(
        "user_id",
        String(64),
        ForeignKey("wb_users.id", ondelete="CASCADE", name="fk_wb_identities_user"),
        nullable=False,
    ),
    PrimaryKeyConstraint("issuer", "subject", name="pk_wb_identities"),
)

# Single sign-ons under way: each ``state`` is used once (a replayed one finds no row).
oidc_logins = Table(
    "wb_oidc_logins",
    metadata,
    Column("state_hash", String(128), nullable=False),
    Column("nonce", String(128), nullable=False),
    Column("code_verifier", String(128), nullable=False),
    Column("expires_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("state_hash", name="pk_wb_oidc_logins"),
)

# The tool calls of a session's turn that wait, or waited, for a person's decision: what
# ``GET /chat/sessions/{id}`` lists as pending, and the mailbox through which a decision sent
# to any server process reaches the one running the turn (``workbench/approvals.py``). The
# ledger keeps the record of the request and the decision; this is its index.
tool_approvals = Table(
    "wb_tool_approvals",
    metadata,
    chat_session_column("wb_tool_approvals"),
    Column("call_id", String(255), nullable=False),
    Column("tool_name", String(255), nullable=False),
    Column("arguments", Text, nullable=False),  # JSON
    Column("server_id", String(255), nullable=True),
    Column("requested_at", UtcDateTime, nullable=False),
    Column("expires_at", UtcDateTime, nullable=True),
    Column("decision", String(16), nullable=True),  # approve | deny; NULL while it waits
    Column("decided_by", String(255), nullable=True),
    Column("decided_at", UtcDateTime, nullable=True),
    Column("reason", Text, nullable=True),
    Column("remember", String(16), nullable=True),
    Column("applied", Boolean, nullable=False),  # the turn's kernel has the decision
    Column("settled", Boolean, nullable=False),  # the turn went past the call (or ended)
    PrimaryKeyConstraint("chat_session_id", "call_id", name="pk_wb_tool_approvals"),
    Index("ix_wb_tool_approvals_open", "settled", "chat_session_id"),
)

# The tokens (and the cost, when the model has prices) of every completed turn, one row each,
# kept while the account exists: deleting or clearing a session keeps what it used
# (``workbench/store/usage.py``).
turn_usage = Table(
    "wb_turn_usage",
    metadata,
    Column("id", String(64), nullable=False),
    owner_column("wb_turn_usage"),
    Column("chat_session_id", chat_session_id_type(), nullable=False),  # no FK: outlives it
    Column("turn_seq", BigInteger, nullable=False),  # the ledger seq of the turn's user message
    Column("model_id", String(255), nullable=False),
    Column("input_tokens", BigInteger, nullable=False),
    Column("output_tokens", BigInteger, nullable=False),
    Column("cost", Float, nullable=True),  # None: the model has no prices configured
    Column("created_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("id", name="pk_wb_turn_usage"),
    Index("ix_wb_turn_usage_owner", "owner_id", "created_at"),
    Index("ix_wb_turn_usage_session", "chat_session_id", "turn_seq"),
)

# The text of each user and assistant message, for searching message text
# (``workbench/message_index.py``): filled after every turn from the ledger, which stays the
# truth. ``body_folded`` is ``catalog.fold(body)``, what search matches; on PostgreSQL a trigram
# index (``MESSAGE_TRGM_INDEX``, made by the migration when pg_trgm can be installed) serves it.
MESSAGE_TRGM_INDEX = "ix_wb_message_texts_body_trgm"
message_texts = Table(
    "wb_message_texts",
    metadata,
    chat_session_column("wb_message_texts"),
    Column("seq", BigInteger, nullable=False),  # the message's seq in the session's ledger
    Column("role", String(16), nullable=False),
    Column("body", Text, nullable=False),
    Column("body_folded", Text, nullable=False),
    Column("created_at", UtcDateTime, nullable=False),
    PrimaryKeyConstraint("chat_session_id", "seq", name="pk_wb_message_texts"),
)

# How long each tool call of a turn ran, as its ``tool_call_end`` frame said: the ledger keeps
# the call and its result but not the time between them.
tool_durations = Table(
    "wb_tool_durations",
    metadata,
    chat_session_column("wb_tool_durations"),
    Column("turn_seq", BigInteger, nullable=False),  # the ledger seq of the turn's user message
    Column("call_id", String(255), nullable=False),
    Column("duration_ms", BigInteger, nullable=False),
    PrimaryKeyConstraint("chat_session_id", "turn_seq", "call_id", name="pk_wb_tool_durations"),
)
