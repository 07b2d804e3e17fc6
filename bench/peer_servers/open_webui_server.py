"""Open WebUI 0.12: ``open-webui serve`` from its own environment, offline, on a new SQLite
data folder each round, with the fake as its one OpenAI connection.

The first account (signed up at start) is the admin; each benchmark user is added by the admin
(sign-up closes after the first account), signs in and creates a chat. A turn is what a client
of Open WebUI's HTTP API does: ``POST /api/chat/completions`` streams the answer (OpenAI's
format, the whole conversation sent, as the API wants), then ``POST /api/v1/chats/{id}`` saves
the question and the answer into the chat. (The web page itself streams over socket.io and has
the server save the chat; this benchmark's client speaks HTTP only.)
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import httpx
from harness import PEERS, Conversation, Frame, Started, launch, openai_frame
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


class OpenWebUI:
    name = "Open WebUI"
    stores = (
        "the chat (a JSON document of the whole conversation tree) and a row per message in "
        "SQLite, written by the save request after the stream"
    )
    end_frame = True

    def __init__(self) -> None:
        self.admin: dict[str, str] = {}

    def start(self, root: Path, model_url: str) -> Started:
        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        env = {**ENV, "DATA_DIR": str(root / "data"), "OPENAI_API_BASE_URL": model_url}
        command = [str(PEERS / "open-webui" / "bin" / "open-webui"), "serve"]
        command += ["--host", "127.0.0.1", "--port", str(port)]
        process = launch(command, env, root, f"{base_url}/health")
        admin = {"name": "admin", "email": "admin@bench.test", "password": PASSWORD}
        signup = httpx.post(f"{base_url}/api/v1/auths/signup", json=admin, trust_env=False)
        signup.raise_for_status()
        self.admin = {"Authorization": f"Bearer {signup.json()['token']}"}
        return Started(process, base_url)

    def stop(self, started: Started) -> None:
        if started.process is not None:
            stop(started.process)

    async def open(self, http: httpx.AsyncClient, user: str) -> Conversation:
        account = {"email": f"{user}@bench.test", "password": PASSWORD}
        added = await http.post(
            "/api/v1/auths/add", json={**account, "name": user, "role": "user"}, headers=self.admin
        )
        added.raise_for_status()
        signin = await http.post("/api/v1/auths/signin", json=account)
        signin.raise_for_status()
        headers = {"Authorization": f"Bearer {signin.json()['token']}"}
        empty: dict[str, Any] = {"messages": {}, "currentId": None}
        chat = {"title": user, "models": ["fake-model"], "history": empty, "messages": []}
        new = await http.post("/api/v1/chats/new", json={"chat": chat}, headers=headers)
        new.raise_for_status()
        return Conversation(headers=headers, ids={"chat": new.json()["id"]})

    def request(self, http: httpx.AsyncClient, chat: Conversation, text: str) -> httpx.Request:
        messages = [{"role": m["role"], "content": m["content"]} for m in chat.history]
        messages.append({"role": "user", "content": text})
        body = {"model": "fake-model", "stream": True, "messages": messages}
        return http.build_request("POST", "/api/chat/completions", json=body, headers=chat.headers)

    def parse(self, event: str, data: bytes) -> Frame:
        return openai_frame(data)

    async def answered(
        self, http: httpx.AsyncClient, chat: Conversation, text: str, answer: str
    ) -> str:
        """Save the turn as Open WebUI's client does: the new messages into the chat's tree."""
        now = int(time.time())
        previous = chat.history[-1] if chat.history else None
        asked = _message("user", text, previous["id"] if previous else None, now)
        replied = _message("assistant", answer, asked["id"], now, model="fake-model", done=True)
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

    async def stored(
        self, http: httpx.AsyncClient, chat: Conversation
    ) -> list[tuple[str, str]] | None:
        response = await http.get(f"/api/v1/chats/{chat.ids['chat']}", headers=chat.headers)
        response.raise_for_status()
        messages = response.json()["chat"]["history"]["messages"].values()
        return [(m["role"], m["content"]) for m in messages]


def _message(role: str, content: str, parent: str | None, now: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "parentId": parent,
        "childrenIds": [],
        "role": role,
        "content": content,
        "timestamp": now,
        **extra,
    }
