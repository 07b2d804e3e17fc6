"""The ``youyou`` console script: ``chat``, ``serve``, ``sessions list|show|delete``,
``db upgrade|backup``, ``mcp list``, ``kb index|search``, ``users …``, ``groups …``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from youyou.cli.options import ConfigOption
from youyou.cli.users_command import groups_app, users_app

if TYPE_CHECKING:
    from rich.console import Console

    from youyou.adapters.storage.sql import SqlSessionStorage

    SessionAction = Callable[[SqlSessionStorage, str, Console], Awaitable[None]]

# Everything beyond typer is imported inside the command that needs it: ``youyou --help`` must
# not load the kernel, SQLAlchemy, Alembic, the providers' SDKs or the server stack
# (tests/test_cli_imports.py checks it).

SKILLS_DIR_ENV = "YOUYOU_SKILLS_DIR"
# Help is plain text (``rich_markup_mode=None``): formatting it with Rich imported Rich's
# Markdown renderer and more, half of ``youyou --help``'s 0.35 s on the 2-core machine.
_PLAIN: dict[str, Any] = {"no_args_is_help": True, "rich_markup_mode": None}
app = typer.Typer(
    help="YouYou: an LLM agent for the terminal and a local-first on-call workbench.",
    add_completion=False,
    pretty_exceptions_enable=False,
    **_PLAIN,
)
sessions_app = typer.Typer(help="List, show and delete stored chat sessions.", **_PLAIN)
db_app = typer.Typer(help="Database maintenance.", **_PLAIN)
mcp_app = typer.Typer(help="MCP servers whose tools the model may call.", **_PLAIN)
app.add_typer(sessions_app, name="sessions")
app.add_typer(db_app, name="db")
app.add_typer(mcp_app, name="mcp")
kb_app = typer.Typer(help="The runbook knowledge base ([[knowledge]]).", **_PLAIN)
app.add_typer(kb_app, name="kb")
app.add_typer(users_app, name="users")
app.add_typer(groups_app, name="groups")


def _finish(code: int) -> None:
    if code:
        raise typer.Exit(code)


def _run(main: Coroutine[Any, Any, int]) -> None:
    from youyou.cli.process import run

    _finish(run(main))


@app.callback()
def _main() -> None:
    from youyou.cli.process import setup_logging

    setup_logging()


@app.command(short_help="Chat with the agent, or answer one message with -m.")
def chat(
    config: ConfigOption = None,
    message: Annotated[
        str | None,
        typer.Option(
            "--message",
            "-m",
            help="Send one message, print the answer and exit ('-' reads stdin).",
        ),
    ] = None,
    json: Annotated[
        bool, typer.Option("--json", help="With -m: print the event stream as JSON lines.")
    ] = False,
    resume: Annotated[
        str | None,
        typer.Option("--resume", "-r", help="Continue a stored session (id or unique id prefix)."),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", help="Model id for a new session (default: [agent].default_model)."
        ),
    ] = None,
    skills: Annotated[
        Path | None,
        typer.Option(
            "--skills",
            envvar=SKILLS_DIR_ENV,
            file_okay=False,
            help="Directory of */SKILL.md files to register for /name use.",
        ),
    ] = None,
    attach: Annotated[
        list[Path] | None,
        typer.Option(
            "--attach",
            "-a",
            dir_okay=False,
            help="With -m: a text file or image to send along.",
        ),
    ] = None,
    approve_all: Annotated[
        bool,
        typer.Option(
            "--approve-all",
            help="Approve every tool call that asks for approval, without asking "
            "(otherwise a terminal asks, and a stdin that is not one denies).",
        ),
    ] = False,
) -> None:
    """Chat with the agent (interactive), or answer one message with -m."""
    if json and message is None:
        raise typer.BadParameter("--json needs -m/--message", param_hint="--json")
    from youyou.cli.chat_command import ChatOptions, run_chat

    options = ChatOptions(
        config=config,
        message=message,
        json=json,
        resume=resume,
        model=model,
        skills_dir=skills,
        attach=tuple(attach or ()),
        approve_all=approve_all,
    )
    _run(run_chat(options))


@app.command(short_help="Run the workbench: HTTP + SSE API and web UI.")
def serve(
    config: ConfigOption = None,
    host: Annotated[
        str | None, typer.Option("--host", help="Address to listen on (default 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option("--port", "-p", min=1, max=65535, help="Default 8000.")
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option("--workers", "-w", min=1, help="Server processes (more than 1: PostgreSQL)."),
    ] = None,
    log_format: Annotated[
        str, typer.Option("--log-format", help="text or json (one JSON object per line).")
    ] = "text",
) -> None:
    """Run the workbench: HTTP + SSE API for many users (and its web UI)."""
    if log_format not in ("text", "json"):
        raise typer.BadParameter("text or json", param_hint="--log-format")
    from rich.console import Console

    from youyou.cli.process import guarded
    from youyou.config import ServerOverrides
    from youyou.workbench.server import ServeOptions
    from youyou.workbench.server import serve as run_server

    options = ServeOptions(
        config,
        ServerOverrides(host=host, port=port, workers=workers),
        "json" if log_format == "json" else "text",
    )
    # No markup: the start-up lines name config keys such as [[providers]] and [database].
    console = Console(highlight=False, markup=False)
    _finish(guarded(lambda: run_server(options, console.print)))


@asynccontextmanager
async def _storage(config: Path | None) -> AsyncIterator[SqlSessionStorage]:
    """Only the session store: these commands need no model provider (nor its API key)."""
    from youyou.adapters.storage.sql import SqlSessionStorage
    from youyou.config import load_settings

    storage = await SqlSessionStorage.open(load_settings(config).database.url)
    try:
        yield storage
    finally:
        await storage.close()


@sessions_app.command("list")
def sessions_list(
    config: ConfigOption = None,
    query: Annotated[
        str | None,
        typer.Option(
            "--query",
            "-q",
            help="Only sessions whose id starts with, or title contains, this.",
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, max=500)] = 20,
) -> None:
    """Most recently updated sessions first."""
    from rich.console import Console

    from youyou.cli.transcript import recent_or_matching, sessions_table

    async def main() -> int:
        async with _storage(config) as storage:
            items = await recent_or_matching(storage, query or "", limit)
        Console().print(sessions_table(items, full_ids=True) if items else "no sessions")
        return 0

    _run(main())


def _on_session(session_id: str, config: Path | None, action: SessionAction) -> None:
    """Resolve an id or unique prefix, then act on that session."""
    from rich.console import Console

    from youyou.cli.transcript import resolve_one

    async def main() -> int:
        console = Console()
        async with _storage(config) as storage:
            await action(storage, await resolve_one(storage, session_id, console), console)
        return 0

    _run(main())


SessionId = Annotated[str, typer.Argument(metavar="ID", help="Session id or unique prefix.")]


@sessions_app.command("show")
def sessions_show(session_id: SessionId, config: ConfigOption = None) -> None:
    """Print a session's whole history, compacted messages included."""
    from rich.markup import escape

    from youyou.cli.transcript import print_transcript

    async def show(storage: SqlSessionStorage, found: str, console: Console) -> None:
        summary = (await storage.load_head(found)).summary
        console.print(
            f"[bold]{escape(summary.title)}[/]  [dim]{found} · {summary.message_count} messages[/]"
        )
        print_transcript(console, await storage.load_events(found))

    _on_session(session_id, config, show)


