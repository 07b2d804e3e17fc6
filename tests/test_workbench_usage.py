"""Usage per turn through the real server on SQLite and PostgreSQL: tokens reported by the
fake OpenAI model, the cost from the configured prices, on each answer, in the session, summed
per user (``GET /usage``) and counted in ``/metrics``."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from fakes.openai_server import OpenAIStream, text_reply
from server_kit import MODEL, Api, Workbench

PRICES = "input_price_per_mtok = 2.5\noutput_price_per_mtok = 10.0"


def cost(tokens_in: int, tokens_out: int) -> float:
    return (tokens_in * 2.5 + tokens_out * 10.0) / 1_000_000


def two_turns(wb: Workbench, user: Api, session_id: str) -> list[dict[str, Any]]:
    """A plain answer (10 in, 5 out), then one with a tool call (20 + 40 in, 5 + 7 out); the
    ``usage`` of each ``turn_complete``."""
    wb.model.enqueue(
        text_reply("ok", prompt=10, completion=5),
        OpenAIStream()
        .tool_calls(("call_1", "get_current_time", "{}"))
        .finish("tool_calls")
        .usage(20, 5)
        .reply(),
        text_reply("It is late.", prompt=40, completion=7),
    )
    usages = []
    for question in ("hello", "what time is it?"):
        frames = user.send(session_id, question)
        assert frames[-1].event == "turn_complete"
        usages.append(frames[-1].data["usage"])
    return usages


def metric(wb: Workbench, name: str, **labels: str) -> float | None:
    text = httpx.get(f"{wb.url}/metrics").text
    wanted = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        match = re.fullmatch(rf"{name}\{{(.*)\}} (\S+)", line)
        if match and ",".join(sorted(match.group(1).split(","))) == wanted:
            return float(match.group(2))
    return None


def test_priced_usage_is_on_each_answer_the_session_the_user_and_the_metrics(
    start_workbench: Callable[..., Workbench],
) -> None:
    wb = start_workbench(model_keys=PRICES)
    alice, bob = wb.user("alice"), wb.user("bob")
    session_id = alice.new_session()["id"]
    plain, with_tool = two_turns(wb, alice, session_id)
    assert (plain["inputTokens"], plain["outputTokens"]) == (10, 5)
    assert plain["cost"] == pytest.approx(cost(10, 5))
    assert (with_tool["inputTokens"], with_tool["outputTokens"]) == (60, 12)
    assert with_tool["cost"] == pytest.approx(cost(60, 12))

    messages = alice.data("GET", f"/chat/sessions/{session_id}/messages")
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert [m["usage"] is None for m in messages] == [True, False, True, False]
    first, second = messages[1]["usage"], messages[3]["usage"]
    assert first == {
        "modelId": MODEL,
        "turns": 1,
        "inputTokens": 10,
        "outputTokens": 5,
        "cost": pytest.approx(cost(10, 5)),
    }
    assert (second["inputTokens"], second["outputTokens"]) == (60, 12)
    assert messages[3]["toolCalls"][0]["toolName"] == "get_current_time"

    session = alice.data("GET", f"/chat/sessions/{session_id}")
    total = {
        "modelId": None,
        "turns": 2,
        "inputTokens": 70,
        "outputTokens": 17,
        "cost": pytest.approx(cost(70, 17)),
    }
    assert session["usage"] == total
    listed = alice.data("GET", "/chat/sessions")["items"]
    assert listed[0]["usage"] is None  # lists leave it out

    assert alice.data("GET", "/usage") == {"total": total, "byModel": [{**total, "modelId": MODEL}]}
    nothing = {"modelId": None, "turns": 0, "inputTokens": 0, "outputTokens": 0, "cost": None}
    assert bob.data("GET", "/usage") == {"total": nothing, "byModel": []}

    # A deleted session's turns still count for its user.
    alice.data("DELETE", f"/chat/sessions/{session_id}", 204)
    assert alice.data("GET", "/usage")["total"] == total

    assert metric(wb, "youyou_tokens_total", direction="input", model=MODEL) == 70
    assert metric(wb, "youyou_tokens_total", direction="output", model=MODEL) == 17
    assert metric(wb, "youyou_cost_total", model=MODEL) == pytest.approx(cost(70, 17))


def test_without_prices_tokens_are_counted_and_cost_is_null(
    start_workbench: Callable[..., Workbench],
) -> None:
    wb = start_workbench()
    carol = wb.user("carol")
    session_id = carol.new_session()["id"]
    plain, with_tool = two_turns(wb, carol, session_id)
    assert plain["cost"] is None and with_tool["cost"] is None
    messages = carol.data("GET", f"/chat/sessions/{session_id}/messages")
    assert messages[3]["usage"]["cost"] is None
    assert messages[3]["usage"]["inputTokens"] == 60
    usage = carol.data("GET", "/usage")["total"]
    assert (usage["turns"], usage["inputTokens"], usage["cost"]) == (2, 70, None)
    assert metric(wb, "youyou_tokens_total", direction="output", model=MODEL) == 17
    assert metric(wb, "youyou_cost_total", model=MODEL) is None


def test_usage_needs_a_signed_in_user(start_workbench: Callable[..., Workbench]) -> None:
    wb = start_workbench()
    assert Api(wb.url).error("GET", "/usage", 401)["code"] == "AUTH_UNAUTHENTICATED"
