"""A user's own knowledge documents: upload (a file or JSON text), list, delete.

Uploads are split into passages and indexed at once; ``search_knowledge`` then finds them for
their owner only, next to the shared ``[[knowledge]]`` sources that owner may read. Another
user's document ids are simply unknown (404).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Request, Response
from pydantic import StringConstraints, ValidationError
from starlette.datastructures import UploadFile

from youyou.adapters.knowledge import KnowledgeBase, KnowledgeDocument
from youyou.adapters.knowledge.base import MAX_NAME_CHARS
from youyou.adapters.knowledge.sources import MAX_DOCUMENT_BYTES
from youyou.domain.errors import AgentError
from youyou.workbench.context import RequestIdDep, UserDep, WorkbenchDep
from youyou.workbench.errors import (
    ApiCode,
    ApiError,
    Localized,
    check_user_limit,
    from_agent_error,
)
from youyou.workbench.intake import large_body
from youyou.workbench.routes import ASSET_ERRORS
from youyou.workbench.schemas import ApiModel, Envelope
from youyou.workbench.validation import field_problems

router = APIRouter(prefix="/chat", tags=["knowledge"], responses=ASSET_ERRORS)

MULTIPART = "multipart/form-data"


class DocumentBody(ApiModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=MAX_NAME_CHARS)]
    content: Annotated[str, StringConstraints(min_length=1)]


class KnowledgeDocumentOut(ApiModel):
    id: str
    name: str
    size_bytes: int
    passage_count: int
    content_hash: str
    indexed_at: datetime


_UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": DocumentBody.model_json_schema(by_alias=True)},
            MULTIPART: {
                "schema": {
                    "type": "object",
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "name": {"type": "string", "description": "default: the file's name"},
                    },
                    "required": ["file"],
                }
            },
        },
    }
}


def document_out(document: KnowledgeDocument) -> KnowledgeDocumentOut:
    return KnowledgeDocumentOut(
        id=document.id,
        name=document.path,
        size_bytes=document.size_bytes,
        passage_count=document.passage_count,
        content_hash=document.content_hash,
        indexed_at=document.indexed_at,
    )


def _knowledge(wb: WorkbenchDep) -> KnowledgeBase:
    knowledge = wb.built.knowledge
    if knowledge is None:  # the workbench always opens it
        raise ApiError(ApiCode.INTERNAL_ERROR)
    return knowledge


async def _named_content(request: Request) -> tuple[str, bytes]:
    """(name, bytes) from a multipart ``file`` (and optional ``name``) or a JSON body."""
    if request.headers.get("content-type", "").startswith(MULTIPART):
        form = await request.form(max_files=1, max_fields=2)
        file, name = form.get("file"), form.get("name")
        if isinstance(file, UploadFile):
            data = await file.read(MAX_DOCUMENT_BYTES + 1)
            return (name if isinstance(name, str) and name else file.filename or ""), data
        if isinstance(file, str) and isinstance(name, str):
            return name, file.encode()
        raise ApiError(
            ApiCode.VALIDATION_INVALID_ARGUMENT,
            Localized("file: a document file is required", "file：需要一个文档文件"),
        )
    try:
        body = DocumentBody.model_validate_json(await request.body())
    except ValidationError as exc:
        problems = field_problems(exc.errors())
        raise ApiError(ApiCode.VALIDATION_INVALID_ARGUMENT, problems) from None
    return body.name, body.content.encode()


@router.post("/knowledge", status_code=201, openapi_extra=_UPLOAD_BODY)
@large_body
async def upload_document(
    request: Request, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep
) -> Envelope[KnowledgeDocumentOut]:
    """A Markdown or text document; one of the same name is replaced."""
    name, data = await _named_content(request)
    knowledge = _knowledge(wb)
    names = {document.path for document in await knowledge.uploads(user.id)}
    if name not in names:  # replacing a document of the same name adds none
        limit = wb.settings.server.user_knowledge_documents
        what = Localized("documents", "文档")
        check_user_limit(len(names), limit, what, "user_knowledge_documents")
    try:
        document = await knowledge.upload(user.id, name, data)
    except AgentError as err:
        raise from_agent_error(err) from None
    return Envelope(data=document_out(document), request_id=rid)


@router.get("/knowledge")
async def list_documents(
    wb: WorkbenchDep, user: UserDep, rid: RequestIdDep
) -> Envelope[list[KnowledgeDocumentOut]]:
    documents = await _knowledge(wb).uploads(user.id)
    return Envelope(data=[document_out(d) for d in documents], request_id=rid)


@router.delete("/knowledge/{document_id}", status_code=204, response_class=Response)
async def delete_document(document_id: str, wb: WorkbenchDep, user: UserDep) -> Response:
    if not await _knowledge(wb).delete_upload(user.id, document_id):
        raise ApiError(ApiCode.NOT_FOUND)
    return Response(status_code=204)
