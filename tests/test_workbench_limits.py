"""One signed-in user cannot freeze the server or take what other users need: a message over
``max_message_chars`` is refused before any work, heavy work (indexing an upload) runs off the
event loop so ``/healthz`` keeps answering, and each user has limits of their own (open
sessions, running turns, streams, stored sessions, prompts, knowledge documents) whose
refusals name only that user's own use.

Every test drives ``youyou serve`` over real HTTP, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import random
import string
import threading
import time
from collections.abc import Callable

import httpx

from server_kit import Workbench

StartWorkbench = Callable[..., Workbench]


def test_a_message_over_the_length_limit_is_413_before_any_work(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench(extra="[server]\nmax_message_chars = 1000")
    api = wb.user("alice")
    sid = api.new_session()["id"]
    error = api.error("POST", f"/chat/sessions/{sid}/messages", 413, json={"content": "x" * 1001})
    assert error["code"] == "PAYLOAD_TOO_LARGE"
    assert "1000 characters" in error["message"] and "1001" in error["message"]
    attached = {
        "content": [
            {"type": "text", "text": "see the log"},
            {"type": "file", "fileName": "app.log", "mediaType": "text/plain", "text": "y" * 990},
        ]
    }
    api.error("POST", f"/chat/sessions/{sid}/messages", 413, json=attached)
    assert wb.model.requests == []
    assert api.data("GET", f"/chat/sessions/{sid}/messages") == []
    assert api.send(sid, "x" * 1000)[-1].event == "turn_complete"


def unique_words(size: int) -> str:
    """Markdown whose words are all different (the most indexing work per byte), in
    paragraphs of 20 words."""
    rng = random.Random(3)
    words = ["".join(rng.choices(string.ascii_lowercase, k=9)) for _ in range(size // 11)]
    paragraphs = (" ".join(words[i : i + 20]) for i in range(0, len(words), 20))
    return "# Runbook\n\n" + "\n\n".join(paragraphs)


def test_healthz_answers_while_a_big_knowledge_upload_is_indexed(
    start_workbench: StartWorkbench,
) -> None:
    wb = start_workbench()
    api = wb.user("alice")
    document = unique_words(2 * 1024 * 1024 - 100)  # the largest upload
    uploaded: list[int] = []

    def upload() -> None:
        with httpx.Client(base_url=wb.url, headers=api.http.headers, timeout=120) as client:
            response = client.post(
                "/chat/knowledge", json={"name": "runbook.md", "content": document}
            )
            uploaded.append(response.status_code)

    uploading = threading.Thread(target=upload)
    uploading.start()
    latencies: list[float] = []
    with httpx.Client(base_url=wb.url, timeout=60) as probe:
        while uploading.is_alive():
            started = time.perf_counter()
            assert probe.get("/healthz").status_code == 200
            latencies.append(time.perf_counter() - started)
            time.sleep(0.02)
    uploading.join()
    assert uploaded == [201]
    assert len(latencies) >= 10, "the upload ended too soon to tell"
    # Indexing on the event loop held /healthz for seconds; off it, a loaded two-core test
    # machine still answers well within a second.
    assert max(latencies) < 1.0, sorted(latencies)[-5:]
