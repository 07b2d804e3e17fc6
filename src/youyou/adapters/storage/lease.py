"""``SessionLeases`` in the session storage database: the ``session_leases`` table.

Every write is one transaction (``BEGIN IMMEDIATE`` on SQLite, so writers queue on the database
lock; a row lock on PostgreSQL), which makes acquiring atomic across processes. Times come from
each process's own clock, so the processes sharing a database need roughly synchronized clocks
and a time to live well above their skew.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import cache, partial
from typing import Any

from sqlalchemy import Insert, bindparam, case, delete, or_, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from youyou.adapters.storage.engine import SqliteConnection, transaction
from youyou.adapters.storage.lease_holder import holder_has_ended
from youyou.adapters.storage.sqlite_driver import compiled_statement
from youyou.adapters.storage.tables import session_leases, sessions, upsert_statement
from youyou.ports.session_lease import LeaseState

__all__ = ["RELEASE", "LeaseState", "SqlSessionLeases"]

_lease = session_leases.c


def _utc_now() -> datetime:
    return datetime.now(UTC)


@cache
def _acquire(postgresql_dialect: bool, seeing: bool = False) -> Insert:
    """Built once per dialect (``excluded`` is costly to build), parameters bound when run;
    ``seeing`` also returns the session's last ledger seq (NULL without a ledger row)."""
    insert = upsert_statement("postgresql" if postgresql_dialect else "sqlite", session_leases)
    stmt = insert.values(
        session_id=bindparam("session_id"),
        holder=bindparam("holder"),
        acquired_at=bindparam("now"),
        expires_at=bindparam("expires_at"),
        cancel_requested=False,
    )
    ours = _lease.holder == stmt.excluded.holder
    upsert = stmt.on_conflict_do_update(
        index_elements=[_lease.session_id],
        set_={
            "holder": stmt.excluded.holder,
            # a refresh by the same holder keeps the time it first took the lease
            "acquired_at": case((ours, _lease.acquired_at), else_=stmt.excluded.acquired_at),
            "expires_at": stmt.excluded.expires_at,
            "cancel_requested": False,
        },
        where=or_(ours, _lease.expires_at <= bindparam("now")),
    )
    if not seeing:
        return upsert.returning(_lease.holder)
    last_seq = select(sessions.c.last_seq).where(sessions.c.id == bindparam("session_id"))
    return upsert.returning(_lease.holder, last_seq.scalar_subquery())


_HOLDER = select(_lease.holder).where(_lease.session_id == bindparam("session_id"))
# Also run by ``SqlSessionStorage.append_event_releasing``, in the append's transaction.
RELEASE = delete(session_leases).where(
    _lease.session_id == bindparam("session_id"), _lease.holder == bindparam("holder")
)


