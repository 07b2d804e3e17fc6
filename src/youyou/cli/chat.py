"""State of one ``youyou chat`` run: the built agent, the current session, pending attachments."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress

from rich.console import Console
from rich.text import Text

from youyou.api.session import SessionHandle
from youyou.bootstrap import BuiltApp
from youyou.cli.approvals import Approver
from youyou.cli.pending_memories import PendingExtractions, extract_pending
from youyou.cli.process import agent_error_text
from youyou.cli.render import RichTurnView, TurnView, context_line
from youyou.cli.runtime import Interrupts, ask_approval, on_interrupt, run_turn
from youyou.cli.transcript import SHORT_ID, print_transcript
from youyou.config import ModelPrice, memory_mode_name
from youyou.domain.config import SessionConfig
from youyou.domain.content import ContentBlock, FileContentBlock, ImageBlock, TextBlock
from youyou.domain.errors import AgentError, ErrorCode
from youyou.domain.model import ProviderCapability, Usage
from youyou.domain.turn import OutcomeStatus, TurnOutcome
from youyou.ports.tool import ToolHandler

RESUME_TRANSCRIPT_EVENTS = 40
logger = logging.getLogger(__name__)


class Chat:
    def __init__(
        self,
        app: BuiltApp,
        console: Console,
        session: SessionHandle,
        *,
        interrupts: Interrupts,
        close_timeout_s: float,
        pending: PendingExtractions | None = None,
        approver: Approver | None = None,
    ) -> None:
        """``close_timeout_s``: how long closing a session waits for its memory extraction;
        ``pending``: where an extraction that takes longer is handed to the next start;
        ``approver``: who decides tool calls that wait for approval."""
        self.app = app
        self.console = console
        self.session = session
        self.attachments: list[ImageBlock | FileContentBlock] = []
        self.expand_reasoning = False
        self.last_reasoning = ""
        self.interrupts = interrupts
        self.close_timeout_s = close_timeout_s
        self.pending = pending
        self.approver = approver
        self._catching_up: asyncio.Future[None] | None = None
        # The last turn failed in the provider: a memory extraction would wait on it again.
        self.provider_failed = False
        # A storage failure was shown: closing meets the same cause and says it only once.
        self.storage_failed = False
        self._told_failures: dict[str, str] = {}
        # What the completed turns of this run used (``/usage``), across sessions.
        self.used = Usage()
        self.turns_used = 0

    @property
    def model_id(self) -> str:
        return self.session.config.pinned.model_id

    @property
    def price(self) -> ModelPrice | None:
        """The session model's prices, when ``[[providers.models]]`` has them."""
        return self.app.prices.get(self.model_id)

    def banner(self) -> Text:
        return Text.assemble(
            ("session ", "dim"),
            (self.session.session_id[:SHORT_ID], "bold"),
            ("  model ", "dim"),
            (self.model_id, "bold"),
            ("  memory ", "dim"),
            memory_mode_name(self.session.memory_mode),
            *(
                ()
                if ProviderCapability.TOOL_USE in self.session.model.capabilities
                else (("  tools unavailable with this model", "yellow"),)
            ),
        )

    def show_error(self, error: AgentError) -> None:
        self.storage_failed |= error.code is ErrorCode.STORAGE_ERROR
        self.console.print(agent_error_text(error))

    async def send(self, text: str) -> TurnOutcome | None:
        """One turn; errors are shown, never raised. Attachments go out with this message."""
        blocks: list[ContentBlock] = [TextBlock(text=text), *self.attachments]
        try:
            view = RichTurnView(
                self.console, expand_reasoning=self.expand_reasoning, price=self.price
            )
            outcome = await self.run(blocks, view)
        except AgentError as error:
            self.show_error(error)
            return None
        if view.usage is not None:
            self.used = self.used + view.usage
            self.turns_used += 1
        self.last_reasoning = view.reasoning_log
        self.attachments.clear()
        if outcome.status is not OutcomeStatus.COMPLETED:
            self.console.print(context_line(self.session.usage()))
        return outcome

    async def run(self, blocks: list[ContentBlock] | None, view: TurnView) -> TurnOutcome:
        """One turn as the session's only writer (the kernel raises SESSION_BUSY while another
        process writes it, and reloads a session another process appended to); ``None``
        continues a stopped turn whose calls are decided."""
        reloads = self.session.reloads
        outcome = await run_turn(
            self.session,
            blocks,
            view,
            self.interrupts,
            self.tools,
            started=lambda: self._tell_reload(reloads),
            approver=self.approver,
        )
        failed = outcome.error.code if outcome.error is not None else None
        self.provider_failed = failed is ErrorCode.PROVIDER_ERROR
        self.storage_failed |= failed is ErrorCode.STORAGE_ERROR  # shown by the turn's view
        return outcome

    async def finish_stopped_turn(self, view: TurnView | None = None) -> None:
        """A resumed session whose turn stopped while calls waited for approval: ask about
        them, then go on with the turn (Ctrl+C at a question leaves it for later)."""
        if self.approver is None:
            return
        for request in self.session.pending_approvals():
            self.console.print(Text("this session's last turn waits for approval", style="yellow"))
            if not await ask_approval(self.session, None, self.approver, request):
                return
        if self.session.can_continue_turn:
            try:
                await self.run(None, view or RichTurnView(self.console))
            except AgentError as error:
                self.show_error(error)

    async def tools(self) -> tuple[ToolHandler, ...]:
        """The tools offered per send; an MCP server that did not start is said once (and
        again when its reason changes): which one, how it is started and why."""
        tools = await self.app.tools()
        for server_id, why in self.app.mcp.failures.items():
            if self._told_failures.get(server_id) != why:
                self._told_failures[server_id] = why
                self.console.print(Text(f"{why}; its tools are left out", style="yellow"))
        return tools

    async def start_tools(self) -> None:
        """Start the MCP servers now (for the start-up of an interactive chat), not on the
        first message; only for a model with tool use, the only one they are offered to."""
        if self.app.mcp and ProviderCapability.TOOL_USE in self.session.model.capabilities:
            with self.console.status("starting the MCP servers…"):
                await self.tools()

    async def exclusive(self, action: Callable[[SessionHandle], Awaitable[None]]) -> None:
        """A compaction or mode switch, under the same rule as a turn."""
        reloads = self.session.reloads
        try:
            await action(self.session)
        finally:
            self._tell_reload(reloads)

    def _tell_reload(self, reloads_before: int) -> None:
        if self.session.reloads != reloads_before:
            self.console.print(
                Text("the session changed in another process; reloading it", style="dim")
            )

    async def busy(self, note: str, action: Callable[[], Awaitable[None]]) -> None:
        """Run a slow step under a spinner; Ctrl+C meanwhile only says to wait."""

        def refuse() -> None:
            self.console.print(Text("still working; it will finish shortly", style="dim"))

        with on_interrupt(refuse), self.console.status(note):
            await action()

    async def close_session(self) -> bool:
        """Close (extracting long-term memories); a session with no message is not kept.
        Returns whether it is kept.

        Extraction is skipped when the provider has just failed or SIGTERM asked to end, and
        bounded by ``close_timeout_s`` otherwise; Ctrl+C or SIGTERM stops it at once. What it
        did not extract stays in the ledger for when the session is resumed and closed again.
        """
        session = self.session
        if session.is_closed:
            return session.summary is not None and session.summary.message_count > 0
        extract = (
            self.app.memory_storage is not None
            and not self.provider_failed
            and not self.interrupts.terminated
        )
        note = (
            "closing the session (saving long-term memories; Ctrl+C skips it)…"
            if extract
            else "closing the session…"
        )
        with self.console.status(note):
            try:
                if extract:
                    await self._close_extracting(session)
                else:
                    await session.close(extract_memories=False)
            except AgentError as error:
                if error.code is not ErrorCode.STORAGE_ERROR or not self.storage_failed:
                    raise
                # The database failed the turn the same way (read-only, full): one line.
                logger.warning("closing session %s: %s", session.session_id, error.message)
                await session.close(extract_memories=False)
        summary = session.summary
        if summary is None or summary.message_count == 0:
            with suppress(AgentError):  # nothing was stored for it
                await self.app.session_storage.delete_session(session.session_id)
            return False
        return True

    async def _close_extracting(self, session: SessionHandle) -> None:
        """Close with extraction, bounded by ``close_timeout_s``: what does not finish in time
        is handed to the next start (see ``pending_memories``), said only if that fails."""
        closing = asyncio.ensure_future(session.close())
        with self.interrupts.routed(closing.cancel):
            await asyncio.wait({closing}, timeout=self.close_timeout_s)
        why = "stopped"
        if not closing.done():
            why = f"it took longer than {self.close_timeout_s:g} s"
            closing.cancel()
            await asyncio.wait({closing})
            if self.pending is not None and self.pending.add(session.session_id):
                return  # closed by the cancel; the next start extracts it
        if not closing.cancelled():
            closing.result()  # a plugin's veto or a storage failure
            if self.pending is not None:
                self.pending.remove(session.session_id)
            return
        self.console.print(Text(f"long-term memories were not saved ({why})", style="yellow"))
        await session.close(extract_memories=False)

    def catch_up(self) -> None:
        """Start extracting, in the background, the sessions earlier chats handed on."""
        if self.pending is not None and self.app.memory_storage is not None:
            self._catching_up = asyncio.ensure_future(
                extract_pending(self.app, self.pending, self.session.session_id)
            )

    async def finish_catch_up(self) -> None:
        """Wait for the background extraction as long as a close waits for its own (Ctrl+C or
        SIGTERM stops it at once); what it did not finish keeps its marker for next time."""
        task, self._catching_up = self._catching_up, None
        if task is None:
            return
        if not task.done() and not self.interrupts.terminated:
            with (
                self.interrupts.routed(task.cancel),
                self.console.status("saving long-term memories of earlier sessions…"),
            ):
                await asyncio.wait({task}, timeout=self.close_timeout_s)
        task.cancel()
        await asyncio.wait({task})
        if not task.cancelled() and task.exception() is not None:
            logger.warning("memory extraction of earlier sessions", exc_info=task.exception())

    async def replace_session(self, opener: Callable[[], Awaitable[SessionHandle]]) -> None:
        """Close the current session and open another; if that fails, start a fresh one."""
        await self.close_session()
        try:
            self.session = await opener()
        except AgentError as error:
            self.show_error(error)
            self.session = await self.app.agent.new_session(SessionConfig(model_id=self.model_id))
        self.attachments.clear()
        self.console.print(self.banner())

    async def new_session(self, model_id: str | None = None) -> None:
        model = model_id or self.model_id
        await self.replace_session(
            lambda: self.app.agent.new_session(SessionConfig(model_id=model))
        )

    async def resume(self, session_id: str) -> None:
        await self.replace_session(lambda: self.app.agent.resume_session(session_id))
        if self.session.session_id == session_id:
            await self.show_history()
            await self.finish_stopped_turn()

    async def show_history(self) -> None:
        """The latest stored events of the session (compacted ones included), then usage."""
        session_id = self.session.session_id
        events = await self.app.session_storage.load_events(session_id)
        shown = events[-RESUME_TRANSCRIPT_EVENTS:]
        if len(shown) < len(events):
            self.console.print(
                Text(
                    f"… {len(events) - len(shown)} earlier events "
                    f"(youyou sessions show {session_id[:SHORT_ID]})",
                    style="dim",
                )
            )
        print_transcript(self.console, shown)
        self.console.print(context_line(self.session.usage()))
