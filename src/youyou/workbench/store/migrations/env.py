"""Alembic environment of the workbench chain (see ``engine.run_alembic_environment``)."""

from youyou.adapters.storage.engine import run_alembic_environment
from youyou.workbench.store.tables import VERSION_TABLE, metadata

run_alembic_environment(metadata, VERSION_TABLE, "youyou.workbench.store.WorkbenchStore")
