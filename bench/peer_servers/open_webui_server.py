"""Open WebUI 0.12: ``open-webui serve`` from its own environment, offline, on a new SQLite
data folder each round, with the fake as its one OpenAI connection.

The first account (signed up at start) is the admin; sign-up then closes, so each benchmark
user is added by the admin (the answer carries the new user's session token). Two ways to
chat, as two adapters:

- ``OpenWebUI``, what its web page does: the user keeps a socket.io connection (Engine.IO 4
  over a WebSocket, ``/ws/socket.io``); a turn is ``POST /api/chat/completions`` with the
  socket's session id, the chat id (none on the first message, which creates the chat) and the
  new message's ids, answered at once with a task id; the answer arrives as socket events
  (``response.output_text.delta`` pieces, then ``chat:completion`` with ``done``), and the
  server writes it into the chat.
- ``OpenWebUIApi``, a client of its HTTP API: ``POST /api/chat/completions`` without a chat
  streams the answer in OpenAI's format, then ``POST /api/v1/chats/{id}`` saves the question
  and the answer into a chat made beforehand with ``POST /api/v1/chats/new``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import websockets
from harness import PEERS, Conversation, Frame, Started, launch, openai_frame, sse
from server_load import PASSWORD, free_port, stop

# Offline, nothing downloaded, nothing generated besides the answer (no title, tags or
# follow-up requests to the model), every user may use the model.
ENV = {
    "OFFLINE_MODE": "true",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "RAG_EMBEDDING_MODEL_AUTO_UPDATE": "false",
    "RAG_RERANKING_MODEL_AUTO_UPDATE": "false",
    "ENABLE_OLLAMA_API": "false",
    "OPENAI_API_KEY": "bench",
    "WEBUI_SECRET_KEY": "bench-secret-not-for-production",
    "BYPASS_MODEL_ACCESS_CONTROL": "true",
    "ENABLE_TITLE_GENERATION": "false",
    "ENABLE_TAGS_GENERATION": "false",
    "ENABLE_FOLLOW_UP_GENERATION": "false",
    "ENABLE_AUTOCOMPLETE_GENERATION": "false",
    "ENABLE_RETRIEVAL_QUERY_GENERATION": "false",
    "ENABLE_SEARCH_QUERY_GENERATION": "false",
    "SCARF_NO_ANALYTICS": "true",
    "DO_NOT_TRACK": "true",
    "ANONYMIZED_TELEMETRY": "false",
}
TURN_TIMEOUT_S = 300


class OpenWebUI:
    name = "Open WebUI"
    stores = (
        "the chat (a JSON document of the whole conversation tree) and a row per message in "
        "SQLite: the question and an empty answer before the model is called, the answer when "
        "it is done"
    )
    end_frame = True

    def __init__(self) -> None:
        self.admin: dict[str, str] = {}
        self.base_url = ""

    def start(self, root: Path, model_url: str) -> Started:
        port = free_port()
        self.base_url = f"http://127.0.0.1:{port}"
        env = {**ENV, "DATA_DIR": str(root / "data"), "OPENAI_API_BASE_URL": model_url}
        command = [str(PEERS / "open-webui" / "bin" / "open-webui"), "serve"]
        command += ["--host", "127.0.0.1", "--port", str(port)]
        process = launch(command, env, root, f"{self.base_url}/health")
        admin = {"name": "admin", "email": "admin@bench.test", "password": PASSWORD}
        signup = httpx.post(f"{self.base_url}/api/v1/auths/signup", json=admin, trust_env=False)
        signup.raise_for_status()
        self.admin = {"Authorization": f"Bearer {signup.json()['token']}"}
        return Started(process, self.base_url)

    def stop(self, started: Started) -> None:
        if started.process is not None:
            stop(started.process)

    async def sign_up(self, http: httpx.AsyncClient, name: str) -> dict[str, str]:
        """A new plain user, added by the admin; its session token."""
        account = {"email": f"{name}@bench.test", "password": PASSWORD, "name": name}
        added = await http.post(
            "/api/v1/auths/add", json={**account, "role": "user"}, headers=self.admin
        )
        added.raise_for_status()
        return {"token": added.json()["token"]}

    async def open(self, http: httpx.AsyncClient, account: dict[str, str]) -> Conversation:
        """A socket of the user, joined as the web page joins (the chat is made by the first
        message)."""
        token = account["token"]
        url = self.base_url.replace("http", "ws", 1) + "/ws/socket.io/?EIO=4&transport=websocket"
        socket = await websockets.connect(url, max_size=None, open_timeout=120)
        await socket.recv()  # the Engine.IO handshake
        await socket.send("40" + json.dumps({"token": token}))
        joined = json.loads(str(await socket.recv())[2:])
        await socket.send('42["user-join",' + json.dumps({"auth": {"token": token}}) + "]")
        events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        reader = asyncio.create_task(_read(socket, events))
        return Conversation(
            headers={"Authorization": f"Bearer {token}"},
            ids={"session": joined["sid"]},
            live={"socket": socket, "events": events, "reader": reader},
        )

    async def stream(
        self, http: httpx.AsyncClient, chat: Conversation, text: str
    ) -> AsyncIterator[Frame]:
        parent = chat.ids.get("answer")
        asked = _message("user", text, parent, models=["fake-model"])
        answer_id = str(uuid.uuid4())
        asked["childrenIds"] = [answer_id]
        messages = [{"role": m["role"], "content": m["content"]} for m in chat.history]
        body: dict[str, Any] = {
            "model": "fake-model",
            "stream": True,
            "messages": [*messages, {"role": "user", "content": text}],
            "id": answer_id,
            "session_id": chat.ids["session"],
            "user_message": asked,
            "parent_id": parent,
        }
        if "chat" in chat.ids:
            body["chat_id"] = chat.ids["chat"]
        started = await http.post("/api/chat/completions", json=body, headers=chat.headers)
        if started.status_code != 200 or not started.json().get("status"):
            yield Frame(error=f"HTTP {started.status_code} {started.text[:60]}")
            return
        chat.ids["chat"] = started.json()["chat_id"]
        events: asyncio.Queue[dict[str, Any]] = chat.live["events"]
        while True:
            event = await asyncio.wait_for(events.get(), TURN_TIMEOUT_S)
            if event.get("message_id") != answer_id:
                continue  # the end of an earlier turn, or the chat list
            kind, data = event["data"].get("type"), event["data"].get("data") or {}
            if kind == "response:completion" and data.get("type") == "response.output_text.delta":
                yield Frame(text=data["delta"])
            elif kind == "chat:message:error" or (kind == "chat:completion" and data.get("error")):
                yield Frame(error=f"error event {str(data)[:60]}")
                return
            elif kind == "chat:completion" and data.get("done"):
                chat.ids["answer"] = answer_id
                yield Frame(done=True)
                return

    async def answered(
        self, http: httpx.AsyncClient, chat: Conversation, text: str, answer: str
    ) -> str:
        chat.history += [
            {"role": "user", "content": text},
            {"role": "assistant", "content": answer},
        ]
        return ""  # the server wrote the answer into the chat

    async def stored(
        self, http: httpx.AsyncClient, chat: Conversation
    ) -> list[tuple[str, str]] | None:
        if "chat" not in chat.ids:
            return []
        response = await http.get(f"/api/v1/chats/{chat.ids['chat']}", headers=chat.headers)
        response.raise_for_status()
        messages = response.json()["chat"]["history"]["messages"].values()
        return [(m["role"], m["content"]) for m in messages]

    async def close(self, chat: Conversation) -> None:
        chat.live["reader"].cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await chat.live["reader"]
        await chat.live["socket"].close()


class OpenWebUIApi(OpenWebUI):
    name = "Open WebUI (HTTP API)"
    stores = (
        "the chat (a JSON document of the whole conversation tree) and a row per message in "
        "SQLite, written by the client's save request after the stream"
    )

    async def open(self, http: httpx.AsyncClient, account: dict[str, str]) -> Conversation:
        headers = {"Authorization": f"Bearer {account['token']}"}
        empty: dict[str, Any] = {"messages": {}, "currentId": None}
        chat = {"title": "bench", "models": ["fake-model"], "history": empty, "messages": []}
        new = await http.post("/api/v1/chats/new", json={"chat": chat}, headers=headers)
        new.raise_for_status()
        return Conversation(headers=headers, ids={"chat": new.json()["id"]})

    def stream(
        self, http: httpx.AsyncClient, chat: Conversation, text: str
    ) -> AsyncIterator[Frame]:
        messages = [{"role": m["role"], "content": m["content"]} for m in chat.history]
        messages.append({"role": "user", "content": text})
        body = {"model": "fake-model", "stream": True, "messages": messages}
        request = http.build_request(
            "POST", "/api/chat/completions", json=body, headers=chat.headers
        )
        return sse(http, request, lambda _event, data: openai_frame(data))

    async def answered(
        self, http: httpx.AsyncClient, chat: Conversation, text: str, answer: str
    ) -> str:
        """Save the turn as the chat API allows: the new messages into the chat's tree."""
        previous = chat.history[-1] if chat.history else None
        asked = _message("user", text, previous["id"] if previous else None)
        replied = _message("assistant", answer, asked["id"], model="fake-model", done=True)
        asked["childrenIds"] = [replied["id"]]
        changed = [asked, replied]
        if previous is not None:
            previous["childrenIds"] = [asked["id"]]
            changed.insert(0, previous)
        history = {"messages": {m["id"]: m for m in changed}, "currentId": replied["id"]}
        saved = await http.post(
            f"/api/v1/chats/{chat.ids['chat']}",
            json={"chat": {"history": history}},
            headers=chat.headers,
        )
        if saved.status_code != 200:
            return f"HTTP {saved.status_code} saving the chat"
        chat.history += [asked, replied]
        return ""

    async def close(self, chat: Conversation) -> None:
        """Nothing stays open between turns."""


async def _read(socket: Any, events: asyncio.Queue[dict[str, Any]]) -> None:
    """Answer the server's pings and queue its ``events`` messages for the turns to read."""
    async for message in socket:
        if message == "2":
            await socket.send("3")
        elif isinstance(message, str) and message.startswith('42["events"'):
            events.put_nowait(json.loads(message[2:])[1])


def _message(role: str, content: str, parent: str | None, **extra: Any) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "parentId": parent,
        "childrenIds": [],
        "role": role,
        "content": content,
        "timestamp": int(time.time()),
        **extra,
    }
