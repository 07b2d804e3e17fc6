"""A deterministic provider that replays scripted responses.

Used by the tests, the benchmarks and the offline demo: no network, no API key. A script is a
list of responses consumed in order; a response is either a ``ScriptedResponse`` or a callable
building one from the request (for echo-style or load-test scripts).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from youyou.domain.cancel import CancellationToken
from youyou.domain.content import TextBlock
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.model import (
    ChatError,
    ChatEvent,
    ChatRequest,
    Done,
    FinishReason,
    ModelInfo,
    ModelMessageRole,
    ProviderCapability,
    ProviderError,
    ProviderErrorKind,
    ReasoningDelta,
    TextDelta,
    ToolCallRequested,
    Usage,
)

DEMO_MODEL = ModelInfo(
    model_id="youyou-demo",
    display_name="YouYou offline demo (scripted)",
    context_window=32_000,
    capabilities=frozenset(
        {ProviderCapability.TOOL_USE, ProviderCapability.STREAMING, ProviderCapability.VISION}
    ),
)


@dataclass(frozen=True, slots=True)
class ScriptedResponse:
    """One provider response; ``delay_s`` is slept before each event."""

    events: tuple[ChatEvent, ...]
    delay_s: float = 0.0

    @classmethod
    def text(
        cls,
        text: str,
        *,
        chunks: int = 1,
        reasoning: str | None = None,
        usage: Usage | None = None,
        delay_s: float = 0.0,
        finish_reason: FinishReason = FinishReason.STOP,
    ) -> ScriptedResponse:
        events: list[ChatEvent] = []
        if reasoning:
            events.append(ReasoningDelta(text=reasoning))
        events.extend(TextDelta(text=part) for part in split_chunks(text, chunks))
        events.append(Done(finish_reason=finish_reason, usage=usage or _usage_for(text)))
        return cls(tuple(events), delay_s)

    @classmethod
    def tool_calls(
        cls,
        calls: Sequence[tuple[str, str, dict[str, Any]]],
        *,
        text: str = "",
        delay_s: float = 0.0,
    ) -> ScriptedResponse:
        """``calls`` are ``(call_id, tool_name, arguments)`` triples, in model order."""
        events: list[ChatEvent] = [TextDelta(text=text)] if text else []
        events.extend(ToolCallRequested(call_id=c, tool_name=n, arguments=a) for c, n, a in calls)
        events.append(Done(finish_reason=FinishReason.TOOL_CALLS, usage=_usage_for(text)))
        return cls(tuple(events), delay_s)

    @classmethod
    def error(
        cls, kind: ProviderErrorKind, message: str = "scripted failure", *, retryable: bool = False
    ) -> ScriptedResponse:
        return cls(
            (ChatError(error=ProviderError(kind=kind, message=message, retryable=retryable)),)
        )


ResponseSource = ScriptedResponse | Callable[[ChatRequest], ScriptedResponse]


def split_chunks(text: str, chunks: int) -> list[str]:
    if not text:
        return []
    size = max(1, -(-len(text) // max(1, chunks)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def _usage_for(text: str) -> Usage:
    output = max(1, len(text) // 4) if text else 0
    return Usage(input_tokens=0, output_tokens=output, total_tokens=output)


class ScriptedProvider:
    """Replays responses in order; records every request it receives in ``requests``.

    Benchmarks pass ``record_requests=False``: recorded requests keep every history alive.
    """

    def __init__(
        self,
        responses: Iterable[ResponseSource] = (),
        *,
        provider_id: str = "scripted",
        models: Sequence[ModelInfo] = (DEMO_MODEL,),
        fallback: Callable[[ChatRequest], ScriptedResponse] | None = None,
        record_requests: bool = True,
    ) -> None:
        self._provider_id = provider_id
        self._record = record_requests
        self._models = tuple(models)
        self._queue: deque[ResponseSource] = deque(responses)
        self._fallback = fallback
        self.requests: list[ChatRequest] = []

    @property
    def provider_id(self) -> str:
        return self._provider_id

    def models(self) -> Sequence[ModelInfo]:
        return self._models

    def add(self, *responses: ResponseSource) -> None:
        self._queue.extend(responses)

    @classmethod
    def demo(
        cls, *, provider_id: str = "scripted", models: Sequence[ModelInfo] = (DEMO_MODEL,)
    ) -> ScriptedProvider:
        return cls(provider_id=provider_id, models=models, fallback=demo_response)

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        *,
        provider_id: str = "scripted",
        models: Sequence[ModelInfo] = (DEMO_MODEL,),
    ) -> ScriptedProvider:
        """Load ``{"responses": [...]}`` from JSON or YAML; the demo answers once it runs out."""
        return cls(
            load_script(Path(path)), provider_id=provider_id, models=models, fallback=demo_response
        )

    async def chat(
        self, request: ChatRequest, cancel: CancellationToken
    ) -> AsyncIterator[ChatEvent]:
        if self._record:
            self.requests.append(request)
        if self._queue:
            source = self._queue.popleft()
        elif self._fallback is not None:
            source = self._fallback
        else:
            yield ChatError(
                error=ProviderError(
                    kind=ProviderErrorKind.PROVIDER,
                    message="scripted provider has no response left",
                )
            )
            return
        response = source if isinstance(source, ScriptedResponse) else source(request)
        for event in response.events:
            if cancel.is_cancelled or (
                response.delay_s > 0 and await _cancelled_within(cancel, response.delay_s)
            ):
                yield Done(finish_reason=FinishReason.CANCELLED)
                return
            yield event


async def _cancelled_within(cancel: CancellationToken, seconds: float) -> bool:
    try:
        async with asyncio.timeout(seconds):
            await cancel.wait()
    except TimeoutError:
        return False
    return True


_TIME_WORDS = ("time", "clock", "date", "时间", "几点", "日期")


def demo_response(request: ChatRequest) -> ScriptedResponse:
    """Offline answer that says what the demo is and how to configure a real model.

    Asked about the time with ``get_current_time`` available, it calls the tool first, so the
    demo shows a real tool round trip.
    """
    last = request.messages[-1] if request.messages else None
    if last is not None and last.role is ModelMessageRole.TOOL:
        result = " ".join(b.text for b in last.content if isinstance(b, TextBlock))
        return ScriptedResponse.text(f"The `get_current_time` tool answered: {result}", chunks=4)
    last_user = next(
        (m for m in reversed(request.messages) if m.role is ModelMessageRole.USER), None
    )
    question = ""
    if last_user is not None:
        question = " ".join(b.text for b in last_user.content if isinstance(b, TextBlock)).strip()
    has_clock = any(tool.name == "get_current_time" for tool in request.tools)
    if has_clock and any(word in question.lower() for word in _TIME_WORDS):
        return ScriptedResponse.tool_calls([("demo-time", "get_current_time", {})])
    answer = (
        "**YouYou offline demo model.** I am a scripted stand-in, not a language model.\n\n"
        f"You said: {question or '(no text)'}\n\n"
        "To talk to a real model, add a `[[providers]]` table to `youyou.toml` "
        "(see *Using real models* in the README)."
    )
    return ScriptedResponse.text(answer, chunks=max(1, len(answer) // 24), delay_s=0.0)


def load_script(path: Path) -> list[ResponseSource]:
    import yaml  # ~20 ms to import, only for a script file

    try:
        raw = path.read_text(encoding="utf-8")
        data = json.loads(raw) if path.suffix == ".json" else yaml.safe_load(raw)
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise _script_error(f"cannot read script {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("responses"), list):
        raise _script_error(f"script {path} must be a mapping with a 'responses' list")
    return [_parse_response(item, index) for index, item in enumerate(data["responses"])]


def _script_error(message: str) -> AgentError:
    return AgentError(ErrorCode.INVALID_CONFIG, message, source=ErrorSource.PROVIDER)


def _parse_response(item: object, index: int) -> ScriptedResponse:
    if not isinstance(item, dict):
        raise _script_error(f"response #{index} must be a mapping")
    delay_s = float(item.get("delay_ms", 0)) / 1000
    if "error" in item:
        error = item["error"]
        kinds = [k.value for k in ProviderErrorKind]
        if not isinstance(error, dict) or error.get("kind", "provider") not in kinds:
            raise _script_error(f"response #{index}: error.kind must be one of {kinds}")
        kind = ProviderErrorKind(error.get("kind", "provider"))
        return ScriptedResponse.error(kind, str(error.get("message", "scripted failure")))
    if "tool_calls" in item:
        calls = [
            (str(c.get("id", f"call_{index}_{n}")), str(c["name"]), dict(c.get("arguments", {})))
            for n, c in enumerate(item["tool_calls"])
        ]
        return ScriptedResponse.tool_calls(calls, text=str(item.get("text", "")), delay_s=delay_s)
    return ScriptedResponse.text(
        str(item.get("text", "")),
        chunks=int(item.get("chunks", 1)),
        reasoning=item.get("reasoning"),
        delay_s=delay_s,
    )
