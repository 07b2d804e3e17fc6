"""``[[mcp_servers]]``: the MCP servers whose tools the model may call."""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path
from typing import Any, Self

from pydantic import AliasChoices, Field, PositiveInt, field_validator, model_validator

from youyou.config.base import check_http_url
from youyou.config.secrets import SecretsFromEnvironment, check_variable_name
from youyou.domain.approvals import ApprovalPolicy
from youyou.domain.config import config_error


class McpTransport(StrEnum):
    STDIO = "stdio"
    HTTP = "http"


class McpServerSettings(SecretsFromEnvironment):
    """An MCP server whose tools the model may call (docs/mcp.md).

    ``transport`` defaults from what is given: ``command`` → ``stdio``, ``url`` → ``http``
    (streamable HTTP). ``env`` maps each variable the server process gets to the name of the
    variable here that holds its value, so no secret is ever written into the file; the process
    sees only those plus a minimal safe set (PATH, HOME…). ``users`` and ``groups`` limit who
    gets the tools in the workbench (neither: everyone; see ``youyou.workbench.access``);
    ``name`` is the old spelling of ``id``. ``approval`` is the tools' approval policy
    (``mutating``: a tool without ``readOnlyHint: true`` asks a person first);
    ``approve_tools`` / ``ask_tools`` name tools (server-side names) that never / always ask
    (docs/approvals.md).
    """

    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,32}$", validation_alias=AliasChoices("id", "name"))
    transport: McpTransport
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = Field(default_factory=dict)
    cwd: Path | None = None
    url: str | None = None
    timeout_ms: PositiveInt = 30_000
    startup_timeout_ms: PositiveInt = 30_000
    enabled_tools: tuple[str, ...] | None = None
    disabled_tools: tuple[str, ...] = ()
    users: tuple[str, ...] | None = None
    groups: tuple[str, ...] | None = None
    approval: ApprovalPolicy = "mutating"
    approve_tools: tuple[str, ...] = ()
    ask_tools: tuple[str, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _default_transport(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "transport" not in data:
            has_command, has_url = data.get("command") is not None, data.get("url") is not None
            if has_command == has_url:
                raise ValueError(
                    "exactly one of command (stdio) or url (streamable HTTP) is required"
                )
            return {**data, "transport": "stdio" if has_command else "http"}
        return data

    @field_validator("id")
    @classmethod
    def _unambiguous_prefix(cls, server_id: str) -> str:
        if "__" in server_id:  # tools are named <id>__<tool>: the first "__" ends the id
            raise ValueError("must not contain '__'")
        return server_id

    @field_validator("url")
    @classmethod
    def _absolute_url(cls, url: str | None) -> str | None:
        return None if url is None else check_http_url(url)

    @field_validator("env")
    @classmethod
    def _env_names(cls, names: dict[str, str]) -> dict[str, str]:
        for variable, source in names.items():
            check_variable_name(variable, f"{variable}: ")
            check_variable_name(source, f"{variable}: ")
        return names

    @model_validator(mode="after")
    def _one_approval_per_tool(self) -> Self:
        if both := sorted(set(self.approve_tools) & set(self.ask_tools)):
            raise ValueError(f"{', '.join(both)}: in both approve_tools and ask_tools")
        return self

    @model_validator(mode="after")
    def _one_transport(self) -> Self:
        stdio_only = ("command", "args", "env", "cwd")
        http_only = ("url", "headers", "headers_env")
        wrong = http_only if self.transport is McpTransport.STDIO else stdio_only
        needed = "command" if self.transport is McpTransport.STDIO else "url"
        if getattr(self, needed) is None:
            raise ValueError(f"transport = {self.transport.value!r} needs {needed}")
        if given := [key for key in wrong if key in self.model_fields_set]:
            raise ValueError(f"{', '.join(given)}: not for transport = {self.transport.value!r}")
        return self

    def resolved_env(self, environ: Mapping[str, str], where: str) -> dict[str, str]:
        """``env`` with each value read from its named variable (which must be set)."""
        resolved: dict[str, str] = {}
        for variable, source in self.env.items():
            value = environ.get(source)
            if value is None:
                raise config_error(
                    f"{where}.env.{variable}: environment variable {source} is not set"
                )
            resolved[variable] = value
        return resolved

    def offers(self, tool_name: str) -> bool:
        """``enabled_tools`` (None: all) minus ``disabled_tools``; server-side names."""
        enabled = self.enabled_tools is None or tool_name in self.enabled_tools
        return enabled and tool_name not in self.disabled_tools

    def approval_for(self, tool_name: str) -> ApprovalPolicy:
        """The approval policy of one tool (server-side name): its list, else ``approval``."""
        if tool_name in self.ask_tools:
            return "always"
        if tool_name in self.approve_tools:
            return "never"
        return self.approval
