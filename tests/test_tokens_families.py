"""Model family -> encoding mapping, the approximate fallback, and counting fully offline."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from youyou.adapters.tokens import (
    ApproximateTokenCounter,
    DeferredBpeCounter,
    EncodingChoice,
    counter_for_encoding,
    counter_for_model,
    encoding_for_model,
)


@pytest.mark.parametrize(
    ("model_id", "encoding", "exact"),
    [
        ("gpt-4o", "o200k_base", True),
        ("gpt-4o-mini-2024-07-18", "o200k_base", True),
        ("openai/gpt-4.1-nano", "o200k_base", True),
        ("gpt-5", "o200k_base", True),
        ("gpt-oss-20b", "o200k_base", True),
        ("o1-preview", "o200k_base", True),
        ("o3", "o200k_base", True),
        ("o4-mini", "o200k_base", True),
        ("gpt-4", "cl100k_base", True),
        ("gpt-4-turbo-2024-04-09", "cl100k_base", True),
        ("GPT-3.5-Turbo", "cl100k_base", True),
        ("text-embedding-3-small", "cl100k_base", True),
        ("meta-llama/Llama-3.1-8B-Instruct", "llama3", True),
        ("llama3.2:3b", "llama3", True),
        ("Qwen/Qwen2.5-7B-Instruct", "qwen3", True),
        ("qwen3:8b", "qwen3", True),
        ("claude-sonnet-4-5", "cl100k_base", False),
        ("llama-4-scout", "cl100k_base", False),
        ("llama2:7b", "cl100k_base", False),
        ("mistral-large-latest", "cl100k_base", False),
        ("deepseek-chat", "cl100k_base", False),
        ("gemma2:9b", "cl100k_base", False),
    ],
)
def test_family_mapping(model_id: str, encoding: str, exact: bool) -> None:
    assert encoding_for_model(model_id) == EncodingChoice(encoding, exact)
    counter = counter_for_model(model_id)
    assert isinstance(counter, DeferredBpeCounter)
    assert counter.encoding == encoding


@pytest.mark.parametrize("model_id", ["scripted", "my-azure-deployment", "phind-codellama", ""])
def test_unknown_models_get_the_approximation(model_id: str) -> None:
    assert encoding_for_model(model_id) == EncodingChoice(None, exact=False)
    assert isinstance(counter_for_model(model_id), ApproximateTokenCounter)


def test_unavailable_encoding_falls_back_to_approximation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        counter = counter_for_encoding("no_such_encoding")
    assert isinstance(counter, ApproximateTokenCounter)
    assert counter.count_text("hello world!") == 3
    assert "counting tokens approximately" in caplog.text


# Runs in a fresh interpreter with no cache directories, an empty home, the hub offline and every
# socket refused: if loading an encoding tried the network or a cache, it would fail here.
_OFFLINE_SCRIPT = """
import json, socket

def refuse(*args, **kwargs):
    raise OSError("network access attempted")

socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse

from youyou.adapters.tokens import counter_for_model
models = ["gpt-4o", "gpt-4", "llama3.1:8b", "qwen2.5:7b", "claude-3-5-haiku"]
print(json.dumps({
    m: [type(c).__name__, c.count_text("hello world")]
    for m in models
    for c in [counter_for_model(m)]
}))
"""


def test_counts_offline_without_any_cache_dir(tmp_path: Path) -> None:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR", "HF_HOME", "XDG_CACHE_HOME"}
    }
    env.update(HF_HUB_OFFLINE="1", HOME=str(tmp_path), TMPDIR=str(tmp_path))
    out = subprocess.run(
        [sys.executable, "-c", _OFFLINE_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    counts = json.loads(out.stdout)
    assert counts == {m: ["DeferredBpeCounter", 2] for m in counts}
    assert len(counts) == 5
    assert list(tmp_path.iterdir()) == []  # nothing was cached or downloaded
