import pytest

from kernel_kit import MODEL, RecordingTool, build_agent, model
from youyou import (
    AgentBuilder,
    AgentConfig,
    AgentError,
    ErrorCode,
    ScriptedProvider,
    SkillDefinition,
)
from youyou.adapters.memory.in_memory import InMemoryMemoryStorage
from youyou.adapters.storage.memory import InMemorySessionStorage
from youyou.adapters.storage.sql import SqlSessionStorage


async def build_code(builder: AgentBuilder) -> ErrorCode:
    with pytest.raises(AgentError) as info:
        await builder.build()
    return info.value.code


def base(config: AgentConfig | None = None) -> AgentBuilder:
    return AgentBuilder(config or AgentConfig(default_model="m1")).register_model_provider(
        ScriptedProvider(models=[MODEL])
    )


async def test_no_provider() -> None:
    assert await build_code(AgentBuilder(AgentConfig(default_model="m1"))) is (
        ErrorCode.NO_MODEL_PROVIDER
    )


async def test_name_conflicts() -> None:
    dup_provider = base().register_model_provider(
        ScriptedProvider(models=[model("m2")], provider_id="scripted")
    )
    assert await build_code(dup_provider) is ErrorCode.NAME_CONFLICT
    dup_model = base().register_model_provider(ScriptedProvider(models=[MODEL], provider_id="p2"))
    assert await build_code(dup_model) is ErrorCode.NAME_CONFLICT
    dup_tool = base().register_tool(RecordingTool("t")).register_tool(RecordingTool("t"))
    assert await build_code(dup_tool) is ErrorCode.NAME_CONFLICT
    skill = SkillDefinition(name="s", description="d", prompt="p")
    assert await build_code(base().register_skill(skill).register_skill(skill)) is (
        ErrorCode.NAME_CONFLICT
    )


async def test_storage_duplicates() -> None:
    two_sessions = (
        base()
        .register_session_storage(InMemorySessionStorage())
        .register_session_storage(InMemorySessionStorage())
    )
    assert await build_code(two_sessions) is ErrorCode.STORAGE_DUPLICATE
    two_memories = (
        base()
        .register_memory_storage(InMemoryMemoryStorage())
        .register_memory_storage(InMemoryMemoryStorage())
    )
    assert await build_code(two_memories) is ErrorCode.STORAGE_DUPLICATE


async def test_session_leases_once_with_a_session_storage_and_a_positive_lifetime(
    sqlite_url: str,
) -> None:
    storage = await SqlSessionStorage.open(sqlite_url)
    try:
        leases = storage.leases()
        twice = (
            base()
            .register_session_storage(storage)
            .register_session_leases(leases, holder="a")
            .register_session_leases(leases, holder="b")
        )
        assert await build_code(twice) is ErrorCode.STORAGE_DUPLICATE
        alone = base().register_session_leases(leases, holder="a")
        assert await build_code(alone) is ErrorCode.INVALID_CONFIG
        with pytest.raises(AgentError) as info:
            base().register_session_leases(leases, holder="a", ttl_s=0)
        assert info.value.code is ErrorCode.INVALID_CONFIG
        agent = (
            await base()
            .register_session_storage(storage)
            .register_session_leases(leases, holder="a")
            .build()
        )
        await agent.shutdown()
    finally:
        await storage.close()


async def test_config_errors() -> None:
    assert await build_code(base(AgentConfig(default_model="nope"))) is (
        ErrorCode.INVALID_DEFAULT_MODEL
    )
    bypassed = AgentConfig(default_model="m1").model_copy(update={"tool_timeout_ms": 0})
    assert await build_code(base(bypassed)) is ErrorCode.INVALID_CONFIG


async def test_skill_contract_and_dependencies() -> None:
    bad_name = SkillDefinition(name="Bad_Name", description="d", prompt="p")
    assert await build_code(base().register_skill(bad_name)) is ErrorCode.INVALID_CONFIG
    needs = SkillDefinition(
        name="deploy", description="d", prompt="p", tool_dependencies=("kubectl",)
    )
    assert await build_code(base().register_skill(needs)) is ErrorCode.SKILL_DEPENDENCY_NOT_MET
    ok = base().register_skill(needs).register_tool(RecordingTool("kubectl"))
    await ok.build()


async def test_catalog_only_with_session_storage() -> None:
    agent, _ = await build_agent()
    assert agent.session_catalog() is None
    with_storage, _ = await build_agent(
        configure=lambda b: b.register_session_storage(InMemorySessionStorage())
    )
    assert with_storage.session_catalog() is not None
    assert [m.model_id for m in with_storage.models()] == ["m1"]
