"""Splitting a runbook into passages: one per heading section, long sections in pieces.

A passage keeps what a citation needs: the path of headings above it and the 1-based,
inclusive range of lines it covers in the file. Markdown headings are ATX headings (``#`` to
``######`` followed by a space); lines inside fenced code blocks are never headings. Plain text
has no headings: it is cut at blank lines only. A section longer than ``MAX_PASSAGE_CHARS`` is
cut at blank lines (a single paragraph longer than that at line ends, a single line longer
than that at spaces), so one search result never floods the model's context and no passage
outgrows what a full-text index can hold.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

MAX_PASSAGE_CHARS = 2400
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdx"})

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class Passage:
    headings: tuple[str, ...]
    line_start: int
    line_end: int
    text: str


@dataclass(frozen=True, slots=True)
class _Section:
    headings: tuple[str, ...]
    first: int  # 0-based index of its first line (the heading line, if any)
    lines: tuple[str, ...]
    titled: bool  # its first line is its heading

    @property
    def heading_line(self) -> int | None:
        return self.first + 1 if self.titled else None


def is_markdown(name: str) -> bool:
    """Markdown unless the name ends in another suffix (``.txt``, ``.log``…)."""
    dot = name.rfind(".")
    return dot <= name.rfind("/") or name[dot:].lower() in MARKDOWN_SUFFIXES


def split_passages(text: str, *, markdown: bool = True) -> list[Passage]:
    """The passages of a document in file order; blank sections and bare headings give none."""
    lines = text.splitlines()
    sections = _sections(lines) if markdown else [_Section((), 0, tuple(lines), False)]
    return [piece for section in sections for piece in _pieces(section)]


def _sections(lines: Sequence[str]) -> list[_Section]:
    sections: list[_Section] = []
    stack: list[tuple[int, str]] = []  # (level, title) of the headings above
    start, fence = 0, ""
    for index, line in enumerate(lines):
        if fence:
            closing = _FENCE.match(line)
            if closing and closing.group(1)[0] == fence[0] and len(closing.group(1)) >= len(fence):
                fence = ""
            continue
        if opening := _FENCE.match(line):
            fence = opening.group(1)
            continue
        heading = _HEADING.match(line)
        if heading is None:
            continue
        sections.append(_section(stack, start, lines[start:index]))
        level = len(heading.group(1))
        stack = [(lvl, title) for lvl, title in stack if lvl < level]
        stack.append((level, heading.group(2).strip()))
        start = index
    sections.append(_section(stack, start, lines[start:]))
    return sections


def _section(stack: list[tuple[int, str]], start: int, lines: Sequence[str]) -> _Section:
    return _Section(tuple(title for _, title in stack), start, tuple(lines), bool(stack))


def _pieces(section: _Section) -> Iterator[Passage]:
    """Blocks (runs of lines between blank lines) packed into pieces up to the size limit."""
    piece: list[tuple[int, str]] = []
    size = 0
    for block in _blocks(section):
        block_size = sum(len(line) + 1 for _, line in block)
        if piece and size + block_size > MAX_PASSAGE_CHARS:
            yield from _passage(section, piece)
            piece, size = [], 0
        piece.extend(block)
        size += block_size
    yield from _passage(section, piece)


def _blocks(section: _Section) -> Iterator[list[tuple[int, str]]]:
    block: list[tuple[int, str]] = []
    for offset, line in enumerate(section.lines):
        if line.strip():
            block.append((section.first + offset + 1, line))
            continue
        yield from _cut(block)
        block = []
    yield from _cut(block)


def _cut(block: list[tuple[int, str]]) -> Iterator[list[tuple[int, str]]]:
    """A block over the limit, in runs of whole lines; a single longer line is cut into
    pieces of its own (at a space where there is one), each citing that line."""
    run: list[tuple[int, str]] = []
    size = 0
    for number, line in block:
        if len(line) > MAX_PASSAGE_CHARS:
            if run:
                yield run
                run, size = [], 0
            yield from ([(number, part)] for part in _line_parts(line))
            continue
        if run and size + len(line) + 1 > MAX_PASSAGE_CHARS:
            yield run
            run, size = [], 0
        run.append((number, line))
        size += len(line) + 1
    if run:
        yield run


def _line_parts(line: str) -> Iterator[str]:
    while len(line) > MAX_PASSAGE_CHARS:
        cut = line.rfind(" ", MAX_PASSAGE_CHARS // 2, MAX_PASSAGE_CHARS)
        cut = cut if cut > 0 else MAX_PASSAGE_CHARS
        yield line[:cut]
        line = line[cut:].lstrip(" ")
    if line:
        yield line


def _passage(section: _Section, piece: list[tuple[int, str]]) -> Iterator[Passage]:
    """Nothing for an empty piece or one that is only the section's heading line."""
    if not piece or [number for number, _ in piece] == [section.heading_line]:
        return
    first, last = piece[0][0], piece[-1][0]
    body: list[str] = []
    previous = first - 1
    for number, line in piece:
        if number > previous + 1:
            body.append("")  # the blank lines between blocks become one
        body.append(line)
        previous = number
    yield Passage(section.headings, first, last, "\n".join(body))
