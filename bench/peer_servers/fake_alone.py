"""The floor: the client streaming straight from the fake model, no server in between. Its
first-token time is what every server's is compared with."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from harness import Conversation, Frame, Started, openai_frame, sse


class FakeAlone:
    name = "floor (the fake alone)"
    stores = "nothing"
    end_frame = True

    def start(self, root: Path, model_url: str) -> Started:
        return Started(None, model_url.removesuffix("/v1"))

    def stop(self, started: Started) -> None:
        """The fake model outlives the run; nothing to stop."""

    async def sign_up(self, http: httpx.AsyncClient, name: str) -> dict[str, str]:
        return {}

    async def open(self, http: httpx.AsyncClient, account: dict[str, str]) -> Conversation:
        return Conversation()

    def stream(
        self, http: httpx.AsyncClient, chat: Conversation, text: str
    ) -> AsyncIterator[Frame]:
        return sse(http, self.request(http, chat, text), self.parse)

    def request(self, http: httpx.AsyncClient, chat: Conversation, text: str) -> httpx.Request:
        messages = [{"role": "user", "content": text}]
        body = {"model": "fake-model", "stream": True, "messages": messages}
        return http.build_request("POST", "/v1/chat/completions", json=body)

    def parse(self, event: str, data: bytes) -> Frame:
        return openai_frame(data)

    async def answered(
        self, http: httpx.AsyncClient, chat: Conversation, text: str, answer: str
    ) -> str:
        return ""

    async def stored(
        self, http: httpx.AsyncClient, chat: Conversation
    ) -> list[tuple[str, str]] | None:
        return None

    async def close(self, chat: Conversation) -> None:
        """Nothing stays open between turns."""
