"""Alembic environment: migrate through the connection ``engine.migrate`` hands over."""

from __future__ import annotations

from alembic import context

from youyou.workbench.store.tables import VERSION_TABLE, metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run workbench migrations through youyou.workbench.store.WorkbenchStore")

context.configure(
    connection=connection,
    target_metadata=metadata,
    version_table=VERSION_TABLE,
    render_as_batch=True,  # SQLite can only ALTER through table copies
)
with context.begin_transaction():
    context.run_migrations()
