"""YouYou: ``youyou serve`` from the project's environment, on a new SQLite database each
round, long-term memory off (the same configuration as ``bench/server_load.py``). An account
signs up and logs in; a conversation is a new session; a turn is
``POST /chat/sessions/{id}/messages``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from harness import Conversation, Frame, Started, sse
from server_load import PASSWORD, free_port, start_server, stop, write_config


class YouYou:
    name = "YouYou"
    stores = (
        "the user's message and the answer as ledger events, and the session's list row, in "
        "SQLite (WAL, synchronous=NORMAL), committed before `turn_complete` is sent"
    )
    end_frame = True

    def start(self, root: Path, model_url: str) -> Started:
        config = write_config(root, f"sqlite+aiosqlite:///{root / 'youyou.db'}", model_url)
        port = free_port()
        return Started(start_server(root, config, port, workers=1), f"http://127.0.0.1:{port}")

    def stop(self, started: Started) -> None:
        if started.process is not None:
            stop(started.process)

    async def sign_up(self, http: httpx.AsyncClient, name: str) -> dict[str, str]:
        credentials = {"username": name, "password": PASSWORD}
        (await http.post("/auth/register", json=credentials)).raise_for_status()
        login = await http.post("/auth/login", json=credentials)
        login.raise_for_status()
        return {"Authorization": f"Bearer {login.json()['data']['accessToken']}"}

    async def open(self, http: httpx.AsyncClient, account: dict[str, str]) -> Conversation:
        session = await http.post("/chat/sessions", json={}, headers=account)
        session.raise_for_status()
        return Conversation(headers=account, ids={"session": session.json()["data"]["id"]})

    def stream(
        self, http: httpx.AsyncClient, chat: Conversation, text: str
    ) -> AsyncIterator[Frame]:
        return sse(http, self.request(http, chat, text), self.parse)

    def request(self, http: httpx.AsyncClient, chat: Conversation, text: str) -> httpx.Request:
        url = f"/chat/sessions/{chat.ids['session']}/messages"
        return http.build_request("POST", url, json={"content": text}, headers=chat.headers)

    def parse(self, event: str, data: bytes) -> Frame:
        if event == "text_delta":
            return Frame(text=json.loads(data)["text"])
        if event == "turn_complete":
            return Frame(done=True)
        if event in ("error", "turn_cancelled"):
            return Frame(error=f"{event} {json.loads(data).get('code', '')}")
        return Frame()

    async def answered(
        self, http: httpx.AsyncClient, chat: Conversation, text: str, answer: str
    ) -> str:
        return ""  # stored by the server before the end of the stream

    async def stored(
        self, http: httpx.AsyncClient, chat: Conversation
    ) -> list[tuple[str, str]] | None:
        url = f"/chat/sessions/{chat.ids['session']}/messages"
        response = await http.get(url, headers=chat.headers)
        response.raise_for_status()
        return [
            (m["role"], "".join(b.get("text", "") for b in m["content"] if b["type"] == "text"))
            for m in response.json()["data"]
        ]

    async def close(self, chat: Conversation) -> None:
        """Nothing stays open between turns."""
