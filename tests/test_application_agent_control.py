import asyncio

import pytest

from kernel_kit import build_agent, text
from youyou import AgentConfig, AgentError, ErrorCode
from youyou.application.agent_control import AgentControl
from youyou.domain.lifecycle import LifecycleState


def test_claim_commit_release_and_busy() -> None:
    control: AgentControl[str] = AgentControl(1)
    reservation = control.claim("s1")
    with pytest.raises(AgentError) as info:
        control.claim("s2")
    assert info.value.code is ErrorCode.SESSION_BUSY
    control.commit(reservation, "runtime-1")
    assert control.active_runtimes() == ["runtime-1"]
    control.release("s1")
    control.claim("s2")


def test_rollback_frees_only_its_own_reservation() -> None:
    control: AgentControl[str] = AgentControl(2)
    first = control.claim("s1")
    control.claim("s2")
    control.rollback("not-a-reservation")
    control.rollback(first)
    assert not control.is_claimed("s1")
    assert control.is_claimed("s2")


def test_same_session_cannot_be_claimed_twice_even_with_capacity() -> None:
    control: AgentControl[str] = AgentControl(5)
    control.claim("s1")
    with pytest.raises(AgentError) as info:
        control.claim("s1")
    assert info.value.code is ErrorCode.SESSION_BUSY


def test_no_claim_after_shutdown_begins() -> None:
    control: AgentControl[str] = AgentControl(1)
    assert control.begin_shutdown()
    assert not control.begin_shutdown()
    with pytest.raises(AgentError) as info:
        control.claim("s1")
    assert info.value.code is ErrorCode.AGENT_SHUTDOWN
    control.finish_shutdown()
    assert control.lifecycle is LifecycleState.SHUTDOWN


async def test_shutdown_racing_new_session_never_leaves_a_session_after_shutdown() -> None:
    for _ in range(20):
        agent, _ = await build_agent(
            [text("x")], config=AgentConfig(default_model="m1", max_active_sessions=8)
        )
        results = await asyncio.gather(
            *(agent.new_session() for _ in range(4)),
            agent.shutdown(),
            *(agent.new_session() for _ in range(4)),
            return_exceptions=True,
        )
        assert agent.lifecycle is LifecycleState.SHUTDOWN
        for result in results:
            if isinstance(result, BaseException):
                assert isinstance(result, AgentError)
                assert result.code is ErrorCode.AGENT_SHUTDOWN
            elif result is not None:
                assert result.is_closed  # created before shutdown, then closed by it
        with pytest.raises(AgentError) as info:
            await agent.new_session()
        assert info.value.code is ErrorCode.AGENT_SHUTDOWN


async def test_default_allows_one_active_session_and_config_allows_more() -> None:
    agent, _ = await build_agent()
    first = await agent.new_session()
    with pytest.raises(AgentError) as info:
        await agent.new_session()
    assert info.value.code is ErrorCode.SESSION_BUSY
    await first.close()
    await agent.new_session()
    many, _ = await build_agent(config=AgentConfig(default_model="m1", max_active_sessions=3))
    sessions = [await many.new_session() for _ in range(3)]
    assert len({s.session_id for s in sessions}) == 3
