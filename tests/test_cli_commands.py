"""Slash commands of ``youyou chat``, typed into the real CLI in a pseudo-terminal."""

from __future__ import annotations

import base64
import os
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from cli_kit import PROMPT, Cli, loose, quit_chat, screen
from kernel_kit import block_text
from youyou.adapters.storage.sql import SqlSessionStorage
from youyou.domain.content import FileContentBlock, ImageBlock
from youyou.domain.ledger import META_SESSION_PROFILE, LedgerEvent, Metadata, UserMessage
from youyou.domain.session import next_summary

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


@pytest.fixture
def cli(tmp_path: Path) -> Cli:
    return Cli(tmp_path)


def _seed_sessions(cli: Cli, *session_ids: str) -> None:
    """Stored sessions with chosen ids (to make an id prefix ambiguous on purpose)."""

    async def seed(storage: SqlSessionStorage) -> None:
        for session_id in session_ids:
            event = LedgerEvent(
                seq=1,
                timestamp=datetime.now(UTC),
                payload=Metadata(
                    key=META_SESSION_PROFILE,
                    value={
                        "model_id": "youyou-demo",
                        "system_prompt_override": None,
                        "memory_namespace": "default",
                    },
                ),
            )
            await storage.append_event(session_id, event, next_summary(None, session_id, event))

    cli.with_storage(seed)


def test_help_lists_every_command(cli: Cli) -> None:
    cli.write_config()
    child = cli.spawn()
    child.sendline("/help")
    child.expect("use a skill explicitly")
    child.expect(PROMPT)
    shown = quit_chat(child)
    for command in (
        "/skills",
        "/compact",
        "/mode",
        "/usage",
        "/sessions",
        "/resume",
        "/new",
        "/model",
        "/attach",
        "/memories",
        "/reasoning",
        "/exit",
    ):
        assert command in shown


def test_resume_by_prefix_restores_the_history_and_lists_ambiguous_candidates(cli: Cli) -> None:
    cli.write_config([{"text": "the first answer"}])
    assert cli.run("chat", "-m", "the first question").returncode == 0
    [stored] = cli.session_ids()
    _seed_sessions(
        cli, "abcd0001-0000-4000-8000-000000000000", "abcd0002-0000-4000-8000-000000000000"
    )
    cli.write_config([{"text": "the second answer"}])
    child = cli.spawn()
    child.sendline("/sessions first")
    child.expect(stored[:8])
    child.expect(PROMPT)
    child.sendline("/resume abcd")
    child.expect("2 sessions start with 'abcd'")
    child.expect("abcd0002-0000-4000-8000-000000000000")
    child.expect(PROMPT)
    child.sendline(f"/resume {stored[:6]}")
    child.expect("the first question")
    child.expect("the first answer")
    child.expect(r"context \d+")
    child.expect(PROMPT)
    child.sendline("and now?")
    child.expect("the second answer")
    child.expect(PROMPT)
    child.sendline("/resume zzzz")
    child.expect("SESSION_NOT_FOUND")
    child.expect(PROMPT)
    quit_chat(child)
    users = [e for e in cli.stored(stored) if isinstance(e.payload, UserMessage)]
    assert len(users) == 2
    # The session opened at start and left without a message is not kept.
    assert len(cli.session_ids()) == 3


def test_new_and_model_start_new_sessions_and_memories_lists_what_closing_saved(
    cli: Cli,
) -> None:
    saved = '{"mutations": [{"op": "create", "content": "Prod DB is on db-7"}]}'
    cli.write_config([{"text": "one"}, {"text": saved}, {"text": "two"}])
    child = cli.spawn()
    child.sendline("/memories")
    child.expect("no long-term memories")
    child.expect(PROMPT)
    child.sendline("the prod db is db-7")
    child.expect("one")
    child.expect(PROMPT)
    child.sendline("/model gpt-9")
    child.expect("MODEL_NOT_SUPPORTED")
    child.expect(PROMPT)
    child.sendline("/model")
    child.expect(r"\* youyou-demo")
    child.expect(PROMPT)
    child.sendline("/new")  # closing extracts long-term memories (the second response)
    child.expect("session ")
    child.expect(PROMPT)
    child.sendline("/memories")
    child.expect("Prod DB is on db-7")
    child.expect(PROMPT)
    child.sendline("hello again")
    child.expect("two")
    child.expect(PROMPT)
    shown = quit_chat(child)
    assert "closing the session (saving long-term memories; Ctrl+C skips it)" in shown
    assert len(cli.session_ids()) == 2


def test_mode_compact_and_usage(cli: Cli) -> None:
    cli.write_config([{"text": "an answer"}, {"text": "Summary: the user said hello."}])
    child = cli.spawn()
    child.sendline("hello")
    child.expect("an answer")
    child.expect(PROMPT)
    child.sendline("/mode context_70_percent")
    child.expect(loose("memory mode: context_70_percent"))
    child.expect(PROMPT)
    child.sendline("/compact")
    child.expect(r"context \d+ / 32,000 tokens")
    child.expect(PROMPT)
    child.sendline("/usage")
    child.expect(loose("memory context_70_percent"))
    child.expect("2 messages")
    child.expect(PROMPT)
    quit_chat(child)


