"""Showing a turn's event stream: live in a terminal, plain in a pipe, or as JSON lines.

In a terminal the answer is streamed raw into a transient Rich ``Live`` region and every
finished paragraph is printed above it once, as Markdown: nothing already printed is redrawn,
so long answers do not flicker and the scrollback keeps the rendered text.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from youyou.adapters.tools.load_skill import DISPLAY_KEY
from youyou.cli.process import error_text
from youyou.config import ModelPrice
from youyou.domain.events import (
    AgentEvent,
    ContextCompacted,
    ContextUsage,
    ErrorEvent,
    ModelWaiting,
    ReasoningDeltaEvent,
    TextDeltaEvent,
    ToolCallEnd,
    ToolCallStart,
    TurnCancelled,
    TurnComplete,
)
from youyou.domain.ledger import ToolOutput
from youyou.domain.model import Usage

WARN_PERCENT = 70.0
DANGER_PERCENT = 95.0
_ARGS_MAX = 80
_RESULT_MAX = 100
_FENCE = "```"


class TurnView(Protocol):
    def handle(self, event: AgentEvent) -> None: ...

    def close(self) -> None:
        """Flush what is pending; called once the stream has ended (or was abandoned)."""


def shorten(text: str, limit: int) -> str:
    """First line, at most ``limit`` characters; an ellipsis marks anything cut."""
    first, _, rest = text.strip().partition("\n")
    if len(first) > limit:
        return first[: limit - 1] + "…"
    return first + (" …" if rest.strip() else "")


def format_arguments(arguments: dict[str, Any]) -> str:
    return shorten(json.dumps(arguments, ensure_ascii=False, separators=(",", ":")), _ARGS_MAX)


def tool_result_line(output: ToolOutput) -> str:
    """What the UI shows of a result: the tool's display line if it gave one (``load_skill``)."""
    display = (output.metadata or {}).get(DISPLAY_KEY)
    return shorten(display if isinstance(display, str) else output.content, _RESULT_MAX)


def usage_text(usage: Usage, cost: float | None, label: str = "turn") -> str:
    """``turn 1,200 in / 85 out`` tokens, and the cost when the model has prices."""
    text = f"{label} {usage.input_tokens:,} in / {usage.output_tokens:,} out"
    return text if cost is None else f"{text} · cost {cost:.6f}"


def context_line(usage: ContextUsage) -> Text:
    style = (
        "red bold"
        if usage.percent >= DANGER_PERCENT
        else ("yellow" if usage.percent >= WARN_PERCENT else "dim")
    )
    return Text(
        f"context {usage.tokens:,} / {usage.window:,} tokens ({usage.percent:.1f} %)", style=style
    )


def waiting_line(payload: ModelWaiting) -> str:
    return f"waiting for the model… {payload.elapsed_s} s"


def split_complete(text: str) -> tuple[str, str]:
    """Split at the last blank line that is not inside a code fence: (finished, pending)."""
    cut = text.rfind("\n\n")
    while cut > 0:
        if text.count(_FENCE, 0, cut) % 2 == 0:
            return text[:cut], text[cut + 2 :]
        cut = text.rfind("\n\n", 0, cut)
    return "", text


@dataclass(slots=True)
class _RunningTool:
    name: str
    arguments: str
    started: float = field(default_factory=time.monotonic)


REASONING_LIVE_LINES = 3


def collapsed_reasoning(reasoning: str) -> Text:
    """One dim line standing for a finished block of reasoning."""
    lines = [line for line in reasoning.strip().splitlines() if line.strip()]
    return Text.assemble(
        ("▸ reasoning: ", "dim"),
        (shorten(lines[0] if lines else "", 80), "dim italic"),
        (f"  ({len(lines)} line{'s' if len(lines) != 1 else ''} · /reasoning to expand)", "dim"),
    )


def live_tail(reasoning: str) -> str:
    """The last few lines of reasoning still streaming."""
    return "\n".join(reasoning.rstrip("\n").splitlines()[-REASONING_LIVE_LINES:])


