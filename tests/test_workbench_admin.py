"""``/admin`` over real HTTP against the workbench on SQLite and PostgreSQL: administrators
only, disabling that stops tokens at once (also in another server process), deleting an
account with everything it owns, invites, and the registration modes."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakes.openai_server import FakeOpenAIServer
from port_kit import free_port
from server_kit import Api, Server, Workbench, start_together, write_config
from youyou.adapters.memory import open_memory_storage
from youyou.domain.memory import Memory
from youyou.workbench.store import ADMIN, WorkbenchStore

StartWorkbench = Callable[..., Workbench]
PASSWORD = "correct horse"
# "root" is made an administrator at start; others may still sign up (a test server).
ADMINS = '[server]\nadmins = ["Root"]\nopen_registration_with_access_lists = true\n'
SKILL = b"---\nname: disk-full\ndescription: Free disk space\n---\nRun df -h.\n"


def with_admin(start: StartWorkbench, **config: Any) -> tuple[Workbench, Api]:
    """A server whose ``root`` account, made before it started, is an administrator."""
    signup = start()
    signup.user("root")
    signup.close()
    assert signup.server.stop() == 0
    wb = start(extra=ADMINS + config.pop("extra", ""), **config)
    return wb, wb.signed_in("root")


def login(url: str, username: str, password: str = PASSWORD) -> httpx.Response:
    with httpx.Client(base_url=url, timeout=30) as http:
        return http.post("/auth/login", json={"username": username, "password": password})


def register(url: str, username: str, **body: Any) -> httpx.Response:
    with httpx.Client(base_url=url, timeout=30) as http:
        return http.post(
            "/auth/register", json={"username": username, "password": PASSWORD, **body}
        )


ADMIN_ROUTES = [
    ("GET", "/admin/users"),
    ("POST", "/admin/users"),
    ("POST", "/admin/users/x/disable"),
    ("POST", "/admin/users/x/enable"),
    ("POST", "/admin/users/x/promote"),
    ("POST", "/admin/users/x/demote"),
    ("POST", "/admin/users/x/password"),
    ("DELETE", "/admin/users/x"),
    ("POST", "/admin/invites"),
    ("GET", "/admin/groups"),
    ("POST", "/admin/groups"),
    ("DELETE", "/admin/groups/x"),
    ("PUT", "/admin/groups/x/members/y"),
    ("DELETE", "/admin/groups/x/members/y"),
]


def test_admin_routes_are_for_administrators_only(start_workbench: StartWorkbench) -> None:
    wb, root = with_admin(start_workbench)
    member = wb.user("mallory")
    anonymous = Api(wb.url)
    for method, path in ADMIN_ROUTES:
        assert member.error(method, path, 403, json={})["code"] == "FORBIDDEN", path
        assert anonymous.error(method, path, 401, json={})["code"] == "AUTH_UNAUTHENTICATED"
    assert member.data("GET", "/auth/me")["role"] == "member"
    assert root.data("GET", "/auth/me")["role"] == "admin"
    assert "server.admins bound to accounts: root" in wb.server.log()
    anonymous.close()


def test_an_administrator_manages_accounts(start_workbench: StartWorkbench) -> None:
    wb, root = with_admin(start_workbench)
    made = root.data("POST", "/admin/users", 201, json={"username": "Nina", "password": PASSWORD})
    assert (made["username"], made["role"], made["disabled"]) == ("Nina", "member", False)
    assert root.error("POST", "/admin/users", 409, json={"username": "nina", "password": PASSWORD})[
        "code"
    ] == ("AUTH_USERNAME_TAKEN")
    weak = root.error("POST", "/admin/users", 400, json={"username": "x", "password": "password"})
    assert weak["code"] == "AUTH_PASSWORD_REJECTED"
    nina = wb.signed_in("Nina")
    listed = {u["username"]: u for u in root.data("GET", "/admin/users")}
    assert listed["root"]["role"] == "admin" and listed["Nina"]["role"] == "member"
    nina_id = made["id"]

    disabled = root.data("POST", f"/admin/users/{nina_id}/disable")
    assert disabled["disabled"] is True
    assert nina.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"
    refused = login(wb.url, "nina")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "AUTH_ACCOUNT_DISABLED"
    assert root.data("POST", f"/admin/users/{nina_id}/enable")["disabled"] is False
    assert login(wb.url, "nina").status_code == 200

    assert root.data("POST", f"/admin/users/{nina_id}/promote")["role"] == "admin"
    nina = wb.signed_in("Nina")
    assert nina.data("GET", "/admin/users")  # now an administrator
    assert root.data("POST", f"/admin/users/{nina_id}/demote")["role"] == "member"
    assert nina.error("GET", "/admin/users", 403)["code"] == "FORBIDDEN"

    root.data("POST", f"/admin/users/{nina_id}/password", 204, json={"password": "river-42-lamp"})
    assert nina.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"
    assert login(wb.url, "nina").status_code == 401
    assert login(wb.url, "nina", "river-42-lamp").status_code == 200

    root_id = root.data("GET", "/auth/me")["id"]
    for action in ("disable", "demote"):
        own = root.error("POST", f"/admin/users/{root_id}/{action}", 409)
        assert own["code"] == "ADMIN_OWN_ACCOUNT"
    assert root.error("DELETE", f"/admin/users/{root_id}", 409)["code"] == "ADMIN_OWN_ACCOUNT"
    assert root.error("POST", "/admin/users/nobody/disable", 404)["code"] == "NOT_FOUND"


async def remember(url: str, namespace: str, content: str) -> None:
    """A long-term memory as an extraction would store it."""
    storage = await open_memory_storage(url)
    try:
        stamp = datetime.now(UTC)
        await storage.upsert(
            Memory(
                id=content, namespace=namespace, content=content, created_at=stamp, updated_at=stamp
            )
        )
    finally:
        await storage.engine.dispose()


def test_deleting_an_account_removes_everything_it_owns_in_one_go(
    start_workbench: StartWorkbench, workbench_db: str
) -> None:
    wb, root = with_admin(start_workbench, memory=True)
    olga, paul = wb.user("olga"), wb.user("paul")
    olga_id, paul_id = (api.data("GET", "/auth/me")["id"] for api in (olga, paul))
    for api in (olga, paul):
        api.send(api.new_session()["id"], "hello")
        api.data("POST", "/chat/knowledge", 201, json={"name": "db.md", "content": "# Db\nok"})
    olga.data("POST", "/chat/skills", 201, files={"file": ("SKILL.md", SKILL)})
    asyncio.run(remember(workbench_db, f"user:{olga_id}", "prefers short answers"))
    asyncio.run(remember(workbench_db, f"user:{paul_id}", "on call on Fridays"))
    group = root.data("POST", "/admin/groups", 201, json={"name": "sre"})
    root.data("PUT", f"/admin/groups/{group['id']}/members/{olga_id}", 204)
    assert [m["content"] for m in olga.data("GET", "/chat/memories")] == ["prefers short answers"]

    deleted = root.data("DELETE", f"/admin/users/{olga_id}")
    assert deleted["username"] == "olga"
    removed = deleted["removed"]
    assert removed["sessions"] == 1 and removed["ledgerEvents"] >= 3
    assert removed["prompts"] == 1  # the default prompt made on her first send
    assert (removed["skills"], removed["knowledgeDocuments"], removed["memories"]) == (1, 1, 1)
    assert (removed["tokens"], removed["groupMemberships"], removed["invites"]) == (1, 1, 0)
    assert olga.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"
    assert root.error("DELETE", f"/admin/users/{olga_id}", 404)["code"] == "NOT_FOUND"
    assert root.data("GET", "/admin/groups")[0]["memberIds"] == []
    # Nobody else's data went, and a newcomer under her name starts empty.
    assert len(paul.data("GET", "/chat/sessions")["items"]) == 1
    assert len(paul.data("GET", "/chat/knowledge")) == 1
    assert [m["content"] for m in paul.data("GET", "/chat/memories")] == ["on call on Fridays"]
    newcomer = wb.user("olga")
    assert newcomer.data("GET", "/chat/sessions")["items"] == []
    assert newcomer.data("GET", "/chat/memories") == []
    assert newcomer.data("GET", "/chat/knowledge") == []


def test_an_invite_admits_one_account(start_workbench: StartWorkbench) -> None:
    wb, root = with_admin(start_workbench, extra='registration = "invite"\n')
    assert Api(wb.url).data("GET", "/auth/settings") == {
        "registration": False,
        "registrationMode": "invite",
        "sso": False,
        "ssoName": None,
        "passwordLogin": True,
    }
    without = register(wb.url, "quinn")
    assert without.status_code == 403
    assert without.json()["error"]["code"] == "AUTH_INVITE_INVALID"
    invite = root.data("POST", "/admin/invites", 201, json={"expiresInHours": 1})
    assert invite["path"] == f"/#invite={invite['token']}"
    assert register(wb.url, "quinn", invite="not-a-real-token").status_code == 403
    assert register(wb.url, "quinn", invite=invite["token"]).status_code == 201
    again = register(wb.url, "rita", invite=invite["token"])
    assert again.status_code == 403 and again.json()["error"]["code"] == "AUTH_INVITE_INVALID"
    assert login(wb.url, "quinn").status_code == 200
    assert login(wb.url, "rita").status_code == 401
    default = root.data("POST", "/admin/invites", 201)
    assert datetime.fromisoformat(default["expiresAt"]) > datetime.fromisoformat(
        invite["expiresAt"]
    )  # 72 hours by default


def test_closed_registration_refuses_even_an_invite(start_workbench: StartWorkbench) -> None:
    wb, root = with_admin(start_workbench, extra='registration = "closed"\n')
    invite = root.data("POST", "/admin/invites", 201)
    refused = register(wb.url, "sam", invite=invite["token"])
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "AUTH_REGISTRATION_DISABLED"
    made = root.data("POST", "/admin/users", 201, json={"username": "sam", "password": PASSWORD})
    assert made["username"] == "sam" and login(wb.url, "sam").status_code == 200


@pytest.fixture
def two_servers(
    tmp_path: Path, migrated_pg_url: str, fake_model: FakeOpenAIServer
) -> Iterator[list[Server]]:
    """Two ``youyou serve`` processes on one PostgreSQL database."""
    servers = []
    for name in ("a", "b"):
        root = tmp_path / name
        root.mkdir()
        config = write_config(root, migrated_pg_url, fake_model.base_url)
        servers.append(Server(root, config, free_port()))
    start_together(*servers)
    yield servers
    for server in servers:
        server.kill()


def test_disabling_stops_tokens_at_once_in_every_process(
    two_servers: list[Server], migrated_pg_url: str
) -> None:
    """The administrator acts through one process; the user's token is refused by the other
    on its very next request, with no restart or cache to expire."""
    first, second = two_servers
    Api.signed_up(first.url, "root").close()
    tina = Api.signed_up(first.url, "tina")
    tina_there = Api(second.url, tina.token)
    assert tina_there.data("GET", "/auth/me")["username"] == "tina"
    session = tina_there.new_session()

    async def promote() -> None:  # what `youyou users promote root` does
        store = await WorkbenchStore.open(migrated_pg_url)
        try:
            user = await store.user_by_name("root")
            assert user is not None
            await store.set_role(user.id, ADMIN)
        finally:
            await store.close()

    asyncio.run(promote())
    root = Api(first.url, login(first.url, "root").json()["data"]["accessToken"])
    tina_id = tina.data("GET", "/auth/me")["id"]
    root.data("POST", f"/admin/users/{tina_id}/disable")
    assert tina_there.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"
    assert tina_there.error("GET", f"/chat/sessions/{session['id']}", 401)
    root.data("POST", f"/admin/users/{tina_id}/enable")
    tina_back = Api(second.url, login(second.url, "tina").json()["data"]["accessToken"])
    assert [s["id"] for s in tina_back.data("GET", "/chat/sessions")["items"]] == [session["id"]]
    for api in (root, tina, tina_there, tina_back):
        api.close()


def test_configured_admins_need_registration_that_is_not_open(
    start_workbench: StartWorkbench,
) -> None:
    """Anyone could register a listed administrator's name first."""
    with pytest.raises(RuntimeError) as refused:
        start_workbench(extra='[server]\nadmins = ["root"]\n')
    assert "INVALID_CONFIG" in str(refused.value) and "server.admins" in str(refused.value)
