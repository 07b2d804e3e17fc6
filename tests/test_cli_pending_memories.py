"""A memory extraction that outlasts ``[memory] close_timeout_s`` (a slow local model) is not
lost: closing hands it to the next ``youyou chat``, which extracts it in the background."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli_kit import Cli, plain, quit_chat
from fakes.http_server import RecordedRequest, StreamReply
from fakes.openai_server import FakeOpenAIServer, OpenAIStream
from youyou.cli.pending_memories import PENDING_DIR

CLOSE_BOUND_S = 0.5  # [memory] close_timeout_s
EXTRACTION_S = 4 * CLOSE_BOUND_S  # the slow model's extraction: four times the close's bound
WAIT_S = 30  # for the next start to finish them: returns as soon as it has
# The memory each question leads to (worded apart, so a window is told by its question even
# when the memories saved so far are shown with it).
FACTS = {"question one": "the first fact", "question two": "the second fact"}


@dataclass
class SlowModel:
    """Answers at once; extracts after ``EXTRACTION_S`` the memory of the question in the
    window it was given."""

    server: FakeOpenAIServer

    def reply(self, request: RecordedRequest) -> StreamReply:
        text = json.dumps(request.json["messages"], ensure_ascii=False)
        if "long-term memory" not in text:
            stream = OpenAIStream().text("noted")
        else:
            fact = FACTS["question one" if "question one" in text else "question two"]
            mutation = {"op": "create", "content": fact, "reason": "durable"}
            stream = OpenAIStream().delay(EXTRACTION_S).text(json.dumps({"mutations": [mutation]}))
        return stream.finish().usage(10, 5).reply()


@pytest.fixture
def slow_model() -> Iterator[SlowModel]:
    with FakeOpenAIServer() as server:
        model = SlowModel(server)
        server.default = model.reply
        yield model


def _memories(cli: Cli) -> list[str]:
    with sqlite3.connect(cli.root / "youyou.db") as db:
        return sorted(row[0] for row in db.execute("SELECT content FROM memories"))


def _pending(cli: Cli) -> set[str]:
    directory = cli.data_dir / PENDING_DIR
    return {p.name for p in directory.iterdir()} if directory.exists() else set()


def test_an_extraction_longer_than_the_bound_is_finished_by_the_next_start(
    cli: Cli, slow_model: SlowModel
) -> None:
    cli.write_config(
        extra='\n[agent]\ndefault_model = "gpt"\n\n'
        f"[memory]\nclose_timeout_s = {CLOSE_BOUND_S}\n"
        f'\n[[providers]]\nid = "fake"\ntype = "openai"\nbase_url = "{slow_model.server.base_url}"'
        '\n\n[[providers.models]]\nid = "gpt"\ncontext_window = 8192\n'
    )

    first = cli.run("chat", "-m", "question one")

    assert first.returncode == 0, first.stderr
    assert first.stdout == "noted\n"
    assert "not saved" not in plain(first.stderr)  # nothing is lost: no warning
    [first_id] = cli.session_ids()
    assert _pending(cli) == {first_id}
    assert _memories(cli) == []

    second = cli.run("chat", "-m", "question two")  # extracts the first after answering

    assert second.returncode == 0, second.stderr
    assert "not saved" not in plain(second.stderr)
    second_id = next(i for i in cli.session_ids() if i != first_id)
    assert _pending(cli) == {first_id, second_id}  # too slow for this bound: kept for later
    assert _memories(cli) == []

    chat = cli.spawn()  # an interactive chat extracts them while the user types
    deadline = time.monotonic() + WAIT_S
    while _pending(cli) and time.monotonic() < deadline:
        time.sleep(0.05)
    quit_chat(chat)
    assert _pending(cli) == set()
    assert _memories(cli) == ["the first fact", "the second fact"]


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)
