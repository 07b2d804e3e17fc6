"""Alembic migrations of the session storage schema (run by ``engine.migrate``)."""
