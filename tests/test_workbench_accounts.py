"""Accounts on a shared server, over real HTTP against ``youyou serve`` on SQLite and
PostgreSQL: access lists bound to the accounts that exist at start, limits per client address
on logins and sign-ups, the bounded hashing gate, the password policy, password change,
sign-out everywhere and the purge of dead token rows."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from collections.abc import Callable

import httpx
import pytest
from sqlalchemy import select

from mcp_kit import DEMO
from server_kit import Api, Workbench, with_accounts
from youyou.adapters.storage.engine import create_engine
from youyou.workbench.store.tables import tokens, users

StartWorkbench = Callable[..., Workbench]
PASSWORD = "correct horse"


def demo_server(users: list[str] | None = None, groups: list[str] | None = None) -> str:
    return (
        '[[mcp_servers]]\nid = "demo"\n'
        f"command = {json.dumps(sys.executable)}\n"
        f'args = [{json.dumps(str(DEMO))}, "stdio"]\n'
        + (f"users = {json.dumps(users)}\n" if users is not None else "")
        + (f"groups = {json.dumps(groups)}\n" if groups is not None else "")
    )


def offered_tools(wb: Workbench, api: Api) -> set[str]:
    api.send(api.new_session()["id"], "hello")
    return {t["function"]["name"] for t in wb.model.requests[-1].json.get("tools", [])}


def from_address(wb: Workbench, address: str) -> httpx.Client:
    """A client whose connections leave from ``address`` (any 127.x.y.z on Linux), so the
    server sees another client address."""
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=wb.url, transport=transport, timeout=30)


def login(http: httpx.Client, username: str, password: str = PASSWORD) -> httpx.Response:
    return http.post("/auth/login", json={"username": username, "password": password})


def register(http: httpx.Client, username: str, password: str = PASSWORD) -> httpx.Response:
    return http.post("/auth/register", json={"username": username, "password": password})


def error_code(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


# -- access lists ------------------------------------------------------------------------------


def test_access_lists_with_open_registration_refuse_to_start(
    start_workbench: StartWorkbench,
) -> None:
    with pytest.raises(RuntimeError) as refused:
        start_workbench(extra=demo_server(["carol"]))
    assert "INVALID_CONFIG" in str(refused.value)
    assert "mcp_servers.demo" in str(refused.value)
    assert "open_registration_with_access_lists" in str(refused.value)


def test_access_lists_bind_to_the_accounts_that_existed_at_start(
    start_workbench: StartWorkbench,
) -> None:
    """Listed as ``Carol``, the account ``carol`` gets the tools; ``dave``, listed but signed
    up only after the server started, gets nothing, nor does a look-alike of carol."""
    acknowledged = "[server]\nopen_registration_with_access_lists = true\n"
    wb = with_accounts(
        start_workbench, ("carol",), extra=acknowledged + demo_server(["Carol", "dave"])
    )
    assert "dave has no account" in wb.server.log()
    with httpx.Client(base_url=wb.url) as anonymous:
        assert error_code(register(anonymous, "CAROL")) == "AUTH_USERNAME_TAKEN"
    dave = wb.user("dave")
    assert not {name for name in offered_tools(wb, dave) if name.startswith("demo__")}
    assert "demo__echo" in offered_tools(wb, wb.signed_in("carol"))


def demo_tools(wb: Workbench, api: Api) -> set[str]:
    return {name for name in offered_tools(wb, api) if name.startswith("demo__")}


def test_a_listed_name_grants_nothing_once_its_account_is_deleted(
    start_workbench: StartWorkbench,
) -> None:
    """Access is bound to the account's id: whoever registers the name of a deleted account
    gets none of its tools."""
    keys = '[server]\nadmins = ["root"]\nopen_registration_with_access_lists = true\n'
    wb = with_accounts(start_workbench, ("root", "carol"), extra=keys + demo_server(["carol"]))
    root, carol = wb.signed_in("root"), wb.signed_in("carol")
    assert "demo__echo" in demo_tools(wb, carol)
    carol_id = carol.data("GET", "/auth/me")["id"]
    root.data("DELETE", f"/admin/users/{carol_id}")
    assert demo_tools(wb, wb.user("carol")) == set()


def test_groups_grant_access_by_membership_read_on_every_send(
    start_workbench: StartWorkbench,
) -> None:
    keys = '[server]\nadmins = ["root"]\nopen_registration_with_access_lists = true\n'
    runbooks = '[[knowledge]]\nid = "ops"\npath = "runbooks"\ngroups = ["SRE"]\n'
    wb = with_accounts(
        start_workbench, ("root",), extra=keys + demo_server(groups=["sre"]) + runbooks
    )
    assert "knowledge.ops.users" not in wb.server.log()  # groups are not names to bind
    root, erin = wb.signed_in("root"), wb.user("erin")
    assert demo_tools(wb, erin) == set()
    group = root.data("POST", "/admin/groups", 201, json={"name": "Sre"})
    erin_id = erin.data("GET", "/auth/me")["id"]
    root.data("PUT", f"/admin/groups/{group['id']}/members/{erin_id}", 204)
    assert "demo__echo" in demo_tools(wb, erin)
    root.data("DELETE", f"/admin/groups/{group['id']}/members/{erin_id}", 204)
    assert demo_tools(wb, erin) == set()


# -- limits per client address and on hashing --------------------------------------------------


def test_one_address_cannot_try_a_password_on_every_username(
    start_workbench: StartWorkbench,
) -> None:
    limits = "[server]\nlogin_attempts = 3\naddress_login_attempts = 4\nlogin_window_s = 120"
    wb = start_workbench(extra=limits)
    wb.user("erin")
    with from_address(wb, "127.0.0.1") as attacker:
        codes = [login(attacker, f"user{i}", "guess-1234").status_code for i in range(4)]
        limited = login(attacker, "erin")
    assert codes == [401, 401, 401, 401]
    assert limited.status_code == 429 and error_code(limited) == "AUTH_RATE_LIMITED"
    assert 1 <= int(limited.headers["retry-after"]) <= 121
    with from_address(wb, "127.0.0.2") as colleague:
        assert login(colleague, "erin").status_code == 200


def test_sign_ups_are_limited_per_address(start_workbench: StartWorkbench) -> None:
    wb = start_workbench(extra="[server]\nregistration_attempts = 2")
    with from_address(wb, "127.0.0.1") as first:
        weak = register(first, "frank", "password1")  # refused before any hash: not counted
        codes = [register(first, name).status_code for name in ("frank", "grace")]
        limited = register(first, "heidi")
    assert weak.status_code == 400 and error_code(weak) == "AUTH_PASSWORD_REJECTED"
    assert codes == [201, 201]
    assert limited.status_code == 429 and error_code(limited) == "AUTH_RATE_LIMITED"
    assert int(limited.headers["retry-after"]) >= 1
    with from_address(wb, "127.0.0.2") as other:
        assert register(other, "heidi").status_code == 201


def logins_together(wb: Workbench, username: str, addresses: list[str]) -> list[httpx.Response]:
    """One login per address, all sent at the same moment."""
    together = threading.Barrier(len(addresses))
    responses: list[httpx.Response] = []

    def sign_in(address: str) -> None:
        with from_address(wb, address) as http:
            together.wait()
            responses.append(login(http, username))

    threads = [threading.Thread(target=sign_in, args=(a,)) for a in addresses]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(responses) == len(addresses)
    return responses


DEFAULT_HASHING = "password_hash_memory_kib = 65536\npassword_hash_iterations = 3"
"""The default cost (the suite's servers hash cheaply): logins sent together overlap in the
hashing gate."""


def test_a_flood_of_sign_ins_is_refused_at_once_beyond_the_hashing_queue(
    start_workbench: StartWorkbench,
) -> None:
    """One hash at a time and nobody waiting: of logins arriving together, those that find
    the slot taken get 503 with Retry-After instead of queuing."""
    wb = start_workbench(extra=f"[server]\nhash_concurrency = 1\nhash_queue = 0\n{DEFAULT_HASHING}")
    wb.user("ivan")
    responses = logins_together(wb, "ivan", [f"127.0.1.{i}" for i in range(1, 9)])
    statuses = sorted(r.status_code for r in responses)
    assert set(statuses) == {200, 503}, statuses
    busy = [r for r in responses if r.status_code == 503]
    assert all(error_code(r) == "AUTH_BUSY" and r.headers["retry-after"] == "1" for r in busy)


def test_one_address_cannot_fill_the_hashing_queue(start_workbench: StartWorkbench) -> None:
    """Two sign-ins per address hash or wait at a time; the rest of a burst from that address
    gets 429 at once, leaving the queue to the others."""
    keys = f"[server]\nhash_concurrency = 1\nhash_queue = 16\n{DEFAULT_HASHING}"
    wb = start_workbench(extra=keys)
    wb.user("judd")
    responses = logins_together(wb, "judd", ["127.0.1.9"] * 6)
    statuses = sorted(r.status_code for r in responses)
    assert 200 in statuses and 429 in statuses and 503 not in statuses, statuses
    limited = [r for r in responses if r.status_code == 429]
    assert all(error_code(r) == "AUTH_RATE_LIMITED" for r in limited)
    assert all(r.headers["retry-after"] == "1" for r in limited)


def test_sign_ins_refused_for_a_busy_gate_count_against_the_address(
    start_workbench: StartWorkbench,
) -> None:
    """A burst from one address that the gate turns away uses up that address's attempts, so
    it stops reaching the gate; other addresses sign in as before."""
    keys = (
        "[server]\nhash_concurrency = 1\nhash_queue = 0\naddress_login_attempts = 3\n"
        f"{DEFAULT_HASHING}"
    )
    wb = start_workbench(extra=keys)
    wb.user("kurt")
    burst = logins_together(wb, "kurt", ["127.0.1.20"] * 8)
    assert sum(r.status_code in (429, 503) for r in burst) >= 3
    with from_address(wb, "127.0.1.20") as flooder:
        after = login(flooder, "kurt")
    assert after.status_code == 429 and error_code(after) == "AUTH_RATE_LIMITED"
    assert int(after.headers["retry-after"]) > 1  # the login window, not the gate's second
    with from_address(wb, "127.0.1.21") as colleague:
        assert login(colleague, "kurt").status_code == 200


# -- password policy, change and sign-out everywhere -------------------------------------------


def test_sign_up_refuses_common_passwords_and_the_username(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    with httpx.Client(base_url=wb.url, headers={"Accept-Language": "en"}) as http:
        common = register(http, "judy", "Password1")
        near_name = register(http, "judy", "Judy2024")
        fine = register(http, "judy", "tidal-quartz-ferry")
    for refused in (common, near_name):
        assert refused.status_code == 400 and error_code(refused) == "AUTH_PASSWORD_REJECTED"
        assert "too common or too close to the username" in refused.json()["error"]["message"]
    assert fine.status_code == 201


def test_password_change_needs_the_current_one_and_signs_out_other_devices(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    here = wb.user("kate")
    elsewhere = wb.signed_in("kate")
    wrong = here.error(
        "POST",
        "/auth/password",
        401,
        json={"currentPassword": "not-it-at-all", "newPassword": "river-lantern-42"},
    )
    assert wrong["code"] == "AUTH_INVALID_CREDENTIALS"
    weak = here.error(
        "POST",
        "/auth/password",
        400,
        json={"currentPassword": PASSWORD, "newPassword": "sunshine"},
    )
    assert weak["code"] == "AUTH_PASSWORD_REJECTED"
    here.data(
        "POST",
        "/auth/password",
        204,
        json={"currentPassword": PASSWORD, "newPassword": "river-lantern-42"},
    )
    assert here.data("GET", "/auth/me")["username"] == "kate"
    assert elsewhere.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"
    with httpx.Client(base_url=wb.url) as anonymous:
        assert login(anonymous, "kate").status_code == 401
        assert login(anonymous, "kate", "river-lantern-42").status_code == 200


def test_sign_out_everywhere_revokes_every_token_of_the_user_only(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    laptop, phone, other = wb.user("liam"), wb.signed_in("liam"), wb.user("mia")
    laptop.data("POST", "/auth/logout-all", 204)
    assert laptop.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"
    assert phone.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"
    assert other.data("GET", "/auth/me")["username"] == "mia"


# -- dead token rows ----------------------------------------------------------------------------


async def token_rows(url: str, username: str) -> int:
    engine = create_engine(url)
    try:
        query = (
            select(tokens.c.token_hash)
            .select_from(tokens.join(users, tokens.c.user_id == users.c.id))
            .where(users.c.username == username)
        )
        async with engine.connect() as conn:
            return len((await conn.execute(query)).all())
    finally:
        await engine.dispose()


def test_revoked_and_expired_token_rows_are_purged_at_login(
    start_workbench: StartWorkbench, workbench_db: str
) -> None:
    wb = start_workbench(extra="[server]\ntoken_ttl_hours = 0.0005")  # 1.8 s
    first = wb.user("noah")  # token 1: expires soon
    second = wb.signed_in("noah")  # token 2: revoked now
    second.data("POST", "/auth/logout", 204)
    assert asyncio.run(token_rows(workbench_db, "noah")) == 2
    time.sleep(2)
    assert first.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"
    third = wb.signed_in("noah")
    assert third.data("GET", "/auth/me")["username"] == "noah"
    assert asyncio.run(token_rows(workbench_db, "noah")) == 1
