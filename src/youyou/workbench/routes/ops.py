"""Operations: health for load balancers and Prometheus metrics."""

from __future__ import annotations

import logging

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST

from youyou.workbench.context import RequestIdDep, WorkbenchDep
from youyou.workbench.errors import ApiCode, ApiError
from youyou.workbench.schemas import Envelope, ErrorEnvelope, Health

router = APIRouter(tags=["operations"])
logger = logging.getLogger(__name__)


@router.get(
    "/healthz",
    responses={503: {"model": ErrorEnvelope, "description": "SERVICE_UNAVAILABLE"}},
)
async def healthz(wb: WorkbenchDep, rid: RequestIdDep) -> Envelope[Health]:
    """200 when the database answers."""
    try:
        await wb.store.ping()
    except Exception:
        logger.warning("health check: the database does not answer", exc_info=True)
        raise ApiError(ApiCode.SERVICE_UNAVAILABLE) from None
    return Envelope(data=Health(status="ok"), request_id=rid)


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}},
)
async def metrics(wb: WorkbenchDep) -> Response:
    wb.metrics.open_sessions.set(wb.hub.open_sessions)
    return Response(wb.metrics.render(), media_type=CONTENT_TYPE_LATEST)
