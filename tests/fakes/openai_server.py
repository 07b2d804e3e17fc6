"""A fake OpenAI Chat Completions endpoint speaking the streaming wire format.

Chunks look like the public API's: ``chat.completion.chunk`` objects, a first chunk carrying
the assistant role, tool calls streamed as fragments with an ``index``, a final usage chunk
with empty ``choices`` and ``data: [DONE]``. Errors are ``{"error": {...}}`` bodies.
"""

from __future__ import annotations

import json
from typing import Any, Self

from fakes.http_server import SSE, FakeHTTPServer, JSONReply, StreamBuilder, StreamReply


class FakeOpenAIServer(FakeHTTPServer):
    route = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"


class OpenAIStream(StreamBuilder):
    """Builds one streamed completion, chunk by chunk, in the order of the calls."""

    def __init__(self, model: str = "fake-model", completion_id: str = "chatcmpl-fake") -> None:
        super().__init__()
        self._model = model
        self._id = completion_id
        self._delta({"role": "assistant", "content": ""})

    def _chunk(self, choices: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> Self:
        body = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": 1_700_000_000,
            "model": self._model,
            "system_fingerprint": "fp_fake",
            "choices": choices,
        }
        if usage is not None:
            body["usage"] = usage
        self._parts.append(SSE(json.dumps(body)))
        return self

    def _delta(self, delta: dict[str, Any], finish_reason: str | None = None) -> Self:
        return self._chunk(
            [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]
        )

    def text(self, *pieces: str, delay_s: float = 0.0) -> Self:
        for i, piece in enumerate(pieces):
            if i and delay_s:
                self.delay(delay_s)
            self._delta({"content": piece})
        return self

    def reasoning(self, *pieces: str, field: str = "reasoning_content") -> Self:
        for piece in pieces:
            self._delta({field: piece})
        return self

    def tool_fragment(
        self,
        index: int | None,
        *,
        call_id: str | None = None,
        name: str | None = None,
        arguments: str = "",
    ) -> Self:
        """One fragment; the first one of a call carries its id, type and name.
        ``index=None`` leaves the field out, as a few servers do."""
        fragment: dict[str, Any] = {"function": {"arguments": arguments}}
        if index is not None:
            fragment["index"] = index
        if call_id is not None:
            fragment.update(id=call_id, type="function")
        if name is not None:
            fragment["function"]["name"] = name
        return self._delta({"tool_calls": [fragment]})

    def tool_calls(self, *calls: tuple[str, str, str], pieces: int = 3) -> Self:
        """Stream ``(id, name, arguments_json)`` calls with their arguments cut into ``pieces``,
        interleaved across calls the way parallel tool calls arrive."""
        for index, (call_id, name, _) in enumerate(calls):
            self.tool_fragment(index, call_id=call_id, name=name)
        for piece in range(pieces):
            for index, (_, _, arguments) in enumerate(calls):
                size = -(-len(arguments) // pieces)
                part = arguments[piece * size : (piece + 1) * size]
                if part:
                    self.tool_fragment(index, arguments=part)
        return self

    def finish(self, reason: str = "stop") -> Self:
        return self._delta({}, finish_reason=reason)

    def usage(self, prompt: int, completion: int, reasoning: int | None = None) -> Self:
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
        if reasoning is not None:
            usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
        return self._chunk([], usage)

    def error(self, message: str, *, error_type: str = "server_error") -> Self:
        """An error object inside an open stream (as some servers send on overload)."""
        self._parts.append(
            SSE(
                json.dumps(
                    {"error": {"message": message, "type": error_type, "param": None, "code": None}}
                )
            )
        )
        return self

    def reply(self) -> StreamReply:
        return StreamReply((*self._parts, SSE("[DONE]")))


def text_reply(*pieces: str, prompt: int = 10, completion: int = 5) -> StreamReply:
    """The common case: a few text deltas, ``stop``, usage."""
    return OpenAIStream().text(*pieces).finish().usage(prompt, completion).reply()


def openai_error(
    status: int,
    message: str,
    *,
    error_type: str = "invalid_request_error",
    code: str | None = None,
) -> JSONReply:
    return JSONReply(
        status, {"error": {"message": message, "type": error_type, "param": None, "code": code}}
    )
