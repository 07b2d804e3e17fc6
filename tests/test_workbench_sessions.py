"""Managing sessions over real HTTP on SQLite and PostgreSQL: rename, delete, and picking up
sessions made elsewhere (``?since=``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import select

from fakes.openai_server import OpenAIStream
from server_kit import Api, StreamingSend, Workbench, ledger_id_of
from youyou.adapters.storage.engine import create_engine
from youyou.adapters.storage.tables import session_leases

StartWorkbench = Callable[..., Workbench]


def test_rename_trims_keeps_the_list_order_and_survives_the_next_turn(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("rita")
    older = api.new_session(title="older")["id"]
    newer = api.new_session(title="newer")["id"]
    renamed = api.data("PATCH", f"/chat/sessions/{older}", json={"title": "  db-7 disk full  "})
    assert renamed["id"] == older and renamed["title"] == "db-7 disk full"
    listed = api.data("GET", "/chat/sessions")["items"]
    assert [s["id"] for s in listed] == [newer, older]  # renaming is not activity
    assert listed[1]["title"] == "db-7 disk full"
    found = api.data("GET", "/chat/sessions", params={"q": "DISK FULL"})["items"]
    assert [s["id"] for s in found] == [older]
    api.send(older, "what now?")
    assert api.data("GET", f"/chat/sessions/{older}")["title"] == "db-7 disk full"


def test_a_rename_during_a_running_turn_is_not_undone_by_its_end(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    wb.model.enqueue(OpenAIStream().text("thinking").delay(1.5).text(" done").finish().reply())
    api = wb.user("ruth")
    sid = api.new_session()["id"]  # untitled: the turn would name it from the question
    running = StreamingSend(api, sid, "why is the queue growing?")
    running.wait_for("text_delta")
    api.data("PATCH", f"/chat/sessions/{sid}", json={"title": "queue incident"})
    assert running.join()[-1].event == "turn_complete"
    assert api.data("GET", f"/chat/sessions/{sid}")["title"] == "queue incident"


def test_an_untitled_session_still_takes_its_title_from_the_first_question(
    start_workbench: StartWorkbench,
) -> None:
    api = start_workbench().user("rosa")
    sid = api.new_session()["id"]
    api.send(sid, "payments latency p99 above 2s")
    assert api.data("GET", f"/chat/sessions/{sid}")["title"] == "payments latency p99 above 2s"


def test_rename_refuses_an_empty_or_too_long_title_in_the_asked_language(
    start_workbench: StartWorkbench,
) -> None:
    api = start_workbench().user("rene")
    sid = api.new_session(title="keep me")["id"]
    english = {"Accept-Language": "en"}
    for body in ({"title": "   "}, {"title": ""}, {"title": "x" * 201}, {}, {"title": 5}):
        error = api.error("PATCH", f"/chat/sessions/{sid}", 400, json=body, headers=english)
        assert error["code"] == "VALIDATION_INVALID_ARGUMENT", body
        assert "title" in error["message"], error
    empty = api.error("PATCH", f"/chat/sessions/{sid}", 400, json={"title": " "}, headers=english)
    assert "at least 1 character" in empty["message"]
    assert api.data("PATCH", f"/chat/sessions/{sid}", json={"title": "x" * 200})["title"] == (
        "x" * 200
    )


def test_rename_and_delete_of_another_users_or_an_unknown_session_are_refused(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    owner, other = wb.user("sara"), wb.user("seth")
    sid = owner.new_session(title="mine")["id"]
    assert other.error("PATCH", f"/chat/sessions/{sid}", 403, json={"title": "x"})["code"] == (
        "FORBIDDEN"
    )
    assert other.error("DELETE", f"/chat/sessions/{sid}", 403)["code"] == "FORBIDDEN"
    assert owner.data("GET", f"/chat/sessions/{sid}")["title"] == "mine"
    for method, body in (("PATCH", {"title": "x"}), ("DELETE", None)):
        error = owner.error(method, "/chat/sessions/no-such-session", 404, json=body)
        assert error["code"] == "NOT_FOUND"
    owner.data("DELETE", f"/chat/sessions/{sid}", 204)
    assert owner.error("PATCH", f"/chat/sessions/{sid}", 404, json={"title": "x"})["code"] == (
        "NOT_FOUND"
    )
    assert owner.data("GET", "/chat/sessions")["items"] == []


def test_ui_settings_serve_the_configured_values_without_a_token(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench(
        extra=(
            '[compaction]\nmode = "context_70_percent"\nevery_n_turns = 12\n'
            "context_percent = 0.6\nhard_limit = 0.9\n\n"
            "[server]\nmax_body_bytes = 2000000\nmax_message_chars = 5000\n"
            'registration = "closed"\n'
        )
    )
    settings = Api(wb.url).data("GET", "/ui/settings")
    assert settings["registration"] is False
    assert settings["memory"] == {
        "defaultMode": "context_70_percent",
        "modes": ["every_30_turns", "context_70_percent", "manual"],
        "everyNTurns": 12,
        "contextPercent": 60.0,
        "hardLimitPercent": 90.0,
    }
    assert settings["password"] == {
        "minLength": 8,
        "maxLength": 256,
        "rejectsCommon": True,
        "usernameAroundChars": 4,
    }
    lengths, uploads = settings["lengths"], settings["uploads"]
    assert (lengths["promptLabelMaxChars"], lengths["sessionTitleMaxChars"]) == (160, 200)
    assert lengths["promptContentMaxChars"] == 12_000
    assert (uploads["maxBodyBytes"], uploads["maxMessageChars"]) == (2_000_000, 5000)
    assert uploads["maxOtherBodyBytes"] == 1024 * 1024
    assert uploads["skillMaxBytes"] == 65_536


def test_ui_settings_limits_are_the_ones_the_server_enforces(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench(extra="[server]\nmax_message_chars = 300\n")
    settings = Api(wb.url).data("GET", "/ui/settings")
    api = wb.user("uma")
    limit = settings["lengths"]["promptLabelMaxChars"]
    too_long = {"label": "x" * (limit + 1), "content": "c"}
    api.error("POST", "/chat/prompts", 400, json=too_long)
    api.data("POST", "/chat/prompts", 201, json={"label": "x" * limit, "content": "c"})
    sid = api.new_session()["id"]
    chars = settings["uploads"]["maxMessageChars"]
    error = api.error(
        "POST", f"/chat/sessions/{sid}/messages", 413, json={"content": "y" * (chars + 1)}
    )
    assert error["code"] == "PAYLOAD_TOO_LARGE"
    short = "z" * (settings["password"]["minLength"] - 1)
    refused = Api(wb.url).error(
        "POST", "/auth/register", 400, json={"username": "vic", "password": short}
    )
    assert "password" in refused["message"]


def test_since_picks_up_sessions_created_or_used_elsewhere(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    here = wb.user("sina")
    elsewhere = Api(str(here.http.base_url), here.token)  # a second tab of the same user
    first = here.new_session(title="first")
    watermark = first["updatedAt"]
    assert [
        s["id"] for s in here.data("GET", "/chat/sessions", params={"since": watermark})["items"]
    ] == [first["id"]]  # inclusive: a client drops what it has by id
    created = elsewhere.new_session(title="made in another tab")["id"]
    picked = here.data("GET", "/chat/sessions", params={"since": watermark})["items"]
    assert [s["id"] for s in picked] == [created, first["id"]]
    newest = picked[0]["updatedAt"]
    assert [
        s["id"] for s in here.data("GET", "/chat/sessions", params={"since": newest})["items"]
    ] == [created]
    elsewhere.send(first["id"], "still there?")
    again = here.data("GET", "/chat/sessions", params={"since": newest})["items"]
    assert again[0]["id"] == first["id"] and again[0]["messageCount"] == 2
    naive = newest.replace("Z", "").split("+")[0]  # no zone: read as UTC
    assert first["id"] in [
        s["id"] for s in here.data("GET", "/chat/sessions", params={"since": naive})["items"]
    ]
    other = wb.user("tess")
    assert other.data("GET", "/chat/sessions", params={"since": watermark})["items"] == []
    bad = here.error("GET", "/chat/sessions", 400, params={"since": "yesterday"})
    assert bad["code"] == "VALIDATION_INVALID_ARGUMENT" and "since" in bad["message"]


async def _lease_time_left_s(db_url: str, chat_id: str) -> float:
    """Seconds until the lease of the chat session's ledger expires, read from the database."""
    ledger = await ledger_id_of(db_url, chat_id)
    engine = create_engine(db_url)
    try:
        async with engine.connect() as conn:
            expires = await conn.scalar(
                select(session_leases.c.expires_at).where(session_leases.c.session_id == ledger)
            )
    finally:
        await engine.dispose()
    assert expires is not None, "no lease while the turn runs"
    return float((expires - datetime.now(UTC)).total_seconds())


def test_a_running_turn_holds_its_lease_for_the_database_lease_time(
    start_workbench: StartWorkbench, workbench_db: str
) -> None:
    """``[database] lease_ttl_s`` is the server's time to live too (a crashed server's lease
    of another machine blocks the session that long)."""
    wb = start_workbench(extra="[database]\nlease_ttl_s = 600")
    wb.model.enqueue(OpenAIStream().text("thinking").delay(1.5).text(" done").finish().reply())
    api = wb.user("lena")
    sid = api.new_session()["id"]
    running = StreamingSend(api, sid, "is the lease long?")
    running.wait_for("text_delta")
    assert 590 < asyncio.run(_lease_time_left_s(workbench_db, sid)) <= 600
    assert running.join()[-1].event == "turn_complete"
