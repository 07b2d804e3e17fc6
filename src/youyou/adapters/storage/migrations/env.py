"""Alembic environment of the session storage chain (see ``engine.run_alembic_environment``)."""

from youyou.adapters.storage.engine import run_alembic_environment
from youyou.adapters.storage.tables import VERSION_TABLE, metadata

run_alembic_environment(metadata, VERSION_TABLE, "youyou.adapters.storage.engine.migrate")
