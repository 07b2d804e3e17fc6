"""Model registry and provider routing: each model id is served by exactly one provider."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from youyou.application.tracing import NOOP_TRACER, chat_span, end_chat
from youyou.domain.cancel import CancellationToken
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.model import ChatError, ChatRequest, Done, ModelInfo, TextDelta, Usage
from youyou.ports.model_provider import ModelProvider
from youyou.ports.tracer import Tracer


@dataclass(frozen=True, slots=True)
class ModelRoute:
    provider: ModelProvider
    info: ModelInfo


class ModelRegistry:
    """Immutable after build: model ids are unique across providers."""

    def __init__(self, providers: Sequence[ModelProvider]) -> None:
        routes: dict[str, ModelRoute] = {}
        for provider in providers:
            for info in provider.models():
                if info.model_id in routes:
                    raise AgentError(
                        ErrorCode.NAME_CONFLICT,
                        f"model {info.model_id!r} is offered by two providers",
                        source=ErrorSource.AGENT_BUILDER,
                    )
                routes[info.model_id] = ModelRoute(provider, info)
        self._routes = routes

    def has(self, model_id: str) -> bool:
        return model_id in self._routes

    def route(self, model_id: str) -> ModelRoute:
        route = self._routes.get(model_id)
        if route is None:
            raise AgentError(
                ErrorCode.MODEL_NOT_SUPPORTED,
                f"model {model_id!r} is not registered",
                source=ErrorSource.TURN_ENGINE,
            )
        return route

    def infos(self) -> list[ModelInfo]:
        return [route.info for route in self._routes.values()]


async def complete_text(
    registry: ModelRegistry,
    request: ChatRequest,
    cancel: CancellationToken | None = None,
    tracer: Tracer = NOOP_TRACER,
) -> str:
    """One tools-less request collected into text (compaction, memory extraction)."""
    provider = registry.route(request.model_id).provider
    parts: list[str] = []
    done: Done | None = None
    with chat_span(tracer, request, provider.provider_id) as span:
        try:
            async for event in provider.chat(request, cancel or CancellationToken()):
                if isinstance(event, TextDelta):
                    parts.append(event.text)
                elif isinstance(event, Done):
                    done = event
                elif isinstance(event, ChatError):
                    raise AgentError(
                        ErrorCode.PROVIDER_ERROR,
                        event.error.message,
                        retryable=event.error.retryable,
                        source=ErrorSource.PROVIDER,
                    )
        except AgentError:
            raise
        except Exception as exc:
            raise AgentError(
                ErrorCode.PROVIDER_ERROR, f"provider failed: {exc}", source=ErrorSource.PROVIDER
            ) from exc
        text = "".join(parts)
        end_chat(
            span,
            tracer,
            usage=done.usage if done else Usage(),
            finish_reason=done.finish_reason if done else None,
            error=None,
            text=text,
        )
    return text
