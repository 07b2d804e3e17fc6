"""A user's own assets: prompts, SKILL.md skills, the active selection, models, memories.

Every query is scoped by the signed-in owner; another user's id is simply unknown (404).
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, File, Response, UploadFile
from fastapi.responses import PlainTextResponse

from youyou.domain.skill_md import SkillValidationError, parse_skill_md
from youyou.domain.skill_messages import MAX_SKILL_BYTES
from youyou.workbench.accounts import memory_namespace
from youyou.workbench.assembly import in_language, read_configuration
from youyou.workbench.context import LanguageDep, RequestIdDep, UserDep, WorkbenchDep
from youyou.workbench.errors import ApiCode, ApiError, Language, Localized, check_user_limit
from youyou.workbench.intake import large_body
from youyou.workbench.routes import ASSET_ERRORS
from youyou.workbench.schemas import (
    ConfigurationOut,
    Envelope,
    ErrorEnvelope,
    MemoryItemOut,
    ModelOut,
    PromptBody,
    PromptOut,
    Selection,
    SelectionBody,
    SkillOut,
)
from youyou.workbench.store import PromptRecord, SkillNameTaken, SkillRecord

router = APIRouter(prefix="/chat", tags=["configuration"], responses=ASSET_ERRORS)


class MarkdownResponse(PlainTextResponse):
    """A SKILL.md as it was uploaded (documented as ``text/markdown`` only)."""

    media_type = "text/markdown"


def prompt_out(record: PromptRecord, language: Language) -> PromptOut:
    prompt = in_language(record, language)
    return PromptOut(
        id=prompt.id,
        label=prompt.label,
        content=prompt.content,
        is_default=prompt.is_default,
        created_at=prompt.created_at,
        updated_at=prompt.updated_at,
    )


def skill_out(skill: SkillRecord) -> SkillOut:
    """Never the body: the preview is the description."""
    return SkillOut(
        id=skill.id,
        filename=skill.filename,
        name=skill.name,
        description=skill.description,
        label=skill.name,
        content_preview=skill.description,
        size_bytes=skill.size_bytes,
        created_at=skill.created_at,
        updated_at=skill.updated_at,
    )


async def _configuration(wb: WorkbenchDep, owner_id: str, language: Language) -> ConfigurationOut:
    config = await read_configuration(wb.store, owner_id)
    return ConfigurationOut(
        prompts=[prompt_out(p, language) for p in config.prompts],
        skills=[skill_out(s) for s in config.skills],
        selection=Selection(system_prompt_id=config.system_prompt_id, skill_ids=config.skill_ids),
    )


@router.get("/configuration")
async def get_configuration(
    wb: WorkbenchDep, user: UserDep, rid: RequestIdDep, lang: LanguageDep
) -> Envelope[ConfigurationOut]:
    return Envelope(data=await _configuration(wb, user.id, lang), request_id=rid)


@router.put("/configuration")
async def put_configuration(
    body: SelectionBody, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep, lang: LanguageDep
) -> Envelope[ConfigurationOut]:
    """Every id is checked for this owner before anything is written."""
    if await wb.store.prompt(user.id, body.system_prompt_id) is None:
        raise ApiError(
            ApiCode.VALIDATION_INVALID_ARGUMENT, f"systemPromptId {body.system_prompt_id}"
        )
    skill_ids = list(dict.fromkeys(body.skill_ids))
    found = {s.id for s in await wb.store.skills_by_ids(user.id, skill_ids)}
    unknown = [i for i in skill_ids if i not in found]
    if unknown:
        raise ApiError(ApiCode.VALIDATION_INVALID_ARGUMENT, "skillIds " + ", ".join(unknown))
    await wb.store.save_selection(user.id, body.system_prompt_id, skill_ids)
    return Envelope(data=await _configuration(wb, user.id, lang), request_id=rid)


@router.post("/prompts", status_code=201)
async def create_prompt(
    body: PromptBody, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep, lang: LanguageDep
) -> Envelope[PromptOut]:
    prompts = len(await wb.store.list_prompts(user.id))
    limit = wb.settings.server.user_prompts
    check_user_limit(prompts, limit, Localized("prompts", "提示词"), "user_prompts")
    prompt = await wb.store.create_prompt(user.id, body.label, body.content)
    return Envelope(data=prompt_out(prompt, lang), request_id=rid)


@router.get("/prompts/{prompt_id}")
async def get_prompt(
    prompt_id: str, wb: WorkbenchDep, user: UserDep, rid: RequestIdDep, lang: LanguageDep
) -> Envelope[PromptOut]:
    prompt = await wb.store.prompt(user.id, prompt_id)
    if prompt is None:
        raise ApiError(ApiCode.NOT_FOUND)
    return Envelope(data=prompt_out(prompt, lang), request_id=rid)


@router.put("/prompts/{prompt_id}")
async def update_prompt(
    prompt_id: str,
    body: PromptBody,
    wb: WorkbenchDep,
    user: UserDep,
    rid: RequestIdDep,
    lang: LanguageDep,
) -> Envelope[PromptOut]:
    prompt = await wb.store.update_prompt(user.id, prompt_id, body.label, body.content)
    if prompt is None:
        raise ApiError(ApiCode.NOT_FOUND)
    return Envelope(data=prompt_out(prompt, lang), request_id=rid)


@router.delete("/prompts/{prompt_id}", status_code=204, response_class=Response)
async def delete_prompt(prompt_id: str, wb: WorkbenchDep, user: UserDep) -> Response:
    """A selected prompt falls back to the (re-ensured) default on the next read."""
    if not await wb.store.delete_prompt(user.id, prompt_id):
        raise ApiError(ApiCode.NOT_FOUND)
    return Response(status_code=204)


@router.post(
    "/skills",
    status_code=201,
    responses={409: {"model": ErrorEnvelope, "description": "SKILL_NAME_CONFLICT"}},
)
@large_body
async def upload_skill(
    file: Annotated[UploadFile, File(description="The SKILL.md file")],
    wb: WorkbenchDep,
    user: UserDep,
    lang: LanguageDep,
    rid: RequestIdDep,
) -> Envelope[SkillOut]:
    """Every failing rule is reported at once, in the client's language."""
    content = await file.read(MAX_SKILL_BYTES + 1)
    try:
        # YAML front matter can be costly to parse (aliases): off the event loop.
        parsed = await asyncio.to_thread(parse_skill_md, file.filename or "", content)
    except SkillValidationError as exc:
        raise ApiError(ApiCode.VALIDATION_INVALID_ARGUMENT, exc.render(lang)) from None
    try:
        skill = await wb.store.create_skill(
            user.id,
            file.filename or "",
            parsed.name,
            parsed.description,
            parsed.content,
            parsed.size_bytes,
        )
    except SkillNameTaken:
        raise ApiError(ApiCode.SKILL_NAME_CONFLICT, parsed.name) from None
    return Envelope(data=skill_out(skill), request_id=rid)


