"""Built-in tools that need no configuration: ``get_current_time``.

The workbench's mandatory instructions tell the model to call it before answering anything
time-related, because the model has no clock of its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from youyou.domain.cancel import CancellationToken
from youyou.domain.ledger import ToolOutput
from youyou.domain.tool import ToolDescriptor, ToolInput

CURRENT_TIME_TOOL_NAME = "get_current_time"
# Fixed English names: strftime("%A") would follow whatever locale the host process set.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
DEFAULT_TIMEZONE = "UTC"

_DESCRIPTOR = ToolDescriptor.builtin(
    name=CURRENT_TIME_TOOL_NAME,
    description=(
        "Get the current date and time (ISO 8601), the weekday and the UTC offset. Call it "
        "before answering any question that depends on the current time or date. "
        "获取当前日期时间、星期与时区；回答与当前时间相关的问题前先调用。"
    ),
    parameters_schema={
        "type": "object",
        "properties": {
            "timezone": {
                "type": "string",
                "description": (
                    "IANA time zone name such as 'Asia/Shanghai' or 'Europe/Berlin'; "
                    f"default '{DEFAULT_TIMEZONE}'."
                ),
            }
        },
        "additionalProperties": False,
    },
)


class CurrentTimeTool:
    """Read-only; ``clock`` must return an aware datetime (injectable for tests)."""

    def __init__(self, clock: Callable[[], datetime] | None = None) -> None:
        self._clock = clock or (lambda: datetime.now(UTC))

    @property
    def descriptor(self) -> ToolDescriptor:
        return _DESCRIPTOR

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        requested = tool_input.arguments.get("timezone")
        if requested is None or (isinstance(requested, str) and not requested.strip()):
            requested = DEFAULT_TIMEZONE
        if not isinstance(requested, str):
            return ToolOutput(content="timezone must be a string (an IANA name).", is_error=True)
        name = requested.strip()
        try:
            zone = ZoneInfo(name)
        except (ZoneInfoNotFoundError, ValueError):  # ValueError: not a valid key at all
            return ToolOutput(
                content=f"Unknown time zone '{name}': use an IANA name such as 'Asia/Shanghai'.",
                is_error=True,
            )
        now = self._clock().astimezone(zone)
        stamp = now.isoformat(timespec="seconds")
        payload = {
            "datetime": stamp,
            "date": stamp[:10],
            "time": stamp[11:19],
            "weekday": _WEEKDAYS[now.weekday()],
            "timezone": name,
            "utc_offset": stamp[19:],  # whatever follows the fixed-width YYYY-MM-DDTHH:MM:SS
            "unix_time": int(now.timestamp()),
        }
        return ToolOutput(content=json.dumps(payload, ensure_ascii=False))
