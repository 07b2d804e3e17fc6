"""How ``youyou chat`` runs a turn: Ctrl+C and SIGTERM routed to what runs, approvals asked
at the terminal, blocking reads that a signal can abandon."""

from __future__ import annotations

import asyncio
import concurrent.futures
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import TypeVar

from youyou.api.running_turn import RunningTurn
from youyou.api.session import SessionHandle, UserInput
from youyou.cli.approvals import Approver, decider
from youyou.cli.process import agent_error_text, err_console
from youyou.cli.render import TurnView
from youyou.config import Settings
from youyou.domain.approvals import PendingApproval
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource
from youyou.domain.events import ToolApprovalRequested
from youyou.domain.model import ProviderCapability
from youyou.domain.turn import TurnOutcome
from youyou.ports.tool import ToolHandler
from youyou.ports.turn import TurnOptions

T = TypeVar("T")


def is_offline_model(settings: Settings, model_id: str) -> bool:
    """The built-in demo answers (a scripted provider without a script of its own)."""
    return any(
        provider.offline_demo and model_id in {m.model_id for m in provider.model_infos()}
        for provider in settings.providers
    )


OFFLINE_NOTE = (
    "Using the offline demo model. To chat with a real model, add a [[providers]] table to "
    "youyou.toml and pass --config PATH or set YOUYOU_CONFIG (see docs/cli.md)."
)


@contextmanager
def _on_signal(signum: signal.Signals, callback: Callable[[], object]) -> Iterator[None]:
    """Route ``signum`` to ``callback`` while the block runs, then restore the handler.

    Where the loop cannot take signal handlers (Windows), the signal keeps its default effect.
    """
    loop = asyncio.get_running_loop()
    previous = signal.getsignal(signum)
    try:
        loop.add_signal_handler(signum, callback)
    except (NotImplementedError, RuntimeError):
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signum)
        with suppress(TypeError, ValueError):
            signal.signal(signum, previous)


def on_interrupt(callback: Callable[[], object]) -> AbstractContextManager[None]:
    """Route Ctrl+C (SIGINT) to ``callback`` while the block runs."""
    return _on_signal(signal.SIGINT, callback)


class Interrupts:
    """Ctrl+C and SIGTERM during one ``youyou chat`` run.

    Ctrl+C stops what the chat is doing now (the streaming answer, the memory extraction of a
    close). SIGTERM, which ``timeout``, systemd and CI send, stops it the same way and then ends
    the chat: the partial answer is stored as incomplete, the session is closed without
    extracting memories and the process exits with ``EXIT_TERMINATED``.
    """

    def __init__(self) -> None:
        self.terminated = False
        self._targets: list[Callable[[], object]] = []

    @contextmanager
    def installed(self) -> Iterator[None]:
        """SIGTERM handling for the whole run (before it, SIGTERM ends the process at once)."""
        with _on_signal(signal.SIGTERM, self._terminate):
            yield

    def _terminate(self) -> None:
        self.terminated = True
        if self._targets:
            self._targets[-1]()

    @contextmanager
    def on_terminate(self, callback: Callable[[], object]) -> Iterator[None]:
        """SIGTERM calls ``callback`` while the block runs (Ctrl+C is left alone)."""
        self._targets.append(callback)
        try:
            yield
        finally:
            self._targets.remove(callback)

    @contextmanager
    def routed(self, callback: Callable[[], object]) -> Iterator[None]:
        """Ctrl+C and SIGTERM call ``callback`` while the block runs."""
        with self.on_terminate(callback), on_interrupt(callback):
            yield

    async def stoppable(self, work: Awaitable[T], what: str) -> T:
        """``work``, which Ctrl+C or SIGTERM stops at once: then REQUEST_CANCELLED naming
        ``what`` ("reading /dev/stdin")."""
        task = asyncio.ensure_future(work)
        try:
            with self.routed(task.cancel):
                if self.terminated:
                    task.cancel()
                await asyncio.wait({task})
        finally:
            task.cancel()  # only when this caller was cancelled itself
        if task.cancelled():
            raise AgentError(
                ErrorCode.REQUEST_CANCELLED, f"{what} was stopped", source=ErrorSource.AGENT
            )
        return task.result()