@router.get(
    "/skills/{skill_id}/content",
    response_class=MarkdownResponse,
)
async def skill_content(skill_id: str, wb: WorkbenchDep, user: UserDep) -> MarkdownResponse:
    skill = await wb.store.skill(user.id, skill_id)
    if skill is None:
        raise ApiError(ApiCode.NOT_FOUND)
    return MarkdownResponse(skill.content)


@router.delete("/skills/{skill_id}", status_code=204, response_class=Response)
async def delete_skill(skill_id: str, wb: WorkbenchDep, user: UserDep) -> Response:
    """Also removes the skill from the owner's selection."""
    if not await wb.store.delete_skill(user.id, skill_id):
        raise ApiError(ApiCode.NOT_FOUND)
    return Response(status_code=204)


@router.get("/models")
async def models(wb: WorkbenchDep, user: UserDep, rid: RequestIdDep) -> Envelope[list[ModelOut]]:
    data = [
        ModelOut(
            id=m.model_id,
            display_name=m.display_name,
            context_window=m.context_window,
            capabilities=sorted(c.value for c in m.capabilities),
        )
        for m in wb.built.agent.models()
    ]
    return Envelope(data=data, request_id=rid)


@router.get("/memories")
async def memories(
    wb: WorkbenchDep, user: UserDep, rid: RequestIdDep
) -> Envelope[list[MemoryItemOut]]:
    storage = wb.built.memory_storage
    items = await storage.list_all(memory_namespace(user.id)) if storage else []
    data = [
        MemoryItemOut(
            id=m.id,
            content=m.content,
            created_at=m.created_at,
            updated_at=m.updated_at,
            source_session_id=m.source_session_id,
        )
        for m in sorted(items, key=lambda m: m.updated_at, reverse=True)
    ]
    return Envelope(data=data, request_id=rid)


@router.delete("/memories/{memory_id}", status_code=204, response_class=Response)
async def delete_memory(memory_id: str, wb: WorkbenchDep, user: UserDep) -> Response:
    storage = wb.built.memory_storage
    namespace = memory_namespace(user.id)
    if storage is None or all(m.id != memory_id for m in await storage.list_all(namespace)):
        raise ApiError(ApiCode.NOT_FOUND)
    await storage.delete(namespace, memory_id)
    return Response(status_code=204)
