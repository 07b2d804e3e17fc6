"""``youyou mcp list``: start each ``[[mcp_servers]]`` entry and show its tools."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from youyou.adapters.mcp import McpServerReport, McpToolbox
from youyou.cli.process import EXIT_FAILED, EXIT_OK
from youyou.config import load_settings
from youyou.domain.approvals import approval_reason

NO_SERVERS = "no MCP servers configured: add [[mcp_servers]] to youyou.toml (see docs/mcp.md)"


async def run_mcp_list(config: Path | None, console: Console | None = None) -> int:
    """Exit 1 when a server does not start, so scripts can check a configuration."""
    out = console or Console(highlight=False)
    settings = load_settings(config)
    if not settings.mcp_servers:
        out.print(NO_SERVERS, markup=False)
        return EXIT_OK
    async with McpToolbox(settings.mcp_servers) as toolbox:
        reports = await toolbox.reports()
    for report in reports:
        _print_report(out, report)
    return EXIT_FAILED if any(r.error is not None for r in reports) else EXIT_OK


def _print_report(out: Console, report: McpServerReport) -> None:
    head = Text.assemble((report.server_id, "bold"), f"  {report.transport.value}  ")
    head.append(report.target, style="dim")
    out.print(head)
    if report.error is not None:
        out.print(Text(f"  {report.error}", style="red"))
        return
    out.print(Text(f"  starts; {len(report.tools)} tools", style="green"))
    if not report.tools:
        return
    table = Table(box=None, padding=(0, 2), show_edge=False)
    for column in ("model name", "server name", "kind", "approval"):
        table.add_column(column, no_wrap=True)
    table.add_column("description", overflow="fold")
    for descriptor, remote in zip(report.tools, report.remote_names, strict=True):
        kind = "mutating" if descriptor.mutating else "read-only"
        asks = approval_reason(descriptor.approval, descriptor.mutating) is not None
        summary = descriptor.description.strip().split("\n", 1)[0]
        table.add_row(descriptor.name, remote, kind, "asks" if asks else "runs", summary)
    out.print(table)
