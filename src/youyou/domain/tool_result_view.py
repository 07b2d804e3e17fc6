"""What the model sees of a tool result too large for its context window.

See docs/architecture.md, 'The system prompt and requests'. The ledger keeps the whole output
(up to the 1 MiB storage cap); the visible context shows a head and a tail that fit the
result's share of the window, with a marker in between. The view depends only on the content,
the window and the token counter, so a resumed session sends exactly what the live one sent.
"""

from __future__ import annotations

from collections.abc import Callable

from youyou.domain.templates import render_tool_result_clipped

TOOL_RESULT_WINDOW_SHARE = 0.25
"""The largest share of the context window one tool result may take in a request: room is left
for the system prompt, the rest of the turn, two or three more large results and the answer."""

_SHRINK = 0.9  # each retry keeps at most this share of the previous attempt


def tool_result_token_limit(context_window: int) -> int:
    return max(1, int(context_window * TOOL_RESULT_WINDOW_SHARE))


def fit_tool_result(content: str, limit: int, count: Callable[[str], int]) -> str:
    """``content`` if it fits ``limit`` tokens, else its head and tail around the marker."""
    if len(content.encode("utf-8")) <= limit:  # a token is at least one byte: no need to count
        return content
    total = count(content)
    if total <= limit:
        return content
    keep = len(content) * limit // total
    while True:
        clipped = _head_and_tail(content, keep)
        tokens = count(clipped)
        if tokens <= limit or keep == 0:
            return clipped
        keep = min(keep * limit // tokens, int(keep * _SHRINK))


def _head_and_tail(content: str, keep: int) -> str:
    """Keep about ``keep`` characters, half from each end, cut at line ends where possible."""
    head_end = keep // 2
    tail_start = len(content) - (keep - head_end)
    newline = content.rfind("\n", head_end // 2, head_end)
    if newline >= 0:
        head_end = newline + 1
    newline = content.find("\n", tail_start, tail_start + (len(content) - tail_start) // 2)
    if newline >= 0:
        tail_start = newline + 1
    omitted = content[head_end:tail_start]
    marker = render_tool_result_clipped(len(omitted), omitted.count("\n"), len(content))
    return content[:head_end] + marker + content[tail_start:]
