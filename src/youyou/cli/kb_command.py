"""``youyou kb index`` and ``youyou kb search``: the ``[[knowledge]]`` sources from the terminal.

Both need only the database: no model provider is built (nor its API key read).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from youyou.adapters.knowledge import IndexReport, KnowledgeBase, citation
from youyou.adapters.storage.engine import create_engine
from youyou.cli.process import EXIT_OK
from youyou.config import load_settings

NO_SOURCES = (
    "no knowledge sources configured: add [[knowledge]] to youyou.toml (see docs/knowledge.md)"
)


@asynccontextmanager
async def _opened(config: Path | None) -> AsyncIterator[KnowledgeBase | None]:
    """The knowledge base of the configured sources; None when there is none."""
    settings = load_settings(config)
    if not settings.knowledge:
        yield None
        return
    database = settings.database
    engine = create_engine(database.url, sqlite_synchronous=database.sqlite_synchronous)
    try:
        yield await KnowledgeBase.open(engine, settings.knowledge)
    finally:
        await engine.dispose()


async def run_kb_index(config: Path | None, console: Console | None = None) -> int:
    """Re-index the files whose content changed, with a progress bar; print the counts."""
    out = console or Console(highlight=False)
    async with _opened(config) as knowledge:
        if knowledge is None:
            out.print(NO_SOURCES, markup=False)
            return EXIT_OK
        columns = (
            TextColumn("indexing"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("files"),
            TimeElapsedColumn(),
        )
        bar = Progress(*columns, console=out, transient=True, disable=not out.is_terminal)
        with bar as progress:
            task = progress.add_task("index", total=None)

            def advance(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            report = await knowledge.index_sources(advance)
    _print_report(out, report, len(knowledge.sources))
    return EXIT_OK


def _print_report(out: Console, report: IndexReport, sources: int) -> None:
    out.print(
        f"{_count(sources, 'source')}, {_count(report.files, 'file')}: "
        f"{report.added} added, {report.updated} updated, {report.removed} removed, "
        f"{report.unchanged} unchanged, {len(report.skipped)} skipped "
        f"({_count(report.passages, 'passage')} written)",
        markup=False,
        soft_wrap=True,
    )
    for name, why in report.skipped:
        shown = why if why.startswith(name) else f"{name}: {why}"
        out.print(Text.assemble(("skipped ", "yellow"), shown), soft_wrap=True)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


async def run_kb_search(
    config: Path | None, query: str, top_k: int, console: Console | None = None
) -> int:
    """Ranked passages, each under its citation, as the model sees them."""
    out = console or Console(highlight=False)
    async with _opened(config) as knowledge:
        if knowledge is None:
            out.print(NO_SOURCES, markup=False)
            return EXIT_OK
        hits = await knowledge.search(query, top_k)
    if not hits:
        out.print("no matching passage (run youyou kb index after changing the sources)")
    for rank, hit in enumerate(hits, 1):
        out.print(f"[bold]{rank}.[/] [cyan]{escape(citation(hit))}[/]", soft_wrap=True)
        out.print(Text(hit.text))
        out.print()
    return EXIT_OK
