"""Text that cannot be stored on every backend (a NUL character, a lone surrogate from
undecodable bytes) is refused as INPUT_VALIDATION before anything is written, on SQLite and
PostgreSQL alike, and binary stdin is an input error of the CLI, not a storage error."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from cli_kit import COMMAND, TIMEOUT_S, Cli, plain
from kernel_kit import build_agent, text
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain import content
from youyou.domain.content import ContentBlock, FileContentBlock, TextBlock
from youyou.domain.errors import AgentError, ErrorCode

BAD_TEXTS = [
    ("a\x00b", "contains a NUL character (at character 1)"),
    ("ok \udcff", "is not valid Unicode text (a lone surrogate at character 3)"),
]


@pytest.mark.parametrize(("value", "problem"), BAD_TEXTS)
def test_check_text_names_what_is_wrong_and_where(value: str, problem: str) -> None:
    with pytest.raises(AgentError) as info:
        content.check_text(value, "the message")
    assert info.value.code is ErrorCode.INPUT_VALIDATION
    assert info.value.message.startswith(f"the message {problem}")


@pytest.fixture
async def storage(db_url: str) -> AsyncIterator[SqlSessionStorage]:
    opened = await SqlSessionStorage.open(db_url)
    yield opened
    await opened.close()


@pytest.mark.parametrize(
    "blocks",
    [
        [TextBlock(text="why\x00 is checkout down?")],
        [TextBlock(text="why is checkout down? \ud800")],
        [TextBlock(text="see the log"), FileContentBlock(file_name="app.log", text="a\x00b")],
        [TextBlock(text="see the log"), FileContentBlock(file_name="a\x00.log", text="fine")],
    ],
    ids=["nul", "surrogate", "nul-in-file", "nul-in-file-name"],
)
async def test_the_kernel_refuses_it_the_same_way_on_both_backends(
    storage: SqlSessionStorage, blocks: list[ContentBlock]
) -> None:
    agent, provider = await build_agent(
        [text("restart the pods")], configure=lambda b: b.register_session_storage(storage)
    )
    session = await agent.new_session()
    before = await storage.load_events(session.session_id)
    with pytest.raises(AgentError) as info:
        await session.send_message(blocks)
    assert info.value.code is ErrorCode.INPUT_VALIDATION
    assert await storage.load_events(session.session_id) == before  # nothing written
    assert provider.requests == []
    outcome = await (await session.send_message("why is checkout down?")).join()
    assert outcome.error is None  # the session is still usable
    await agent.shutdown()


def test_binary_stdin_is_an_input_error_of_the_cli(tmp_path: Path) -> None:
    cli = Cli(tmp_path)
    cli.write_config([{"text": "restart the pods"}])
    result = subprocess.run(
        [*COMMAND, "chat", "-m", "-"],
        input=b"\xff\xfe" + os.urandom(65536),
        capture_output=True,
        env=cli.env(),
        timeout=TIMEOUT_S,
        check=False,
    )
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert "INPUT_VALIDATION" in err and "not UTF-8 text (byte 0 of 65,538)" in plain(err)
    assert "STORAGE_ERROR" not in err and "Traceback" not in err
    assert cli.user_messages() == []
