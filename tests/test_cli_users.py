"""``youyou users …`` and ``youyou groups …``: the real executable on the database of a real
workbench (SQLite and PostgreSQL), whose HTTP API shows each change at once."""

from __future__ import annotations

import io
import subprocess
from collections.abc import Callable

import httpx
import pexpect

from server_kit import COMMAND, Workbench

StartWorkbench = Callable[..., Workbench]
PASSWORD = "correct horse"
TIMEOUT_S = 60


def youyou(wb: Workbench, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``youyou ARGS --config <the server's config>`` beside the running server."""
    return subprocess.run(
        [*COMMAND, *args, "--config", str(wb.server.config)],
        input=stdin,
        capture_output=True,
        text=True,
        env=wb.server.env(),
        cwd=str(wb.server.root),
        timeout=TIMEOUT_S,
        check=False,
    )


def login(wb: Workbench, username: str, password: str = PASSWORD) -> httpx.Response:
    with httpx.Client(base_url=wb.url, timeout=30) as http:
        return http.post("/auth/login", json={"username": username, "password": password})


def test_users_are_added_from_stdin_and_listed_with_their_roles(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    added = youyou(wb, "users", "add", "Carol", "--admin", stdin=PASSWORD + "\n")
    assert added.returncode == 0, added.stderr
    assert "added Carol (admin" in added.stdout
    assert youyou(wb, "users", "add", "dave", stdin=PASSWORD + "\n").returncode == 0
    taken = youyou(wb, "users", "add", "CAROL", stdin=PASSWORD + "\n")
    weak = youyou(wb, "users", "add", "erin", stdin="password1\n")
    bad_name = youyou(wb, "users", "add", "no spaces", stdin=PASSWORD + "\n")
    assert taken.returncode == 1 and "already taken" in taken.stderr
    assert weak.returncode == 1 and "too common" in weak.stderr
    assert bad_name.returncode == 1 and "username:" in bad_name.stderr
    listed = youyou(wb, "users", "list")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[1]: line for line in listed.stdout.splitlines() if "│" in line[:2]}
    assert "admin" in rows["Carol"] and "member" in rows["dave"]
    assert "erin" not in listed.stdout
    signed_in = login(wb, "carol")
    assert signed_in.status_code == 200
    assert signed_in.json()["data"]["user"]["role"] == "admin"
    assert login(wb, "dave").json()["data"]["user"]["role"] == "member"


def test_the_password_prompt_asks_twice_and_never_echoes(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    child = pexpect.spawn(
        COMMAND[0],
        [*COMMAND[1:], "users", "add", "fay", "--config", str(wb.server.config)],
        env=wb.server.env(),
        encoding="utf-8",
        timeout=TIMEOUT_S,
    )
    child.logfile_read = io.StringIO()
    child.expect("Password: ")
    child.sendline("tidal-quartz-ferry")
    child.expect("Repeat the password: ")
    child.sendline("tidal-quartz-ferry")
    child.expect("added fay")
    child.expect(pexpect.EOF)
    assert "tidal-quartz-ferry" not in child.logfile_read.getvalue()
    assert login(wb, "fay", "tidal-quartz-ferry").status_code == 200
    mismatch = pexpect.spawn(
        COMMAND[0],
        [*COMMAND[1:], "users", "add", "gus", "--config", str(wb.server.config)],
        env=wb.server.env(),
        encoding="utf-8",
        timeout=TIMEOUT_S,
    )
    mismatch.expect("Password: ")
    mismatch.sendline("tidal-quartz-ferry")
    mismatch.expect("Repeat the password: ")
    mismatch.sendline("something-else-9")
    mismatch.expect("the two passwords differ")
    mismatch.expect(pexpect.EOF)
    mismatch.close()
    assert mismatch.exitstatus == 2
    assert login(wb, "gus", "tidal-quartz-ferry").status_code == 401


def test_disable_enable_reset_and_roles_take_effect_on_the_running_server(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    heidi = wb.user("heidi")
    assert youyou(wb, "users", "disable", "heidi").stdout.strip() == "disabled heidi"
    assert heidi.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"
    refused = login(wb, "heidi")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "AUTH_ACCOUNT_DISABLED"
    assert login(wb, "heidi", "not-her-password").status_code == 401  # no hint without it
    assert youyou(wb, "users", "enable", "heidi").returncode == 0
    assert login(wb, "heidi").status_code == 200
    assert youyou(wb, "users", "promote", "heidi").stdout.strip() == "heidi is an administrator"
    assert login(wb, "heidi").json()["data"]["user"]["role"] == "admin"
    assert youyou(wb, "users", "demote", "heidi").returncode == 0
    assert login(wb, "heidi").json()["data"]["user"]["role"] == "member"
    again = wb.signed_in("heidi")
    reset = youyou(wb, "users", "reset-password", "heidi", stdin="river-lantern-42\n")
    assert reset.returncode == 0, reset.stderr
    assert again.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"
    assert login(wb, "heidi").status_code == 401
    assert login(wb, "heidi", "river-lantern-42").status_code == 200
    unknown = youyou(wb, "users", "disable", "nobody")
    assert unknown.returncode == 1 and "no account 'nobody'" in unknown.stderr


def test_delete_removes_the_account_and_all_it_owns_and_counts_it(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    ivan, judy = wb.user("ivan"), wb.user("judy")
    for api in (ivan, judy):
        api.send(api.new_session()["id"], "hello")
    ivan.data("POST", "/chat/prompts", 201, json={"label": "mine", "content": "be brief"})
    deleted = youyou(wb, "users", "delete", "ivan", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    line = deleted.stdout.replace("\n", " ")
    assert "deleted ivan:" in line
    assert "1 sessions" in line and "1 tokens" in line and "2 prompts" in line  # + default
    assert "0 knowledge documents" in line and "0 memories" in line
    assert ivan.error("GET", "/auth/me", 401)["code"] == "AUTH_UNAUTHENTICATED"
    assert login(wb, "ivan").status_code == 401
    assert len(judy.data("GET", "/chat/sessions")["items"]) == 1  # nobody else's data
    wb.user("ivan")  # the name is free again, for a new account that inherits nothing
    assert "ivan" in youyou(wb, "users", "list").stdout


def test_groups_are_made_and_filled_from_the_command_line(start_workbench: StartWorkbench) -> None:
    wb = start_workbench()
    wb.user("kate")
    assert youyou(wb, "groups", "add", "SRE").stdout.strip() == "added group SRE"
    taken = youyou(wb, "groups", "add", "sre")
    assert taken.returncode == 1 and "group with this name" in taken.stderr
    assert youyou(wb, "groups", "add-member", "sre", "KATE").stdout.strip() == "kate added to SRE"
    assert youyou(wb, "groups", "list").stdout.strip() == "SRE: kate"
    assert "SRE" in youyou(wb, "users", "list").stdout
    assert youyou(wb, "groups", "remove-member", "SRE", "kate").returncode == 0
    assert youyou(wb, "groups", "list").stdout.strip() == "SRE: (no members)"
    assert youyou(wb, "groups", "delete", "SRE").returncode == 0
    assert youyou(wb, "groups", "list").stdout.strip() == "no groups"
