"""A workbench whose model asks for the real MCP server ``mcp-server-time`` (every call of it
waits for approval) and then answers with what the tool said."""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

from fakes.http_server import RecordedRequest, Reply
from fakes.openai_server import OpenAIStream, text_reply
from server_kit import Api, StreamingSend

TOOL = "time__get_current_time"
ASK = "what time is it in Tokyo?"
DENIED = "the user denied it"


def time_server(approval: str = "always", timeout_s: float | None = None) -> str:
    """``[[mcp_servers]]`` for ``mcp-server-time`` (and ``[agent] approval_timeout_s``)."""
    agent = "" if timeout_s is None else f"[agent]\napproval_timeout_s = {timeout_s}\n\n"
    return (
        f'{agent}[[mcp_servers]]\nid = "time"\ncommand = "{sys.executable}"\n'
        'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n'
        f'approval = "{approval}"\n'
    )


def last_message(request: RecordedRequest) -> dict[str, Any]:
    message: dict[str, Any] = request.json["messages"][-1]
    return message


def asks_for_the_time(request: RecordedRequest) -> Reply:
    """A tool call (a fresh call id) for a user's question; ``tool said: <result>`` once the
    result is there."""
    message = last_message(request)
    if message["role"] == "tool":
        return text_reply(f"tool said: {message['content']}")
    call_id = f"call_{uuid.uuid4().hex[:10]}"
    arguments = json.dumps({"timezone": "Asia/Tokyo"})
    return OpenAIStream().tool_calls((call_id, TOOL, arguments)).finish("tool_calls").reply()


def waiting_turn(api: Api, session_id: str) -> tuple[StreamingSend, dict[str, Any]]:
    """A send whose turn now waits for approval, and the request's frame data."""
    turn = StreamingSend(api, session_id, ASK)
    return turn, turn.wait_for("tool_approval_requested", timeout_s=60).data


def decide(api: Api, session_id: str, call_id: str, expect: int = 200, **body: Any) -> Any:
    path = f"/chat/sessions/{session_id}/approvals/{call_id}"
    if expect == 200:
        return api.data("POST", path, json=body)
    return api.error("POST", path, expect, json=body)
