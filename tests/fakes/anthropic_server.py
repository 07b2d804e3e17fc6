"""A fake Anthropic Messages endpoint speaking the streaming wire format.

Events follow the public API: ``message_start``, then per content block
``content_block_start`` / ``content_block_delta`` (``text_delta``, ``thinking_delta``,
``signature_delta``, ``input_json_delta``) / ``content_block_stop``, then ``message_delta``
(stop reason and output usage) and ``message_stop``; ``ping`` and ``error`` events too.
"""

from __future__ import annotations

import json
from typing import Any, Self

from fakes.http_server import SSE, FakeHTTPServer, JSONReply, StreamBuilder, StreamReply


class FakeAnthropicServer(FakeHTTPServer):
    route = "/v1/messages"

    @property
    def base_url(self) -> str:
        return self.url


class AnthropicStream(StreamBuilder):
    """Builds one streamed message; each content method adds one complete block."""

    def __init__(
        self, model: str = "claude-fake", input_tokens: int = 10, cache_read_tokens: int = 0
    ) -> None:
        super().__init__()
        self._index = 0
        self._event(
            "message_start",
            message={
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": model,
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": input_tokens,
                    "output_tokens": 1,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": cache_read_tokens,
                },
            },
        )

    def _event(self, name: str, **body: Any) -> Self:
        self._parts.append(SSE(json.dumps({"type": name, **body}), event=name))
        return self

    def _block(self, start: dict[str, Any], deltas: list[dict[str, Any]], delay_s: float) -> Self:
        index = self._index
        self._index += 1
        self._event("content_block_start", index=index, content_block=start)
        for i, delta in enumerate(deltas):
            if i and delay_s:
                self.delay(delay_s)
            self._event("content_block_delta", index=index, delta=delta)
        return self._event("content_block_stop", index=index)

    def text(self, *pieces: str, delay_s: float = 0.0) -> Self:
        deltas = [{"type": "text_delta", "text": p} for p in pieces]
        return self._block({"type": "text", "text": ""}, deltas, delay_s)

    def thinking(self, *pieces: str) -> Self:
        deltas: list[dict[str, Any]] = [{"type": "thinking_delta", "thinking": p} for p in pieces]
        deltas.append({"type": "signature_delta", "signature": "sig-fake"})
        return self._block({"type": "thinking", "thinking": "", "signature": ""}, deltas, 0.0)

    def tool_use(self, call_id: str, name: str, *json_pieces: str) -> Self:
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in ("", *json_pieces)]
        return self._block(
            {"type": "tool_use", "id": call_id, "name": name, "input": {}}, deltas, 0.0
        )

    def ping(self) -> Self:
        return self._event("ping")

    def stop(self, reason: str = "end_turn", output_tokens: int = 5) -> Self:
        self._event(
            "message_delta",
            delta={"stop_reason": reason, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        )
        return self._event("message_stop")

    def error(self, error_type: str, message: str) -> Self:
        return self._event("error", error={"type": error_type, "message": message})


def text_reply(*pieces: str, input_tokens: int = 10, output_tokens: int = 5) -> StreamReply:
    return (
        AnthropicStream(input_tokens=input_tokens)
        .text(*pieces)
        .stop(output_tokens=output_tokens)
        .reply()
    )


def anthropic_error(status: int, error_type: str, message: str) -> JSONReply:
    return JSONReply(
        status,
        {"type": "error", "error": {"type": error_type, "message": message}},
        headers={"request-id": "req_fake"},
    )
