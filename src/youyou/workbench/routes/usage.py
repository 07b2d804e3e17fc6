"""``GET /usage``: what the signed-in user's turns used, in all and per model."""

from __future__ import annotations

from fastapi import APIRouter

from youyou.workbench.context import RequestIdDep, UserDep, WorkbenchDep
from youyou.workbench.routes import COMMON_ERRORS
from youyou.workbench.schemas import Envelope, UserUsageOut
from youyou.workbench.usage import usage_out

router = APIRouter(prefix="/usage", tags=["usage"], responses=COMMON_ERRORS)


@router.get("")
async def my_usage(wb: WorkbenchDep, user: UserDep, rid: RequestIdDep) -> Envelope[UserUsageOut]:
    """Tokens and cost of every completed turn of the user, deleted sessions included."""
    total, by_model = await wb.store.owner_usage(user.id)
    data = UserUsageOut(total=usage_out(total), by_model=[usage_out(m) for m in by_model])
    return Envelope(data=data, request_id=rid)
