"""The ledger's payload and content classes are final: per-event code dispatches on them by
exact class, so a subclass would silently fall out of the projection."""

from __future__ import annotations

import typing

import pytest

from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.ledger import (
    AssistantMessage,
    LedgerEvent,
    Metadata,
    SessionEventPayload,
    SystemMessage,
    ToolCall,
    ToolResult,
    UserMessage,
    is_message,
)

PAYLOADS = typing.get_args(typing.get_args(SessionEventPayload)[0])
BLOCKS = (TextBlock, ImageBlock, FileContentBlock)


def test_the_payload_union_is_the_final_classes() -> None:
    assert set(PAYLOADS) == {
        UserMessage,
        AssistantMessage,
        ToolCall,
        ToolResult,
        SystemMessage,
        Metadata,
    }


@pytest.mark.parametrize("cls", [*PAYLOADS, *BLOCKS])
def test_payload_and_block_classes_are_final(cls: type) -> None:
    assert getattr(cls, "__final__", False) is True
    assert cls.__subclasses__() == []


def test_decoded_events_carry_the_exact_classes() -> None:
    event = LedgerEvent.model_validate_json(
        '{"seq": 1, "timestamp": "2026-01-01T00:00:00Z", "payload": {"kind": "user_message",'
        ' "content": [{"type": "text", "text": "hi"}]}}'
    )
    assert type(event.payload) is UserMessage
    assert type(event.payload.content[0]) is TextBlock


def test_is_message_counts_user_assistant_and_system_messages_only() -> None:
    text = (TextBlock(text="x"),)
    assert is_message(UserMessage(content=text))
    assert is_message(AssistantMessage(content=text))
    assert is_message(SystemMessage(content="x"))
    assert not is_message(Metadata(key="k", value=1))
    assert not is_message(object())
