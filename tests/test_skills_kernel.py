"""Skills end to end through a real agent: explicit ``/name`` and ``load_skill``.

Every assertion is made on what the kernel really sent: ``provider.requests``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kernel_kit import RecordingTool, block_text, build_agent, model, text
from plugin_kit import ScriptedPlugin
from youyou import (
    AgentBuilder,
    AgentConfig,
    AgentError,
    ErrorCode,
    ScriptedResponse,
    SkillDefinition,
    TurnOptions,
)
from youyou.adapters.storage.memory import InMemorySessionStorage
from youyou.adapters.tools.load_skill import LoadSkillTool, render_skill_catalog
from youyou.domain.content import FileContentBlock, ImageBlock, TextBlock
from youyou.domain.hooks import Continue, HookKind
from youyou.domain.ledger import Metadata, ToolOutput, UserMessage
from youyou.domain.model import ChatRequest, ModelMessageRole, ProviderErrorKind
from youyou.domain.templates import DEFAULT_COMPACT_PROMPT
from youyou.domain.turn import OutcomeStatus

PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAA"
    "BJRU5ErkJggg=="
)
REVIEW = SkillDefinition(
    name="review",
    description="Review code changes",
    prompt="REVIEW-BODY: read the diff line by line.",
)
COMMIT = SkillDefinition(
    name="commit",
    description="Write a commit message",
    prompt="COMMIT-BODY: imperative mood, 50 characters.",
)
HIDDEN = SkillDefinition(
    name="release",
    description="Cut a release",
    prompt="RELEASE-BODY: tag and publish.",
    allow_implicit_invocation=False,
)


def skill_xml(skill: SkillDefinition) -> str:
    return f"<skill>\n<name>{skill.name}</name>\n{skill.prompt}\n</skill>"


def with_skills(*skills: SkillDefinition, storage: InMemorySessionStorage | None = None) -> Any:
    def apply(builder: AgentBuilder) -> AgentBuilder:
        for skill in skills:
            builder.register_skill(skill)
        if storage is not None:
            builder.register_session_storage(storage)
        return builder

    return apply


def system_texts(request: ChatRequest) -> list[str]:
    """Texts of the system messages inside ``messages`` (not the system prompt)."""
    return [block_text(m.content[0]) for m in request.messages if m.role is ModelMessageRole.SYSTEM]


def after_user(request: ChatRequest, user_text: str, count: int) -> list[str]:
    """The ``count`` message texts right after the user message ``user_text``."""
    texts = [" ".join(getattr(b, "text", "") for b in m.content) for m in request.messages]
    index = texts.index(user_text)
    return texts[index + 1 : index + 1 + count]


def chat_requests(requests: Sequence[ChatRequest]) -> list[ChatRequest]:
    return [r for r in requests if r.system_prompt != DEFAULT_COMPACT_PROMPT]


async def test_explicit_skill_keeps_the_user_message_and_audits_the_invocation() -> None:
    agent, provider = await build_agent([text("reviewed")], configure=with_skills(REVIEW, COMMIT))
    session = await agent.new_session()
    message = "/commit and /review the change, then /commit"
    outcome = await (await session.send_message(message)).join()

    assert outcome.status is OutcomeStatus.COMPLETED
    user, audit = session.events[1].payload, session.events[2].payload
    assert user == UserMessage(content=(TextBlock(text=message),))
    assert audit == Metadata(
        key="skill_invocations", value=[{"skill_name": "commit"}, {"skill_name": "review"}]
    )
    (request,) = provider.requests
    assert after_user(request, message, 2) == [skill_xml(COMMIT), skill_xml(REVIEW)]
    assert [m.role for m in request.messages] == [
        ModelMessageRole.USER,
        ModelMessageRole.SYSTEM,
        ModelMessageRole.SYSTEM,
    ]
    assert "REVIEW-BODY" not in request.system_prompt


async def test_turn_start_hooks_see_the_resolved_skills() -> None:
    plugin = ScriptedPlugin("watch", {HookKind.TURN_START: Continue()})
    agent, _ = await build_agent(
        [text("ok")],
        configure=lambda b: with_skills(REVIEW, COMMIT)(b).register_plugin(plugin),
    )
    session = await agent.new_session()
    await (await session.send_message("/review then /commit")).join()
    (payload,) = plugin.received(HookKind.TURN_START)
    assert payload.resolved_skills == ("review", "commit")
    assert payload.user_input == (TextBlock(text="/review then /commit"),)


async def test_the_skill_is_reapplied_on_every_request_of_the_turn() -> None:
    tool = RecordingTool("grep")
    agent, provider = await build_agent(
        [
            text("first answer"),
            ScriptedResponse.tool_calls([("c1", "grep", {"x": 1})]),
            ScriptedResponse.error(ProviderErrorKind.CONTEXT_LENGTH_EXCEEDED, "too long"),
            text("the summary"),
            ScriptedResponse.tool_calls([("c2", "grep", {"x": 2})]),
            text("final"),
        ],
        tools=[tool],
        configure=with_skills(REVIEW),
    )
    session = await agent.new_session()
    await (await session.send_message("earlier question")).join()
    turn = await session.send_message("/review now")
    events = await turn.collect()

    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    assert [e.payload.mode for e in events if e.payload.type == "context_compacted"] == ["summary"]
    requests = chat_requests(provider.requests)[1:]
    assert len(requests) == 4  # tool call, overflow, retry after compaction, final
    for request in requests:
        assert system_texts(request).count(skill_xml(REVIEW)) == 1
        assert after_user(request, "/review now", 1) == [skill_xml(REVIEW)]
    final = requests[-1]
    assert "the summary" in block_text(final.messages[0].content[0])
    assert [m.role for m in final.messages][-6:] == [
        ModelMessageRole.USER,
        ModelMessageRole.SYSTEM,
        ModelMessageRole.ASSISTANT,
        ModelMessageRole.TOOL,
        ModelMessageRole.ASSISTANT,
        ModelMessageRole.TOOL,
    ]
    assert "earlier question" not in str(final.messages)


async def test_the_skill_survives_a_threshold_compaction_inside_the_tool_loop() -> None:
    async def big_output(arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(content="z " * 1000)  # shown as ~250 tokens: a quarter of the window

    tool = RecordingTool("grep", behaviour=big_output)
    agent, provider = await build_agent(
        [
            text("first answer"),
            ScriptedResponse.tool_calls([("c1", "grep", {})]),
            text("the summary"),
            text("final"),
        ],
        models=[model(window=1000)],
        tools=[tool],
        configure=with_skills(REVIEW),
    )
    session = await agent.new_session()
    await (await session.send_message("word " * 460)).join()
    turn = await session.send_message("/review now")
    events = await turn.collect()

    assert (await turn.join()).status is OutcomeStatus.COMPLETED
    assert [e.payload.type for e in events].count("context_compacted") == 1
    assert provider.requests[2].system_prompt == DEFAULT_COMPACT_PROMPT
    final = provider.requests[3]
    assert "the summary" in block_text(final.messages[0].content[0])
    assert after_user(final, "/review now", 1) == [skill_xml(REVIEW)]
    assert [m.role for m in final.messages][1:] == [
        ModelMessageRole.USER,
        ModelMessageRole.SYSTEM,
        ModelMessageRole.ASSISTANT,
        ModelMessageRole.TOOL,
    ]


async def test_the_skill_is_gone_next_turn_and_after_resume() -> None:
    storage = InMemorySessionStorage()
    agent, provider = await build_agent(
        [text("one"), text("two"), text("three")],
        configure=with_skills(REVIEW, storage=storage),
    )
    session = await agent.new_session()
    await (await session.send_message("/review this")).join()
    await (await session.send_message("and now?")).join()
    await session.close()
    catalog = agent.session_catalog()
    assert catalog is not None
    resumed = await catalog.resume(session.session_id)
    await (await resumed.send_message("after resume")).join()

    first, second, third = provider.requests
    assert system_texts(first) == [skill_xml(REVIEW)]
    assert system_texts(second) == [] and system_texts(third) == []
    user, assistant = ModelMessageRole.USER, ModelMessageRole.ASSISTANT
    assert [m.role for m in third.messages] == [user, assistant, user, assistant, user]
    audits = [
        e.payload
        for e in resumed.events
        if e.payload.kind == "metadata" and e.payload.key == "skill_invocations"
    ]
    assert audits == [Metadata(key="skill_invocations", value=[{"skill_name": "review"}])]


async def test_explicit_only_skills_stay_out_of_the_skill_list_but_can_be_invoked() -> None:
    agent, provider = await build_agent([text("ok")], configure=with_skills(REVIEW, HIDDEN))
    session = await agent.new_session()
    await (await session.send_message("/release v2")).join()

    prompt = provider.requests[0].system_prompt
    assert "## Skills\n\n### Available skills\n- review: Review code changes\n\n" in prompt
    assert "release" not in prompt and "RELEASE-BODY" not in prompt
    assert system_texts(provider.requests[0]) == [skill_xml(HIDDEN)]


async def test_a_skill_with_a_missing_tool_dependency_fails_the_build() -> None:
    needy = SkillDefinition(
        name="deploy",
        description="Deploy",
        prompt="Run the deploy tool.",
        tool_dependencies=("shell", "deploy_tool"),
    )
    with pytest.raises(AgentError) as caught:
        await build_agent(tools=[RecordingTool("shell")], configure=with_skills(needy))
    assert caught.value.code is ErrorCode.SKILL_DEPENDENCY_NOT_MET
    assert "deploy_tool" in caught.value.message
    await build_agent(
        tools=[RecordingTool("shell"), RecordingTool("deploy_tool")], configure=with_skills(needy)
    )


async def test_an_unknown_leading_skill_is_refused_with_nothing_written() -> None:
    storage = InMemorySessionStorage()
    agent, provider = await build_agent(
        [text("fine")], configure=with_skills(REVIEW, storage=storage)
    )
    session = await agent.new_session()
    before = list(await storage.load_events(session.session_id))

    with pytest.raises(AgentError) as caught:
        await session.send_message("/reveiw my code")

    assert caught.value.code is ErrorCode.SKILL_NOT_FOUND
    assert list(await storage.load_events(session.session_id)) == before
    assert len(session.events) == 1 and provider.requests == []
    assert (await (await session.send_message("ok")).join()).status is OutcomeStatus.COMPLETED


async def test_a_per_turn_skill_is_injected_for_that_turn_only() -> None:
    storage = InMemorySessionStorage()
    agent, provider = await build_agent(
        [text("translated"), text("plain")], configure=with_skills(REVIEW, storage=storage)
    )
    session = await agent.new_session()
    mine = SkillDefinition(name="review", description="Mine", prompt="MY-REVIEW-BODY.")
    translate = SkillDefinition(name="translate", description="T", prompt="TRANSLATE-BODY.")
    options = TurnOptions(skills=(translate, mine))
    await (await session.send_message("/translate and /review it", options=options)).join()

    (request,) = provider.requests
    assert after_user(request, "/translate and /review it", 2) == [
        skill_xml(translate),
        skill_xml(mine),
    ]
    stored = list(await storage.load_events(session.session_id))
    assert "TRANSLATE-BODY" not in str(stored) and "MY-REVIEW-BODY" not in str(stored)
    with pytest.raises(AgentError) as caught:  # another turn's options offer nothing here
        await session.send_message("/translate again")
    assert caught.value.code is ErrorCode.SKILL_NOT_FOUND
    await (await session.send_message("and now?")).join()
    assert system_texts(provider.requests[1]) == []


@pytest.mark.parametrize(
    "blocks",
    [
        [TextBlock(text="check /tmp now")],
        [TextBlock(text="summarize"), FileContentBlock(file_name="n.md", text="/commit\n/nope")],
        [ImageBlock(mime_type="image/png", data_base64=PNG), TextBlock(text="what is this")],
    ],
)
async def test_plain_text_files_and_images_never_trigger_skills(blocks: list[Any]) -> None:
    agent, provider = await build_agent([text("ok")], configure=with_skills(REVIEW, COMMIT))
    session = await agent.new_session()
    outcome = await (await session.send_message(blocks)).join()

    assert outcome.status is OutcomeStatus.COMPLETED
    assert system_texts(provider.requests[0]) == []
    assert [e.payload.kind for e in session.events] == [
        "metadata",
        "user_message",
        "assistant_message",
    ]


# -- progressive disclosure ----------------------------------------------------------------


def disclosure_options(*skills: SkillDefinition) -> TurnOptions:
    return TurnOptions(
        skill_catalog=render_skill_catalog(skills), extra_tools=(LoadSkillTool(skills),)
    )


async def test_the_catalog_lists_names_and_load_skill_returns_the_body() -> None:
    agent, provider = await build_agent(
        [
            ScriptedResponse.tool_calls([("c1", "load_skill", {"skill_name": "review"})]),
            text("done by the skill"),
        ],
        config=AgentConfig(default_model="m1"),
    )
    session = await agent.new_session()
    turn = await session.send_message(
        "look at my diff", options=disclosure_options(REVIEW, COMMIT, HIDDEN)
    )
    events = await turn.collect()

    first, second = provider.requests
    assert "## Available Skills\n- **review**: Review code changes\n" in first.system_prompt
    assert "- **commit**: Write a commit message" in first.system_prompt
    for body in ("REVIEW-BODY", "COMMIT-BODY", "RELEASE-BODY", "release"):
        assert body not in first.system_prompt
    (load_skill,) = first.tools
    assert load_skill.name == "load_skill"
    assert load_skill.parameters_schema["properties"]["skill_name"]["enum"] == ["review", "commit"]
    tool_message = second.messages[-1]
    assert tool_message.role is ModelMessageRole.TOOL
    assert block_text(tool_message.content[0]) == f"Loaded skill: review\n\n{REVIEW.prompt}"
    end = next(e.payload for e in events if e.payload.type == "tool_call_end")
    assert end.output.content == "Loaded skill: review"
    assert system_texts(second) == []  # the body reaches the model only as the tool result


async def test_load_skill_with_an_unknown_name_lists_the_available_names() -> None:
    agent, provider = await build_agent(
        [
            ScriptedResponse.tool_calls([("c1", "load_skill", {"skill_name": "release"})]),
            text("sorry"),
        ],
    )
    session = await agent.new_session()
    await (await session.send_message("ship it", options=disclosure_options(REVIEW, HIDDEN))).join()

    reply = block_text(provider.requests[1].messages[-1].content[0])
    assert "is not available" in reply and "release" in reply
    assert "Skills that can be loaded: review." in reply
    assert "RELEASE-BODY" not in reply
