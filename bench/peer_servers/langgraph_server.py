"""The LangGraph Agent Server in memory: ``langgraph dev`` (``langgraph-cli[inmem]``, from its
own environment) serving ``langgraph_graph.py``, one node calling the fake model through
langchain-openai. No users (the dev server has no auth): each user is a new thread; a turn is a
streamed run, ``POST /threads/{id}/runs/stream`` with ``stream_mode = messages-tuple``."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from harness import PEERS, Conversation, Frame, Started, launch, sse
from server_load import free_port, stop

GRAPH = Path(__file__).resolve().with_name("langgraph_graph.py")
# The dev server runs at most this many runs at once (its default, 10, would queue 200 users).
JOBS = 1000


class LangGraphDev:
    name = "LangGraph dev"
    stores = (
        "the thread's checkpoints (its whole message list after each step) in memory; the dev "
        "server pickles its stores to `.langgraph_api/` every 10 s, so a crash loses up to 10 s "
        "of turns"
    )
    end_frame = False

    def start(self, root: Path, model_url: str) -> Started:
        config = root / "langgraph.json"
        graphs = {"agent": f"{GRAPH}:graph"}
        config.write_text(json.dumps({"dependencies": ["."], "graphs": graphs}))
        port = free_port()
        command = [str(PEERS / "langgraph" / "bin" / "langgraph"), "dev", "--no-browser"]
        command += ["--no-reload", "--host", "127.0.0.1", "--port", str(port)]
        command += ["--config", str(config), "--n-jobs-per-worker", str(JOBS)]
        env = {
            "BENCH_MODEL_URL": model_url,
            "LANGSMITH_TRACING": "false",
            "LANGCHAIN_TRACING_V2": "false",
            "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        }
        base_url = f"http://127.0.0.1:{port}"
        return Started(launch(command, env, root, f"{base_url}/ok"), base_url)

    def stop(self, started: Started) -> None:
        if started.process is not None:
            stop(started.process)

    async def sign_up(self, http: httpx.AsyncClient, name: str) -> dict[str, str]:
        return {"user": name}  # no accounts: the name goes into the thread's metadata

    async def open(self, http: httpx.AsyncClient, account: dict[str, str]) -> Conversation:
        thread = await http.post("/threads", json={"metadata": account})
        thread.raise_for_status()
        return Conversation(ids={"thread": thread.json()["thread_id"]})

    def stream(
        self, http: httpx.AsyncClient, chat: Conversation, text: str
    ) -> AsyncIterator[Frame]:
        return sse(http, self.request(http, chat, text), self.parse)

    def request(self, http: httpx.AsyncClient, chat: Conversation, text: str) -> httpx.Request:
        body = {
            "assistant_id": "agent",
            "input": {"messages": [{"role": "user", "content": text}]},
            "stream_mode": ["messages-tuple"],
        }
        return http.build_request("POST", f"/threads/{chat.ids['thread']}/runs/stream", json=body)

    def parse(self, event: str, data: bytes) -> Frame:
        if event == "messages":
            chunk = json.loads(data)[0]
            if chunk.get("type") == "AIMessageChunk" and isinstance(chunk.get("content"), str):
                return Frame(text=chunk["content"])
        elif event == "error":
            return Frame(error=f"error {data[:80].decode(errors='replace')}")
        return Frame()

    async def answered(
        self, http: httpx.AsyncClient, chat: Conversation, text: str, answer: str
    ) -> str:
        return ""  # the run appended the answer to the thread

    async def stored(
        self, http: httpx.AsyncClient, chat: Conversation
    ) -> list[tuple[str, str]] | None:
        response = await http.get(f"/threads/{chat.ids['thread']}/state")
        response.raise_for_status()
        roles = {"human": "user", "ai": "assistant"}
        messages = response.json()["values"]["messages"]
        return [(roles.get(m["type"], m["type"]), m["content"]) for m in messages]

    async def close(self, chat: Conversation) -> None:
        """Nothing stays open between turns."""
