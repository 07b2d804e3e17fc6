"""``GET /admin/usage``: what every account's turns used, for administrators (403 for members).

The sums are over the turns completed in an optional window, ``since`` (included) to
``until`` (excluded), given as ISO-8601 date-times (UTC when they carry no offset). A bound
that is not one, or a window that ends before it starts, is 422 ``VALIDATION_UNPROCESSABLE``.
"""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Depends

from youyou.workbench.context import RequestIdDep, WorkbenchDep
from youyou.workbench.errors import ApiCode, ApiError, Localized
from youyou.workbench.routes.admin import ADMIN_ERRORS, current_admin
from youyou.workbench.schemas import ApiModel, Envelope, ErrorEnvelope, UsageOut
from youyou.workbench.store.usage import UsageTotals
from youyou.workbench.usage import usage_out

router = APIRouter(
    prefix="/admin",
    tags=["admin"],
    responses={
        **ADMIN_ERRORS,
        422: {
            "model": ErrorEnvelope,
            "description": "VALIDATION_UNPROCESSABLE: since or until is not an ISO-8601 "
            "date-time, or since is after until",
        },
    },
    dependencies=[Depends(current_admin)],
)


class AccountUsageOut(ApiModel):
    user_id: str
    username: str
    usage: UsageOut


class AdminUsageOut(ApiModel):
    since: datetime | None
    until: datetime | None
    total: UsageOut
    """Every account together."""
    users: list[AccountUsageOut]
    """Every account, those without turns in the window too; most tokens first."""


def _moment(name: str, value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ApiError(
            ApiCode.VALIDATION_UNPROCESSABLE,
            Localized(
                f"{name}: not an ISO-8601 date and time (2026-01-31T08:00:00Z)",
                f"{name}：不是 ISO-8601 日期时间（例如 2026-01-31T08:00:00Z）",
            ),
        ) from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _sum(parts: list[UsageTotals]) -> UsageTotals:
    """What ``SUM`` would answer over all the rows: cost None when no part was priced."""
    costs = [p.cost for p in parts if p.cost is not None]
    return UsageTotals(
        None,
        sum(p.turns for p in parts),
        sum(p.input_tokens for p in parts),
        sum(p.output_tokens for p in parts),
        sum(costs) if costs else None,
    )


@router.get("/usage")
async def usage_by_account(
    wb: WorkbenchDep,
    rid: RequestIdDep,
    since: str | None = None,
    until: str | None = None,
) -> Envelope[AdminUsageOut]:
    """Tokens, turns and cost (when prices are configured) of each account in the window."""
    start, end = _moment("since", since), _moment("until", until)
    if start is not None and end is not None and start > end:
        raise ApiError(
            ApiCode.VALIDATION_UNPROCESSABLE,
            Localized("since is after until", "since 晚于 until"),
        )
    accounts = await wb.store.usage_by_account(start, end)
    data = AdminUsageOut(
        since=start,
        until=end,
        total=usage_out(_sum([a.usage for a in accounts])),
        users=[
            AccountUsageOut(user_id=a.user_id, username=a.username, usage=usage_out(a.usage))
            for a in accounts
        ],
    )
    return Envelope(data=data, request_id=rid)
