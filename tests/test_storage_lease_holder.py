"""Lease holders: named so that a lease left by an ended process of this machine is taken over
at once, on a real SQLite file and a real PostgreSQL database."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest

from youyou.adapters.storage.lease_holder import holder_has_ended, local_holder
from youyou.adapters.storage.sql import SqlSessionStorage

TTL = 600.0  # long enough that nothing in these tests expires


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SqlSessionStorage]:
    opened = await SqlSessionStorage.open(db_url)
    yield opened
    await opened.close()


def ended_pid() -> int:
    """The pid of a process of this machine that has run and been reaped."""
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def holder_of(pid: int, host: str | None = None, program: str = "youyou serve") -> str:
    return f"{program}, pid {pid} on {host or socket.gethostname()} (ab12cd34)"


def test_a_holder_names_the_program_this_process_and_this_machine() -> None:
    host = socket.gethostname()
    assert local_holder("youyou chat") == f"youyou chat, pid {os.getpid()} on {host}"
    assert (
        local_holder("youyou serve", "ab12") == f"youyou serve, pid {os.getpid()} on {host} (ab12)"
    )


@pytest.mark.parametrize("program", ["youyou chat", "youyou serve"])
def test_only_an_ended_process_of_this_machine_has_ended(program: str) -> None:
    assert holder_has_ended(holder_of(ended_pid(), program=program))
    assert holder_has_ended(holder_of(ended_pid(), program=program).removesuffix(" (ab12cd34)"))
    assert not holder_has_ended(local_holder(program))  # this process runs
    assert not holder_has_ended(holder_of(1, program=program))  # alive (init), maybe not ours
    assert not holder_has_ended(holder_of(ended_pid(), "another-host", program))
    assert not holder_has_ended("someone else's tool, pid 1 on nowhere")
    assert not holder_has_ended("a")


async def test_the_lease_of_an_ended_holder_is_taken_over_at_once(
    storage: SqlSessionStorage,
) -> None:
    leases = storage.leases()
    gone = holder_of(ended_pid())
    assert await leases.acquire("s", gone, TTL) is None
    assert await leases.holder("s") is None, "an ended process writes nothing"
    me = local_holder("youyou chat")
    assert await leases.acquire("s", me, TTL) is None
    assert await leases.holder("s") == me


async def test_a_live_or_remote_holder_keeps_its_lease(storage: SqlSessionStorage) -> None:
    leases = storage.leases()
    live = local_holder("youyou serve", "other-life")
    remote = holder_of(ended_pid(), "another-host")
    assert await leases.acquire("live", live, TTL) is None
    assert await leases.acquire("remote", remote, TTL) is None
    me = local_holder("youyou chat")
    assert await leases.acquire("live", me, TTL) == live
    assert await leases.acquire("remote", me, TTL) == remote
    assert (await leases.holder("live"), await leases.holder("remote")) == (live, remote)


async def test_two_processes_taking_over_one_lease_get_one_writer(
    storage: SqlSessionStorage,
) -> None:
    leases = storage.leases()
    assert await leases.acquire("s", holder_of(ended_pid()), TTL) is None
    first, second = local_holder("youyou serve", "first"), local_holder("youyou serve", "second")
    answers = await asyncio.gather(
        leases.acquire("s", first, TTL), leases.acquire("s", second, TTL)
    )
    winner = await leases.holder("s")
    assert winner in (first, second)
    assert sorted(answers, key=str) == sorted([None, winner], key=str)