@sessions_app.command("delete")
def sessions_delete(session_id: SessionId, config: ConfigOption = None) -> None:
    """Delete a session and its whole history."""

    async def delete(storage: SqlSessionStorage, found: str, console: Console) -> None:
        await storage.delete_session(found)
        console.print(f"deleted {found}")

    _on_session(session_id, config, delete)


@db_app.command("upgrade")
def db_upgrade(config: ConfigOption = None) -> None:
    """Apply pending schema migrations to the configured database."""
    from youyou.cli.db_command import run_db_upgrade

    _run(run_db_upgrade(config))


@db_app.command("backup", short_help="Write a consistent copy of the configured database.")
def db_backup(
    path: Annotated[Path, typer.Argument(metavar="PATH", help="File to write the copy to.")],
    config: ConfigOption = None,
    force: Annotated[
        bool, typer.Option("--force", "-f", help="Replace PATH if it exists.")
    ] = False,
) -> None:
    """Write a consistent copy of the configured database to PATH, while it is in use: SQLite
    through its online backup, PostgreSQL through pg_dump (custom format, for pg_restore)."""
    from youyou.cli.db_command import run_db_backup
    from youyou.cli.process import guarded

    _finish(guarded(lambda: run_db_backup(config, path, force=force)))


@mcp_app.command("list", short_help="Start each [[mcp_servers]] entry and show its tools.")
def mcp_list(config: ConfigOption = None) -> None:
    """Start each [[mcp_servers]] entry and show its tools, or why it does not start."""
    from youyou.cli.mcp_command import run_mcp_list

    _run(run_mcp_list(config))


@kb_app.command("index", short_help="Index the [[knowledge]] directories again.")
def kb_index(config: ConfigOption = None) -> None:
    """Index the [[knowledge]] directories again: only files whose content changed."""
    from youyou.cli.kb_command import run_kb_index

    _run(run_kb_index(config))


@kb_app.command("search", short_help="Print the best passages with their citations.")
def kb_search(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="Keywords, English or Chinese.")],
    config: ConfigOption = None,
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=20)] = 5,
) -> None:
    """Print the best passages with their citations, as search_knowledge finds them."""
    from youyou.cli.kb_command import run_kb_search

    _run(run_kb_search(config, query, top_k))


if __name__ == "__main__":
    app()
