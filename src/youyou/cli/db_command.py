"""``youyou db upgrade`` and ``youyou db backup``: the configured database, without a server.

Both work while a server runs on the same database: migrations are serialized across
processes, and a backup is a consistent snapshot (``adapters.storage.backup``).
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from sqlalchemy.engine import make_url

from youyou.adapters.storage.backup import backup_database
from youyou.cli.process import EXIT_OK
from youyou.config import load_settings


async def run_db_upgrade(config: Path | None, console: Console | None = None) -> int:
    """Apply every pending migration, the workbench's tables included, so a deployment can
    migrate ahead of starting its servers."""
    url = load_settings(config).database.url  # a configuration error before the server loads
    from youyou.workbench.server import migrate_database

    await migrate_database(url)
    (console or Console()).print(f"database is up to date: {redacted(url)}", markup=False)
    return EXIT_OK


def run_db_backup(
    config: Path | None, target: Path, *, force: bool, console: Console | None = None
) -> int:
    """Write a consistent copy of the configured database to ``target``."""
    url = load_settings(config).database.url
    report = backup_database(url, target, force=force)
    restore = (
        "stop YouYou and copy it over the database file"
        if report.backend == "sqlite"
        else "pg_restore --clean --dbname URL FILE"
    )
    (console or Console(highlight=False)).print(
        f"backed up {redacted(url)} to {report.target} ({report.size_bytes:,} bytes)\n"
        f"to restore: {restore}",
        markup=False,
    )
    return EXIT_OK


def redacted(url: str) -> str:
    return make_url(url).render_as_string(hide_password=True)
