"""Password hashing at the configured cost: new hashes use it, hashes of another cost still
sign in and are redone at that sign-in, and an unknown user costs a hash of the same cost."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from pydantic import ValidationError

from server_kit import Workbench
from youyou.config import ServerSettings
from youyou.workbench.auth import Passwords
from youyou.workbench.store import WorkbenchStore

StartWorkbench = Callable[..., Workbench]


def cost(memory_kib: int, iterations: int) -> ServerSettings:
    return ServerSettings(password_hash_memory_kib=memory_kib, password_hash_iterations=iterations)


def test_a_hash_carries_the_configured_cost_and_verifies_only_its_password() -> None:
    passwords = Passwords(cost(8192, 2))
    digest = passwords.hash("tidal-quartz-ferry")
    assert digest.startswith("$argon2id$v=19$m=8192,t=2,p=4$")
    assert passwords.verify(digest, "tidal-quartz-ferry")
    assert not passwords.verify(digest, "tidal-quartz-ferr")
    assert not passwords.verify("not a hash", "tidal-quartz-ferry")
    assert not passwords.verify(None, "tidal-quartz-ferry")  # no user: checked, never valid


def test_a_hash_of_another_cost_verifies_and_is_outdated() -> None:
    old = Passwords(cost(65536, 3)).hash("tidal-quartz-ferry")
    cheap = Passwords(cost(8192, 1))
    assert cheap.verify(old, "tidal-quartz-ferry")
    assert cheap.outdated(old)
    assert not cheap.outdated(cheap.hash("tidal-quartz-ferry"))


def test_the_cost_has_a_floor() -> None:
    with pytest.raises(ValidationError, match="password_hash_memory_kib"):
        cost(4096, 1)
    with pytest.raises(ValidationError, match="password_hash_iterations"):
        cost(8192, 0)
    assert ServerSettings().password_hash_memory_kib == 65536
    assert ServerSettings().password_hash_iterations == 3


def stored_hash(db_url: str, username: str) -> str:
    async def read() -> str:
        store = await WorkbenchStore.open(db_url)
        try:
            user = await store.user_by_name(username)
        finally:
            await store.close()
        assert user is not None and user.password_hash is not None
        return user.password_hash

    return asyncio.run(read())


def test_a_sign_in_redoes_a_hash_made_at_another_cost(
    start_workbench: StartWorkbench, workbench_db: str
) -> None:
    first = start_workbench(extra="[server]\npassword_hash_memory_kib = 9216")
    first.user("gwen")
    assert "$m=9216,t=3,p=4$" in stored_hash(workbench_db, "gwen")
    first.server.kill()

    second = start_workbench()  # the suite's cheap cost: 8 MiB, 1 pass
    signed_in = second.signed_in("gwen")
    assert signed_in.data("GET", "/auth/me")["username"] == "gwen"
    redone = stored_hash(workbench_db, "gwen")
    assert "$m=8192,t=1,p=4$" in redone
    second.signed_in("gwen")  # the new hash signs in; it is not redone again
    assert stored_hash(workbench_db, "gwen") == redone
