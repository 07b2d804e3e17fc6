"""Alembic migrations of the workbench schema (run by ``WorkbenchStore.open``)."""