async def in_daemon_thread(work: Callable[[], T]) -> T:
    """``work()`` on a daemon thread of its own, for a blocking read that may never end (a
    pipe that is never closed): neither a thread nor a read can be interrupted, so a cancelled
    caller leaves the thread behind (it ends with the read, or with the process) instead of
    joining it at exit as the loop's default executor would."""
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(work())
        except Exception as exc:  # raised in the caller's task
            future.set_exception(exc)

    threading.Thread(target=run, name="youyou-read", daemon=True).start()
    return await asyncio.wrap_future(future)


async def run_turn(
    session: SessionHandle,
    user_input: UserInput | None,
    view: TurnView,
    interrupts: Interrupts,
    extra_tools: Callable[[], Awaitable[tuple[ToolHandler, ...]]] | None = None,
    started: Callable[[], object] = lambda: None,
    approver: Approver | None = None,
) -> TurnOutcome:
    """Stream one turn into ``view``; Ctrl+C or SIGTERM cancels it (the partial answer is kept).

    ``extra_tools`` (MCP tools, ``search_knowledge``) is asked on every send, for a model
    with tool use only. ``started`` is called once the turn has started, before its events
    are shown. ``user_input=None`` continues a stopped turn whose calls are decided. A call
    waiting for approval is put to ``approver`` (without one it waits for its timeout).
    A refusal before the turn starts (INPUT_VALIDATION, SKILL_NOT_FOUND…) raises AgentError.
    """
    tool_use = ProviderCapability.TOOL_USE in session.model.capabilities
    tools = await extra_tools() if tool_use and extra_tools is not None else ()
    options = TurnOptions(offer_tools=tool_use, extra_tools=tools)
    turn = (
        await session.continue_turn(options=options)
        if user_input is None
        else await session.send_message(user_input, options=options)
    )
    started()
    with interrupts.routed(turn.cancel):
        if interrupts.terminated:  # SIGTERM came before the turn could be cancelled
            turn.cancel()
        try:
            async for event in turn.events:
                view.handle(event)
                payload = event.payload
                if isinstance(payload, ToolApprovalRequested) and approver is not None:
                    await ask_approval(session, turn, approver, payload, view)
        finally:
            view.close()
        return await turn.join()


async def ask_approval(
    session: SessionHandle,
    turn: RunningTurn | None,
    approver: Approver,
    request: PendingApproval,
    view: TurnView | None = None,
) -> bool:
    """Put one waiting call to the person; False when there was no answer (Ctrl+C), which
    cancels ``turn``. The question is withdrawn when the call stops waiting meanwhile (the
    turn was cancelled, e.g. by SIGTERM, the timeout or someone else decided)."""
    if view is not None:
        view.close()  # the question needs the terminal: the live region stops meanwhile
    asking = asyncio.ensure_future(approver.ask(request))
    watching = asyncio.ensure_future(_until_decided_elsewhere(session, request.call_id))
    try:
        await asyncio.wait({asking, watching}, return_when=asyncio.FIRST_COMPLETED)
    except BaseException:
        asking.cancel()
        raise
    finally:
        watching.cancel()
    if not asking.done():  # cancelled (SIGTERM), timed out, or decided by someone else
        asking.cancel()
        await asyncio.wait({asking})
        err_console.print(f"{request.tool_name}: no longer waits for an answer", style="dim")
        return True
    answer = asking.result()
    if answer is None:
        if turn is not None:
            turn.cancel()
        return False
    try:
        await session.decide_approval(
            request.call_id,
            answer.decision,
            decided_by=decider(),
            reason=answer.reason,
            remember=answer.remember,
        )
    except AgentError as error:
        if error.code is not ErrorCode.APPROVAL_ALREADY_DECIDED:
            raise
        err_console.print(agent_error_text(error))
    return True


async def _until_decided_elsewhere(session: SessionHandle, call_id: str) -> None:
    """Returns once the call no longer waits for a decision from here (the kernel tells no
    one in particular: the session's list is read a few times a second)."""
    while True:
        if all(p.call_id != call_id for p in session.pending_approvals()):
            return
        await asyncio.sleep(0.2)
