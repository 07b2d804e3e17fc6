import pytest

from kernel_kit import block_text, model
from youyou import AgentError, ErrorCode, ModelInfo, ProviderCapability, TextBlock, ToolDescriptor
from youyou.application.request_builder import ChatRequestBuilder, RequestBuildOptions
from youyou.domain.context import VisibleMessage
from youyou.domain.ledger import (
    AssistantMessage,
    SystemMessage,
    ToolCall,
    ToolCallRecord,
    ToolOutput,
    ToolResult,
    ToolResultRecord,
    UserMessage,
)
from youyou.domain.model import ChatRequest
from youyou.domain.turn import RequestContext

TOOL = ToolDescriptor(name="t", description="d")


def vm(seq: int | None, payload: object) -> VisibleMessage:
    return VisibleMessage(seq, payload)  # type: ignore[arg-type]


def user(t: str) -> UserMessage:
    return UserMessage(content=(TextBlock(text=t),))


HISTORY = [
    vm(2, user("old")),
    vm(3, AssistantMessage(content=(TextBlock(text="reply"),))),
    vm(4, user("now")),
]
CALL = ToolCall(
    call=ToolCallRecord(
        call_id="c1", tool_name="t", requested_arguments={"a": 0}, effective_arguments={"a": 1}
    )
)
RESULT = ToolResult(
    result=ToolResultRecord(call_id="c1", tool_name="t", output=ToolOutput(content="res"))
)


def context(visible: list[VisibleMessage], post: list[VisibleMessage]) -> RequestContext:
    """``visible`` ends with the anchor; ``post`` follows it (same list when empty, as live)."""
    full = [*visible, *post] if post else visible
    return RequestContext(full, len(visible) - 1, ("<skill>s</skill>",))


def test_order_is_pre_anchor_anchor_augmentation_post_anchor() -> None:
    builder = ChatRequestBuilder()
    post = [
        vm(5, AssistantMessage(content=(TextBlock(text="checking"),))),
        vm(6, CALL),
        vm(7, RESULT),
    ]
    request = builder.build(
        model=model(),
        system_prompt="sys",
        context=context(HISTORY, post),
        tools=[TOOL],
        options=RequestBuildOptions(allow_tools=True),
    )
    roles = [m.role.value for m in request.messages]
    assert roles == ["user", "assistant", "user", "system", "assistant", "tool"]
    assert block_text(request.messages[3].content[0]) == "<skill>s</skill>"
    merged = request.messages[4]
    assert block_text(merged.content[0]) == "checking"
    assert [(c.call_id, c.arguments) for c in merged.tool_calls] == [("c1", {"a": 1})]
    assert request.messages[5].tool_call_id == "c1"
    assert request.tools == (TOOL,)
    assert request.system_prompt == "sys"
    assert (request.temperature, request.max_tokens, request.reasoning_effort) == (None,) * 3


def build_plain(builder: ChatRequestBuilder, info: ModelInfo, *, allow_tools: bool) -> ChatRequest:
    return builder.build(
        model=info,
        system_prompt="s",
        context=context(HISTORY, []),
        tools=[TOOL],
        options=RequestBuildOptions(allow_tools=allow_tools),
    )


def test_allow_tools_false_sends_no_tools() -> None:
    assert build_plain(ChatRequestBuilder(), model(), allow_tools=False).tools == ()


def test_tools_need_tool_use_only_when_allowed() -> None:
    chat_only = model("c", caps=frozenset({ProviderCapability.STREAMING}))
    builder = ChatRequestBuilder()
    with pytest.raises(AgentError) as info:
        build_plain(builder, chat_only, allow_tools=True)
    assert info.value.code is ErrorCode.MODEL_NOT_SUPPORTED
    assert build_plain(builder, chat_only, allow_tools=False).tools == ()


def test_incremental_prefix_matches_a_fresh_conversion() -> None:
    visible = list(HISTORY)
    cached = ChatRequestBuilder()
    for seq in range(5, 40):
        visible.append(vm(seq, user(f"m{seq}") if seq % 2 else SystemMessage(content=f"s{seq}")))
        ctx = context(visible, [])
        fresh, incremental = (
            builder.build(
                model=model(),
                system_prompt="s",
                context=ctx,
                tools=[],
                options=RequestBuildOptions(True),
            )
            for builder in (ChatRequestBuilder(), cached)
        )
        assert incremental.messages == fresh.messages