class SqlSessionLeases:
    """Usually built by ``SqlSessionStorage.leases()``, to share its connection pool.

    ``clock`` is replaceable so that tests expire leases without sleeping.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        clock: Callable[[], datetime] = _utc_now,
        beside_ledger: bool = False,
        sqlite: SqliteConnection | None = None,
    ) -> None:
        """``beside_ledger``: the session ledger is in this database too (the storage's
        ``leases()``), so ``acquire_seeing`` reads its last seq. ``sqlite``: the storage's
        held SQLite connection, over which taking and giving back a lease each go to the
        driver in one trip (``sqlite_driver.py``), as ledger appends do."""
        self._engine = engine
        self._postgresql = engine.dialect.name == "postgresql"
        self._clock = clock
        self._beside_ledger = beside_ledger
        self._sqlite = sqlite

    @property
    def engine(self) -> AsyncEngine:
        """The database the leases are kept in (see ``SqlSessionStorage.keeps_leases``)."""
        return self._engine

    async def acquire(self, session_id: str, holder: str, ttl_s: float) -> str | None:
        """Take the lease if free, expired, already ours, or left by an ended process of this
        machine (see ``lease_holder``): None, else the live holder. Two processes taking over
        the same lease meet at the second acquire, which only one of them wins."""
        return (await self.acquire_seeing(session_id, holder, ttl_s))[0]

    async def acquire_seeing(
        self, session_id: str, holder: str, ttl_s: float
    ) -> tuple[str | None, int | None]:
        """``acquire``, and the session's last ledger seq read by the same statement when the
        lease is taken and the ledger is in this database (``LedgerLeases``)."""
        taken = await self._acquire(session_id, holder, ttl_s)
        other, _ = taken
        if other is not None and holder_has_ended(other):
            await self.release(session_id, other)
            taken = await self._acquire(session_id, holder, ttl_s)
        return taken

    async def _acquire(
        self, session_id: str, holder: str, ttl_s: float
    ) -> tuple[str | None, int | None]:
        now = self._clock()
        values = {
            "session_id": session_id,
            "holder": holder,
            "now": now,
            "expires_at": now + timedelta(seconds=ttl_s),
        }
        action = f"acquiring the lease of session {session_id!r}"
        statement = _acquire(self._postgresql, self._beside_ledger)
        if self._sqlite is not None:
            dialect = self._engine.dialect

            def on_driver(connection: sqlite3.Connection) -> tuple[bool, Any]:
                taken = compiled_statement(statement, dialect).run_on(connection, values)
                if taken:
                    return True, tuple(taken[0])
                current = compiled_statement(_HOLDER, dialect).run_on(connection, values)
                return False, current[0][0] if current else None

            was_taken, found = await self._sqlite.write(action, on_driver)
            if was_taken:
                return None, _last_seq(found, self._beside_ledger)
            current = found
        else:
            async with transaction(self._engine, action, write=True) as conn:
                # A row comes back when the lease is taken; none when a live one is another's.
                taken = (await conn.execute(statement, values)).first()
                if taken is not None:
                    return None, _last_seq(tuple(taken), self._beside_ledger)
                current = await conn.scalar(_HOLDER, {"session_id": session_id})
        return (None if current == holder else current), None

    async def renew(self, session_id: str, holder: str, ttl_s: float) -> LeaseState:
        """Extend our lease; LOST once another holder took it over or it was released."""
        expires_at = self._clock() + timedelta(seconds=ttl_s)
        stmt = (
            update(session_leases)
            .where(_lease.session_id == session_id, _lease.holder == holder)
            .values(expires_at=expires_at)
            .returning(_lease.cancel_requested)
        )
        action = f"renewing the lease of session {session_id!r}"
        async with transaction(self._engine, action, write=True) as conn:
            cancel_requested = (await conn.execute(stmt)).scalar_one_or_none()
        if cancel_requested is None:
            return LeaseState.LOST
        return LeaseState.CANCEL_REQUESTED if cancel_requested else LeaseState.HELD

    async def renew_all(self, holder: str, ttl_s: float) -> dict[str, LeaseState]:
        """One statement for all of a process's leases, so polling costs the same for one
        running turn as for hundreds; like ``renew``, an expired lease nobody took over is
        still ours."""
        stmt = (
            update(session_leases)
            .where(_lease.holder == holder)
            .values(expires_at=self._clock() + timedelta(seconds=ttl_s))
            .returning(_lease.session_id, _lease.cancel_requested)
        )
        action = "renewing the leases of this process"
        async with transaction(self._engine, action, write=True) as conn:
            rows = (await conn.execute(stmt)).all()
        return {
            session_id: LeaseState.CANCEL_REQUESTED if cancel else LeaseState.HELD
            for session_id, cancel in rows
        }

    async def request_cancel(self, session_id: str) -> bool:
        """Flag a live lease; its holder sees CANCEL_REQUESTED on its next renewal."""
        stmt = (
            update(session_leases)
            .where(_lease.session_id == session_id, _lease.expires_at > self._clock())
            .values(cancel_requested=True)
        )
        action = f"requesting to cancel session {session_id!r}"
        async with transaction(self._engine, action, write=True) as conn:
            return (await conn.execute(stmt)).rowcount == 1

    async def release(self, session_id: str, holder: str) -> None:
        """Delete the lease only if ``holder`` holds it: after an expiry it may be another's."""
        values = {"session_id": session_id, "holder": holder}
        action = f"releasing the lease of session {session_id!r}"
        if self._sqlite is not None:
            run = compiled_statement(RELEASE, self._engine.dialect).run_on
            await self._sqlite.write(action, partial(run, values=values))
            return
        async with transaction(self._engine, action, write=True) as conn:
            await conn.execute(RELEASE, values)

    async def holder(self, session_id: str) -> str | None:
        """The live holder; an expired lease counts as free even before anyone takes it, and
        so does one whose holder is an ended process of this machine (see ``acquire``)."""
        stmt = select(_lease.holder).where(
            _lease.session_id == session_id, _lease.expires_at > self._clock()
        )
        action = f"reading the lease of session {session_id!r}"
        async with transaction(self._engine, action) as conn:
            live: str | None = await conn.scalar(stmt)
        return None if live is None or holder_has_ended(live) else live


def _last_seq(taken: tuple[Any, ...], beside_ledger: bool) -> int | None:
    """The last seq a taking ``_acquire`` row holds (see ``acquire_seeing``)."""
    if not beside_ledger or taken[1] is None:
        return None
    return int(taken[1])
