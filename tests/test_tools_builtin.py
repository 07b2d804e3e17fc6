"""get_current_time: real time zones from the IANA database, errors as outputs."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from youyou.adapters.tools.builtin import CurrentTimeTool
from youyou.domain.cancel import CancellationToken
from youyou.domain.ledger import ToolOutput
from youyou.domain.tool import ToolInput

# A Sunday in winter (Berlin +01:00) and a fixed instant for exact answers.
INSTANT = datetime(2026, 11, 29, 23, 30, 5, tzinfo=UTC)


async def ask(tool: CurrentTimeTool, **arguments: object) -> ToolOutput:
    tool_input = ToolInput(session_id="s", turn_id="t", call_id="c1", arguments=arguments)
    return await tool.call(tool_input, CancellationToken())


def test_descriptor_is_read_only_with_an_optional_timezone() -> None:
    tool = CurrentTimeTool()
    descriptor = tool.descriptor
    assert descriptor.name == "get_current_time" and descriptor.mutating is False
    assert set(descriptor.parameters_schema["properties"]) == {"timezone"}
    assert "required" not in descriptor.parameters_schema


@pytest.mark.parametrize("arguments", [{}, {"timezone": None}, {"timezone": "  "}])
async def test_default_is_utc(arguments: dict[str, object]) -> None:
    output = await ask(CurrentTimeTool(lambda: INSTANT), **arguments)
    assert output.is_error is False
    assert json.loads(output.content) == {
        "datetime": "2026-11-29T23:30:05+00:00",
        "date": "2026-11-29",
        "time": "23:30:05",
        "weekday": "Sunday",
        "timezone": "UTC",
        "utc_offset": "+00:00",
        "unix_time": int(INSTANT.timestamp()),
    }


@pytest.mark.parametrize(
    ("zone", "stamp", "weekday"),
    [
        ("Asia/Shanghai", "2026-11-30T07:30:05+08:00", "Monday"),
        ("Europe/Berlin", "2026-11-30T00:30:05+01:00", "Monday"),
        ("America/New_York", "2026-11-29T18:30:05-05:00", "Sunday"),
        ("Asia/Kolkata", "2026-11-30T05:00:05+05:30", "Monday"),
    ],
)
async def test_named_zones_shift_date_weekday_and_offset(
    zone: str, stamp: str, weekday: str
) -> None:
    answer = json.loads((await ask(CurrentTimeTool(lambda: INSTANT), timezone=zone)).content)
    assert (answer["datetime"], answer["weekday"], answer["timezone"]) == (stamp, weekday, zone)
    assert answer["utc_offset"] == stamp[19:] and answer["date"] == stamp[:10]
    assert datetime.fromisoformat(answer["datetime"]) == INSTANT


async def test_daylight_saving_time_is_applied() -> None:
    summer = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
    answer = json.loads(
        (await ask(CurrentTimeTool(lambda: summer), timezone="Europe/Berlin")).content
    )
    assert answer["utc_offset"] == "+02:00"


async def test_the_real_clock_is_used_by_default() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    answer = json.loads((await ask(CurrentTimeTool(), timezone="Asia/Tokyo")).content)
    reported = datetime.fromisoformat(answer["datetime"])
    assert before <= reported <= datetime.now(UTC) + timedelta(seconds=1)
    assert answer["utc_offset"] == "+09:00"


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../../etc/passwd", "Asia/", "UTC+8"])
async def test_an_unknown_zone_is_an_error_output(zone: str) -> None:
    output = await ask(CurrentTimeTool(lambda: INSTANT), timezone=zone)
    assert output.is_error is True
    assert zone in output.content and "IANA" in output.content


async def test_a_non_string_zone_is_an_error_output() -> None:
    output = await ask(CurrentTimeTool(lambda: INSTANT), timezone=8)
    assert output.is_error is True and "string" in output.content
