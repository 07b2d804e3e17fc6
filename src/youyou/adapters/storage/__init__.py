"""Session storage on SQLite and PostgreSQL, and the session leases kept next to it."""

from youyou.adapters.storage.lease import LeaseState, SqlSessionLeases

__all__ = ["LeaseState", "SqlSessionLeases"]
