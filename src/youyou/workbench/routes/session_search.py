"""``GET /chat/sessions/search``: the user's sessions whose title or message text contains
every word of a query, each with a snippet of its newest matching message."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query

from youyou.workbench.context import RequestIdDep, UserDep, WorkbenchDep
from youyou.workbench.errors import ApiCode, ApiError
from youyou.workbench.message_index import snippet
from youyou.workbench.routes import SESSION_ERRORS
from youyou.workbench.routes.chat import session_out
from youyou.workbench.schemas import ApiModel, Envelope, SessionOut
from youyou.workbench.store.message_texts import search_terms

router = APIRouter(prefix="/chat/sessions", tags=["sessions"], responses=SESSION_ERRORS)


class SnippetPartOut(ApiModel):
    text: str
    match: bool


class MessageMatchOut(ApiModel):
    seq: int
    role: Literal["user", "assistant"]
    created_at: datetime
    snippet: str
    """Plain text around the first match (``…`` where text was left out)."""
    parts: list[SnippetPartOut]
    """``snippet`` cut into runs, ``match`` on the words of the query: render without HTML."""


class SearchHitOut(ApiModel):
    session: SessionOut
    match: MessageMatchOut | None
    """The newest matching message; None when only the title matched."""


class SearchPage(ApiModel):
    items: list[SearchHitOut]
    next_cursor: str | None


@router.get("/search")
async def search_sessions(
    wb: WorkbenchDep,
    user: UserDep,
    rid: RequestIdDep,
    q: Annotated[str, Query(min_length=1, max_length=200)],
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Envelope[SearchPage]:
    """Newest session first, paged like the list. A word matches case-insensitively anywhere
    in the title or in the text of a user message or an answer (attachments are not
    searched); every word of ``q`` must match within one message or the title."""
    terms = search_terms(q)
    if not terms:
        raise ApiError(ApiCode.VALIDATION_INVALID_ARGUMENT, "q")
    try:
        hits, next_cursor = await wb.store.search_chat_sessions(
            user.id, q, limit=limit, cursor=cursor or None
        )
    except ValueError:
        raise ApiError(ApiCode.VALIDATION_INVALID_ARGUMENT, "cursor") from None
    items = []
    for hit in hits:
        match = None
        if hit.message is not None:
            parts = snippet(hit.message.body, terms)
            match = MessageMatchOut(
                seq=hit.message.seq,
                role="user" if hit.message.role == "user" else "assistant",
                created_at=hit.message.created_at,
                snippet="".join(p.text for p in parts),
                parts=[SnippetPartOut(text=p.text, match=p.match) for p in parts],
            )
        items.append(SearchHitOut(session=session_out(wb, hit.session), match=match))
    return Envelope(data=SearchPage(items=items, next_cursor=next_cursor), request_id=rid)
