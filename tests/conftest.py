"""Shared fixtures: a real SQLite file and a real, throw-away PostgreSQL database.

PostgreSQL tests need a server (``YOUYOU_TEST_PG_URL``, default the local one). Without it they
are skipped on a developer machine but fail loudly in CI (``CI=true``).
"""

from __future__ import annotations

import asyncio
import compileall
import os
import re
import shutil
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest

import youyou
from fakes.chat import close_tracked
from fakes.openai_server import FakeOpenAIServer
from port_kit import free_port
from server_kit import InProcessServer, Server, Workbench, answer_ok, write_config
from youyou.adapters.memory import open_memory_storage
from youyou.adapters.storage.engine import upgrade_database
from youyou.ports.tracer import Tracer
from youyou.workbench.store import WorkbenchStore

PG_ADMIN_DSN = os.environ.get("YOUYOU_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def pytest_configure(config: pytest.Config) -> None:
    """Byte-compile YouYou and the tests' helper programs once, in the main process: the suite
    starts hundreds of ``youyou`` processes, and where ``PYTHONDONTWRITEBYTECODE`` is set each
    of them would otherwise compile every module it imports from source."""
    if not hasattr(config, "workerinput"):  # the xdist controller or a run without workers
        tests = Path(__file__).parent
        compileall.compile_dir(Path(youyou.__file__).parent, quiet=1)
        compileall.compile_dir(tests, quiet=1, maxlevels=1, rx=re.compile(r"[/\\]js[/\\]"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test module's ``shared_setup(params)`` names the costly set-up a test shares with
    others of the module (None: none): those tests are moved next to each other, within the
    module's places, so that an xdist worker, which takes a run of consecutive tests, builds
    each set-up once. Other modules keep pytest's order."""
    places: dict[Any, list[int]] = {}
    for index, item in enumerate(items):
        module = getattr(item, "module", None)
        if module is not None and hasattr(module, "shared_setup"):
            places.setdefault(module, []).append(index)
    for module, indexes in places.items():

        def key(item: pytest.Item, module: Any = module) -> tuple[bool, str]:
            callspec = getattr(item, "callspec", None)
            shared = module.shared_setup(dict(callspec.params) if callspec else {})
            return shared is None, repr(shared)

        moved = sorted((items[index] for index in indexes), key=key)  # stable
        for index, item in zip(indexes, moved, strict=True):
            items[index] = item


async def _pg_available() -> bool:
    try:
        conn = await asyncpg.connect(PG_ADMIN_DSN, timeout=3)
    except (OSError, asyncpg.PostgresError):
        return False
    await conn.close()
    return True


@pytest.fixture
async def close_providers() -> AsyncIterator[None]:
    """Release the connection pools of SDK providers the test built (``fakes.chat.track``)."""
    yield
    await close_tracked()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'youyou.db'}"


async def new_pg_database(template: str | None = None) -> str:
    """A fresh PostgreSQL database (``drop_pg_database`` removes it), empty or a copy of
    ``template``; skipped without a server on a developer machine, a failure in CI."""
    if not await _pg_available():
        if os.environ.get("CI"):
            pytest.fail(f"PostgreSQL is required in CI but unreachable at {PG_ADMIN_DSN}")
        pytest.skip("PostgreSQL not reachable (set YOUYOU_TEST_PG_DSN)")
    name = f"youyou_t_{uuid.uuid4().hex[:12]}"
    copied = f' TEMPLATE "{template}"' if template else ""
    admin = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"{copied}')
    finally:
        await admin.close()
    base = PG_ADMIN_DSN.rsplit("/", 1)[0].replace("postgresql://", "postgresql+asyncpg://")
    return f"{base}/{name}"


async def drop_pg_database(url: str) -> None:
    admin = await asyncpg.connect(PG_ADMIN_DSN)
    try:
        await admin.execute(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)')
    finally:
        await admin.close()


@pytest.fixture
async def pg_url() -> AsyncIterator[str]:
    """A fresh PostgreSQL database for one test, dropped afterwards."""
    url = await new_pg_database()
    yield url
    await drop_pg_database(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs a test once on SQLite and once on PostgreSQL."""
    fixture = "sqlite_url" if request.param == "sqlite" else "pg_url"
    yield request.getfixturevalue(fixture)


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[WorkbenchStore]:
    """The workbench store, migrated, on each backend."""
    opened = await WorkbenchStore.open(db_url)
    yield opened
    await opened.close()


@pytest.fixture
def fake_model() -> Iterator[FakeOpenAIServer]:
    """The fake OpenAI endpoint; anything not scripted gets a short ``ok`` answer."""
    with FakeOpenAIServer() as fake:
        fake.default = answer_ok
        yield fake


async def migrate_for_workbench(url: str) -> None:
    """The schema a workbench keeps: the ledger's, the long-term memory's and its own."""
    await upgrade_database(url)
    await (await open_memory_storage(url)).close()
    await (await WorkbenchStore.open(url)).close()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file migrated once per test process, copied for each workbench under test:
    a copy takes a millisecond, migrating a new file hundreds."""
    path = tmp_path_factory.mktemp("template") / "youyou.db"
    asyncio.run(migrate_for_workbench(f"sqlite+aiosqlite:///{path}"))
    assert not path.with_name("youyou.db-wal").exists()  # all of it is in the file
    return path


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    """A PostgreSQL database migrated once per test process, the template of each workbench's
    database (``CREATE DATABASE … TEMPLATE``)."""
    url = asyncio.run(new_pg_database())
    asyncio.run(migrate_for_workbench(url))
    yield url.rsplit("/", 1)[1]
    asyncio.run(drop_pg_database(url))


@pytest.fixture(params=["sqlite", "postgresql"])
def workbench_db(request: pytest.FixtureRequest) -> str:
    """The database of a workbench under test, its schema in place as ``youyou serve`` leaves
    it (starting a server migrates the rest): the API suite runs on both."""
    fixture = "migrated_sqlite_url" if request.param == "sqlite" else "migrated_pg_url"
    url: str = request.getfixturevalue(fixture)
    return url


@pytest.fixture
def migrated_sqlite_url(tmp_path: Path, sqlite_template: Path) -> str:
    """``sqlite_url``'s file, migrated for a workbench."""
    path = tmp_path / "youyou.db"
    shutil.copyfile(sqlite_template, path)
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture
async def migrated_pg_url(pg_template: str) -> AsyncIterator[str]:
    """A fresh PostgreSQL database migrated for a workbench, dropped afterwards."""
    url = await new_pg_database(pg_template)
    yield url
    await drop_pg_database(url)


@pytest.fixture
def start_workbench(
    tmp_path: Path, fake_model: FakeOpenAIServer, workbench_db: str
) -> Iterator[Callable[..., Workbench]]:
    """``start_workbench(context_window=…, extra="[server]\\n…")`` → a running server: in this
    process, or ``youyou serve`` in a subprocess when given command-line arguments or
    ``process=True`` (signals, exit codes, the process's own log)."""
    started: list[Workbench] = []

    def start(
        *args: str, process: bool = False, tracer: Tracer | None = None, **config: Any
    ) -> Workbench:
        root = tmp_path / f"wb{len(started)}"
        root.mkdir()
        path = write_config(root, workbench_db, fake_model.base_url, **config)
        server: Server | InProcessServer
        if args or process:
            server = Server(root, path, free_port()).start(*args)
        else:
            server = InProcessServer(root, path, free_port(), tracer=tracer).start()
        workbench = Workbench(server, fake_model)
        started.append(workbench)
        return workbench

    yield start
    for workbench in started:
        workbench.close()
        workbench.server.kill()
