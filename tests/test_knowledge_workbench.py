"""Knowledge in the workbench over real HTTP, on SQLite and PostgreSQL: a user's uploads
(multipart or JSON), the shared ``[[knowledge]]`` sources a user may read, and
``search_knowledge`` on every send, checked in what the fake model received."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fakes.openai_server import OpenAIStream, text_reply
from server_kit import CLOSED_REGISTRATION, COMMAND, Api, Workbench, with_accounts

StartWorkbench = Callable[..., Workbench]

NOTES = "# Payments\n\n## Refund stuck\nRe-run the refund worker: `make refunds`.\n"


def ask_model_to_search(wb: Workbench, query: str) -> None:
    arguments = json.dumps({"query": query})
    wb.model.enqueue(
        OpenAIStream()
        .tool_calls(("call_1", "search_knowledge", arguments))
        .finish("tool_calls")
        .reply(),
        text_reply("Per the runbook, re-run the refund worker."),
    )


def searched(api: Api, wb: Workbench, query: str) -> tuple[str, str]:
    """(what the SSE showed of the result, what the model received in the next request)."""
    ask_model_to_search(wb, query)
    frames = api.send(api.new_session()["id"], f"look up {query}")
    [end] = [f for f in frames if f.event == "tool_call_end"]
    assert (end.data["toolName"], end.data["isError"]) == ("search_knowledge", False)
    tool_message = wb.model.requests[-1].json["messages"][-1]
    assert tool_message["role"] == "tool"
    shown: str = end.data["output"]
    received: str = tool_message["content"]
    return shown, received


def test_uploads_are_listed_replaced_deleted_and_owner_scoped(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    alice, bob = wb.user("alice"), wb.user("bob")
    files = {"file": ("payments.md", NOTES.encode(), "text/markdown")}
    uploaded: dict[str, Any] = alice.data("POST", "/chat/knowledge", 201, files=files)
    assert (uploaded["name"], uploaded["passageCount"]) == ("payments.md", 1)
    assert uploaded["sizeBytes"] == len(NOTES.encode())
    as_json = alice.data(
        "POST", "/chat/knowledge", 201, json={"name": "db.txt", "content": "restart postgres"}
    )
    listed = alice.data("GET", "/chat/knowledge")
    assert [d["name"] for d in listed] == ["db.txt", "payments.md"]
    assert bob.data("GET", "/chat/knowledge") == []

    replaced = alice.data(
        "POST", "/chat/knowledge", 201, json={"name": "db.txt", "content": "failover postgres"}
    )
    assert replaced["id"] == as_json["id"] and replaced["contentHash"] != as_json["contentHash"]
    assert bob.error("DELETE", f"/chat/knowledge/{as_json['id']}", 404)["code"] == "NOT_FOUND"
    alice.data("DELETE", f"/chat/knowledge/{as_json['id']}", 204)
    assert [d["name"] for d in alice.data("GET", "/chat/knowledge")] == ["payments.md"]

    for bad in (
        {"json": {"name": "x.md"}},
        {"json": {"name": "x.md", "content": "# only a heading"}},
        {"files": {"file": ("x.md", b"\xff\xfe", "text/markdown")}},
        {"files": {"other": ("x.md", b"text", "text/markdown")}},
    ):
        error = alice.error("POST", "/chat/knowledge", 400, **bad)
        assert error["code"] == "VALIDATION_INVALID_ARGUMENT"


def test_the_model_searches_own_uploads_and_allowed_sources_only(
    start_workbench: StartWorkbench, tmp_path: Path
) -> None:
    team, finance = tmp_path / "team", tmp_path / "finance"
    team.mkdir()
    finance.mkdir()
    (team / "refunds.md").write_text("# Refunds\nRefund worker owners: team payments.\n", "utf-8")
    (finance / "ledger.md").write_text("# Ledger\nRefund ledger is closed monthly.\n", "utf-8")
    sources = (
        f'[[knowledge]]\nid = "team"\npath = {json.dumps(str(team))}\n\n'
        f'[[knowledge]]\nid = "finance"\npath = {json.dumps(str(finance))}\n'
        'users = ["alice"]\n'
    )
    wb = with_accounts(start_workbench, ("alice", "bob"), extra=CLOSED_REGISTRATION + sources)
    indexed = subprocess.run(
        [*COMMAND, "kb", "index", "--config", str(wb.server.config)],
        capture_output=True,
        text=True,
        env=wb.server.env(),
        cwd=str(wb.server.root),
        timeout=60,
        check=False,
    )
    assert "2 added" in indexed.stdout, indexed.stdout + indexed.stderr
    alice, bob = wb.signed_in("alice"), wb.signed_in("bob")
    alice.data("POST", "/chat/knowledge", 201, json={"name": "payments.md", "content": NOTES})

    shown, received = searched(alice, wb, "refund worker")
    assert shown.startswith("3 found: [source: ") and "payments.md (uploaded)" in shown
    assert "[source: team/refunds.md § Refunds, lines 1–2]" in received
    assert "[source: finance/ledger.md § Ledger, lines 1–2]" in received
    assert "[source: payments.md (uploaded) § Payments > Refund stuck, lines 3–4]" in received
    assert "make refunds" in received and "Cite the [source: …] line" in received

    _, bob_received = searched(bob, wb, "refund worker")
    assert "[source: team/refunds.md § Refunds, lines 1–2]" in bob_received
    assert "finance/" not in bob_received and "payments.md" not in bob_received
    tools = [t["function"]["name"] for t in wb.model.requests[-1].json["tools"]]
    assert "search_knowledge" in tools


def test_a_document_of_one_huge_line_is_indexed_on_both_backends(
    start_workbench: StartWorkbench,
) -> None:
    """A minified log pasted as one 1.5 MB line: on PostgreSQL one passage of it outgrew the
    full-text vector (503); it is cut into passages that each cite that line."""
    wb = start_workbench()
    alice = wb.user("alice")
    line = " ".join(f"trace{i}" for i in range(150_000))
    document = alice.data(
        "POST", "/chat/knowledge", 201, json={"name": "dump.log", "content": f"{line}\n"}
    )
    assert document["passageCount"] > 100
