"""Managing sessions over real HTTP on SQLite and PostgreSQL: rename, delete, and picking up
sessions made elsewhere (``?since=``)."""

from __future__ import annotations

from collections.abc import Callable

from fakes.openai_server import OpenAIStream
from server_kit import StreamingSend, Workbench

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
