"""``WorkbenchStore``: the workbench's tables, next to the kernel's ledger in one database."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from youyou.adapters.storage.engine import create_engine, migrate
from youyou.workbench.store.accounts import AccountQueries
from youyou.workbench.store.approvals import ApprovalQueries
from youyou.workbench.store.assets import AssetQueries
from youyou.workbench.store.chat_sessions import ChatSessionQueries
from youyou.workbench.store.groups import GroupQueries
from youyou.workbench.store.identities import IdentityQueries
from youyou.workbench.store.message_texts import MessageTextQueries
from youyou.workbench.store.sending import SendQueries
from youyou.workbench.store.tables import VERSION_TABLE
from youyou.workbench.store.turn_end import TurnEndQueries
from youyou.workbench.store.turn_frames import TurnFrameQueries
from youyou.workbench.store.turn_records import TurnRecordQueries
from youyou.workbench.store.usage import UsageQueries
from youyou.workbench.store.users import UserTokenQueries

MIGRATIONS = Path(__file__).with_name("migrations")
# The workbench chain's own advisory lock: it migrates independently of the kernel's chain.
LOCK_KEY = "youyou.workbench"


async def migrate_workbench(engine: AsyncEngine, revision: str = "head") -> None:
    await migrate(
        engine,
        revision,
        script_location=MIGRATIONS,
        version_table=VERSION_TABLE,
        lock_key=LOCK_KEY,
    )


class WorkbenchStore(
    UserTokenQueries,
    AccountQueries,
    GroupQueries,
    IdentityQueries,
    AssetQueries,
    ChatSessionQueries,
    TurnFrameQueries,
    ApprovalQueries,
    UsageQueries,
    MessageTextQueries,
    TurnRecordQueries,
    TurnEndQueries,
    SendQueries,
):
    """Open with ``await WorkbenchStore.open(url)``; it migrates the workbench schema first."""

    @classmethod
    async def open(cls, url: str) -> WorkbenchStore:
        engine = create_engine(url)
        try:
            return await cls.on(engine, owns_engine=True)
        except BaseException:
            await engine.dispose()
            raise

    @classmethod
    async def on(cls, engine: AsyncEngine, *, owns_engine: bool = False) -> WorkbenchStore:
        """On the session storage's engine: one connection pool per process, and on SQLite
        one set of connections queueing for the single write lock instead of two."""
        await migrate_workbench(engine)
        return cls(engine, owns_engine=owns_engine)

    async def close(self) -> None:
        await self._one_trip.close()
        if self._owns_engine:
            await self._engine.dispose()

    async def ping(self) -> None:
        """Readiness: raises STORAGE_ERROR when the database does not answer."""
        async with self._transaction("pinging the database") as conn:
            await conn.execute(select(1))