def test_attach_sends_text_and_images_with_the_next_message_and_refuses_bad_ones(
    cli: Cli, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("pod crashlooping\n", encoding="utf-8")
    (tmp_path / "graph.png").write_bytes(PNG)
    (tmp_path / "fake.png").write_text("not an image", encoding="utf-8")
    cli.write_config([{"text": "got them"}])
    child = cli.spawn()
    child.sendline(f"/attach {tmp_path / 'fake.png'}")
    child.expect("INPUT_VALIDATION")
    child.expect(PROMPT)
    child.sendline(f"/attach {tmp_path / 'notes.txt'}")
    child.expect("attached notes.txt")
    child.expect(PROMPT)
    child.sendline(f"/attach {tmp_path / 'graph.png'}")
    child.expect("attached image")
    child.expect(PROMPT)
    child.sendline("what do you see?")
    child.expect("got them")
    child.expect(PROMPT)
    child.sendline("/attach")
    child.expect("no attachments pending")
    child.expect(PROMPT)
    quit_chat(child)
    [user] = cli.user_messages()
    _, file_block, image = user.content
    assert isinstance(file_block, FileContentBlock) and file_block.text == "pod crashlooping\n"
    assert isinstance(image, ImageBlock) and image.mime_type == "image/png"
    assert base64.b64decode(image.data_base64) == PNG


def test_ctrl_c_stops_attaching_a_pipe_no_one_writes_and_the_chat_goes_on(
    cli: Cli, tmp_path: Path
) -> None:
    fifo = tmp_path / "never-written"
    os.mkfifo(fifo)  # opening it for reading waits for a writer that never comes
    cli.write_config([{"text": "still here"}])
    child = cli.spawn()
    child.sendline(f"/attach {fifo}")
    time.sleep(1)
    child.sendintr()
    child.expect(PROMPT)
    assert f"✗ REQUEST_CANCELLED: reading {fifo} was stopped" in screen(child).replace("\n", "")
    child.sendline("are you there?")
    child.expect("still here")
    child.expect(PROMPT)
    quit_chat(child)


def test_skills_lists_and_completes_skill_names(cli: Cli, tmp_path: Path) -> None:
    skill = tmp_path / "skills" / "disk-full"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: disk-full\ndescription: Free disk space on a host\n---\nRun df -h.\n",
        encoding="utf-8",
    )
    cli.write_config([{"text": "runbook followed"}])
    child = cli.spawn("--skills", str(tmp_path / "skills"))
    child.sendline("/skills")
    child.expect("Free disk space on a host")
    child.expect(PROMPT)
    child.send("/disk-")
    child.expect("/disk-full")  # the completion menu is up: Tab now picks its first entry
    child.send("\t")
    child.send(" db-7\r")
    child.expect("runbook followed")
    child.expect(PROMPT)
    quit_chat(child)
    [user] = cli.user_messages()
    assert block_text(user.content[0]) == "/disk-full db-7"
    assert "disk-full" in screen(child)


def test_reasoning_is_collapsed_and_expands_on_request(cli: Cli) -> None:
    cli.write_config([{"text": "The disk is full.", "reasoning": "look at df\nthen du\n"}] * 2)
    child = cli.spawn()
    child.sendline("why is db-1 down?")
    child.expect(loose("(2 lines · /reasoning to expand)"))
    child.expect(PROMPT)
    child.sendline("/reasoning")
    child.expect("then du")
    child.expect(PROMPT)
    child.sendline("/reasoning full")
    child.expect("reasoning is now shown full")
    child.expect(PROMPT)
    child.sendline("again?")
    child.expect("then du")
    child.expect(PROMPT)
    child.sendline("/reasoning sideways")
    child.expect(loose("usage: /reasoning [show|full|brief]"))
    child.expect(PROMPT)
    quit_chat(child)


def test_usage_shows_the_tokens_and_cost_of_this_run(cli: Cli) -> None:
    """The scripted model reports a quarter of the answer's characters as output tokens."""
    cli.write_config(
        [{"text": "a" * 40}, {"text": "b" * 80}],
        extra='\n[[providers.models]]\nid = "priced"\ncontext_window = 32000\n'
        "input_price_per_mtok = 1.0\noutput_price_per_mtok = 10.0\n",
    )
    child = cli.spawn()
    child.sendline("first")
    child.expect(loose("turn 0 in / 10 out · cost 0.000100"))
    child.expect(PROMPT)
    child.sendline("second")
    child.expect(loose("turn 0 in / 20 out · cost 0.000200"))
    child.expect(PROMPT)
    child.sendline("/usage")
    child.expect(loose("this run: 2 turns, 0 in / 30 out · cost 0.000300"))
    child.expect(PROMPT)
    quit_chat(child)