class RichTurnView:
    """Terminal view: Markdown per finished paragraph, dim reasoning, spinners for tools.

    Reasoning streams live, then collapses to one line (``expand_reasoning`` keeps it all);
    ``reasoning_log`` holds the turn's full reasoning for ``/reasoning``.
    """

    def __init__(
        self,
        console: Console,
        *,
        expand_reasoning: bool = False,
        price: ModelPrice | None = None,
    ) -> None:
        """``price``: the model's, for the cost shown after each turn."""
        self._console = console
        self._expand_reasoning = expand_reasoning
        self._price = price
        self.usage: Usage | None = None  # what the turn used, once it completed
        self.reasoning_log = ""
        self._text = ""
        self._reasoning = ""
        self._tools: dict[str, _RunningTool] = {}
        self._waiting: ModelWaiting | None = None
        self._live = Live(
            console=console,
            transient=True,
            auto_refresh=True,
            refresh_per_second=10,
            redirect_stdout=False,
            redirect_stderr=False,
        )

    def handle(self, event: AgentEvent) -> None:
        # Started on the first event: a turn refused before it starts leaves no live region.
        if not self._live.is_started:
            self._live.start()
        payload = event.payload
        # Replaced by the next notice; any other event means the model has answered (and the
        # notice goes before anything is printed, so it is not drawn again below the print).
        waited, self._waiting = (
            self._waiting,
            payload if isinstance(payload, ModelWaiting) else None,
        )
        if waited is not None and self._waiting is None:
            self._live.update(self._pending(), refresh=True)
        if isinstance(payload, TextDeltaEvent):
            self._flush_reasoning(everything=True)
            self._text += payload.text
            self._flush_text(everything=False)
        elif isinstance(payload, ReasoningDeltaEvent):
            self._reasoning += payload.text
            self.reasoning_log += payload.text
            if self._expand_reasoning:
                self._flush_reasoning(everything=False)
        elif isinstance(payload, ToolCallStart):
            self._flush_all()
            self._tools[payload.call_id] = _RunningTool(
                payload.tool_name, format_arguments(payload.arguments)
            )
        elif isinstance(payload, ToolCallEnd):
            self._tool_ended(payload)
        elif isinstance(payload, ContextCompacted):
            self._flush_all()
            self._print(
                Text(
                    f"⟳ context compacted ({payload.mode}): history through message "
                    f"#{payload.replaces_through_seq} is now a summary",
                    style="cyan",
                )
            )
        elif isinstance(payload, TurnComplete):
            self._flush_all()
            self.usage = used = payload.usage
            cost = self._price.cost(used.input_tokens, used.output_tokens) if self._price else None
            spent = Text(usage_text(used, cost), style="dim")
            if payload.context is not None:
                spent = Text.assemble(context_line(payload.context), ("  ·  ", "dim"), spent)
            self._print(spent)
        elif isinstance(payload, TurnCancelled):
            self._flush_all()
            self._print(Text("⏹ cancelled: the answer above is incomplete", style="yellow"))
        elif isinstance(payload, ErrorEvent):
            self._flush_all()
            text = error_text(payload.code, payload.message)
            if not payload.fatal:
                text.stylize("dim")
            self._print(text)
        self._live.update(self._pending(), refresh=True)

    def close(self) -> None:
        if not self._live.is_started:
            return
        self._flush_all()
        self._live.update(Text(""), refresh=True)
        self._live.stop()

    def _print(self, renderable: RenderableType) -> None:
        self._live.console.print(renderable)

    def _flush_text(self, *, everything: bool) -> None:
        done, self._text = (self._text, "") if everything else split_complete(self._text)
        if done.strip():
            from rich.markdown import Markdown  # ~0.04 s (markdown-it, pygments): when needed

            self._print(Markdown(done))

    def _flush_reasoning(self, *, everything: bool) -> None:
        done, self._reasoning = (
            (self._reasoning, "") if everything else split_complete(self._reasoning)
        )
        if not done.strip():
            return
        if self._expand_reasoning:
            self._print(Text(done.strip(), style="dim italic"))
        else:
            self._print(collapsed_reasoning(done))

    def _flush_all(self) -> None:
        self._flush_reasoning(everything=True)
        self._flush_text(everything=True)

    def _tool_ended(self, payload: ToolCallEnd) -> None:
        running = self._tools.pop(payload.call_id, None)
        arguments = running.arguments if running else ""
        mark = ("✗ ", "red") if payload.output.is_error else ("✓ ", "green")
        self._print(
            Text.assemble(
                "  ",
                mark,
                (payload.tool_name, "bold"),
                f" {arguments}",
                (f" · {payload.duration_ms} ms", "dim"),
                (" → ", "dim"),
                (tool_result_line(payload.output), "dim"),
            )
        )

    def _pending(self) -> RenderableType:
        parts: list[RenderableType] = []
        if self._reasoning:
            tail = self._reasoning if self._expand_reasoning else live_tail(self._reasoning)
            parts.append(Text(tail, style="dim italic"))
        if self._text:
            parts.append(Text(self._text))
        if self._waiting is not None:
            parts.append(Spinner("dots", Text(waiting_line(self._waiting), style="dim")))
        now = time.monotonic()
        parts.extend(
            Spinner(
                "dots",
                Text.assemble(
                    (tool.name, "bold"),
                    f" {tool.arguments} ",
                    (f"{now - tool.started:.1f} s", "dim"),
                ),
            )
            for tool in self._tools.values()
        )
        return Group(*parts)


class PlainTurnView:
    """For pipes and scripts: the answer as it streams on stdout, everything else on stderr."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self._out = out or sys.stdout
        self._err = err or sys.stderr
        self._open_line = False

    def handle(self, event: AgentEvent) -> None:
        payload = event.payload
        if isinstance(payload, TextDeltaEvent):
            self._out.write(payload.text)
            self._out.flush()
            self._open_line = not payload.text.endswith("\n")
        elif isinstance(payload, ModelWaiting):
            self._note(f"[{waiting_line(payload)}]")
        elif isinstance(payload, ToolCallEnd):
            flag = "error" if payload.output.is_error else "ok"
            self._note(
                f"[tool {payload.tool_name} {flag} {payload.duration_ms} ms] "
                f"{tool_result_line(payload.output)}"
            )
        elif isinstance(payload, TurnCancelled):
            self._note("[cancelled: the answer is incomplete]")
        elif isinstance(payload, ErrorEvent):
            self._note(error_text(payload.code, payload.message).plain)

    def close(self) -> None:
        if self._open_line:
            self._out.write("\n")
            self._out.flush()
            self._open_line = False

    def _note(self, line: str) -> None:
        self.close()
        self._err.write(line + "\n")
        self._err.flush()


class JsonTurnView:
    """One JSON object per event (``AgentEvent.model_dump(mode="json")``)."""

    def __init__(self, out: TextIO | None = None) -> None:
        self._out = out or sys.stdout

    def handle(self, event: AgentEvent) -> None:
        self._out.write(json.dumps(event.model_dump(mode="json"), ensure_ascii=False) + "\n")
        self._out.flush()

    def close(self) -> None:
        self._out.flush()
