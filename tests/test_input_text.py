"""Text that cannot be stored on every backend (a NUL character, a lone surrogate from
undecodable bytes) is refused as INPUT_VALIDATION before anything is written, on SQLite and
PostgreSQL alike, and binary stdin is an input error of the CLI, not a storage error. A lone
surrogate the model or a tool produces is replaced by U+FFFD instead, so the answer is
streamed and stored."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from cli_kit import COMMAND, TIMEOUT_S, Cli, plain
from fakes.openai_server import OpenAIStream
from kernel_kit import RecordingTool, build_agent, text
from server_kit import Workbench, text_of
from youyou.adapters.providers.scripted import ScriptedResponse
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain import content
from youyou.domain.content import ContentBlock, FileContentBlock, TextBlock
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.events import ToolCallEnd
from youyou.domain.ledger import ToolOutput

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


# -- text the model or a tool produces: made valid, never refused -------------------------------

LONE = "\ud800"


async def test_a_tool_output_with_a_lone_surrogate_is_stored_with_a_replacement_character(
    storage: SqlSessionStorage,
) -> None:
    async def broken(arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(content=f"disk {LONE} full", metadata={"path": f"/var/{LONE}"})

    tool = RecordingTool("probe", behaviour=broken)
    agent, _ = await build_agent(
        [ScriptedResponse.tool_calls([("c1", "probe", {"x": 1})]), text("the disk is full")],
        tools=[tool],
        configure=lambda b: b.register_session_storage(storage),
    )
    session = await agent.new_session()
    turn = await session.send_message("why is checkout down?")
    ends = [e.payload for e in await turn.collect() if isinstance(e.payload, ToolCallEnd)]
    assert (await turn.join()).error is None
    assert [end.output.content for end in ends] == ["disk \ufffd full"]
    stored = repr(await storage.load_events(session.session_id))
    assert "disk \ufffd full" in stored and "/var/\ufffd" in stored
    await agent.shutdown()


def test_a_lone_surrogate_from_the_model_reaches_the_user_and_the_ledger_replaced(
    start_workbench: Callable[..., Workbench],
) -> None:
    wb = start_workbench()
    api = wb.user("alice")
    sid = api.new_session()["id"]
    # json.dumps escapes it as "\ud800" on the wire, as a broken provider would send it
    wb.model.enqueue(
        OpenAIStream()
        .tool_calls(("call_1", "get_current_time", json.dumps({"zone": f"UTC{LONE}"})))
        .finish("tool_calls")
        .usage(10, 5)
        .reply()
    )
    wb.model.enqueue(
        OpenAIStream().text("The disk ", f"is {LONE}full.").finish().usage(10, 5).reply()
    )
    frames = api.send(sid, "why is checkout down?")
    assert frames[-1].event == "turn_complete", frames[-1]
    answer = "".join(f.data["text"] for f in frames if f.event == "text_delta")
    assert answer == "The disk is \ufffdfull."
    [start] = [f for f in frames if f.event == "tool_call_start"]
    assert start.data["arguments"] == {"zone": "UTC\ufffd"}
    history = api.data("GET", f"/chat/sessions/{sid}/messages")
    assert "".join(text_of(m) for m in history if m["role"] == "assistant").endswith(
        "The disk is \ufffdfull."
    )
