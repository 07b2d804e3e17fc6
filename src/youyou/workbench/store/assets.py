"""Each user's system prompts and skills, and which of them the user has selected.

Every query is scoped by owner: another user's asset reads as missing. A selection never
points at a missing asset: deletes clean it up in the same transaction, and saving keeps only
ids the owner has (taking share locks, so a concurrent delete cannot slip in between).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from functools import partial
from typing import Any
from uuid import NAMESPACE_URL, uuid4, uuid5

from sqlalchemy import Select, Table, bindparam, delete, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from youyou.workbench.store.base import StoreBase, columns_of, now
from youyou.workbench.store.groups import GROUP_NAMES
from youyou.workbench.store.one_trip import Run
from youyou.workbench.store.records import (
    OwnerAssets,
    PromptRecord,
    SelectionRecord,
    SkillNameTaken,
    SkillRecord,
)
from youyou.workbench.store.tables import prompts, selections, skills

_PROMPT = columns_of(prompts, PromptRecord)
_SKILL = columns_of(skills, SkillRecord)
_DEFAULT_PROMPT_NAMESPACE = uuid5(NAMESPACE_URL, "urn:youyou:workbench:default-prompt")


def default_prompt_id(owner_id: str) -> str:
    """Deterministic, so concurrent first requests of one user create one default prompt."""
    return str(uuid5(_DEFAULT_PROMPT_NAMESPACE, owner_id))


class AssetQueries(StoreBase):
    async def ensure_default_prompt(self, owner_id: str, label: str, content: str) -> PromptRecord:
        """The owner's default prompt, created from ``label``/``content`` if missing.

        An existing one (possibly edited by its owner) is returned unchanged.
        """
        stamp = now()
        prompt = PromptRecord(
            default_prompt_id(owner_id), owner_id, label, content, True, stamp, stamp
        )
        stmt = (
            self._insert(prompts)
            .values(asdict(prompt))
            .on_conflict_do_nothing(index_elements=[prompts.c.id])
        )
        async with self._transaction("creating the default prompt", write=True) as conn:
            await conn.execute(stmt)
            return PromptRecord(*(await conn.execute(_prompt_query(owner_id, prompt.id))).one())

    async def list_prompts(self, owner_id: str) -> list[PromptRecord]:
        """The default prompt first, then oldest first."""
        async with self._transaction("listing prompts") as conn:
            return await _prompts(conn, owner_id)

    async def assets(self, owner_id: str) -> OwnerAssets:
        """What a send assembles from, in one transaction instead of four."""
        action = "loading prompts, skills, the selection, groups"
        return await self._one_trip.run(action, partial(owner_assets, owner_id=owner_id))

    async def prompt(self, owner_id: str, prompt_id: str) -> PromptRecord | None:
        async with self._transaction("loading a prompt") as conn:
            return await _prompt(conn, owner_id, prompt_id)

    async def create_prompt(self, owner_id: str, label: str, content: str) -> PromptRecord:
        stamp = now()
        prompt = PromptRecord(str(uuid4()), owner_id, label, content, False, stamp, stamp)
        async with self._transaction("creating a prompt", write=True) as conn:
            await conn.execute(prompts.insert().values(asdict(prompt)))
        return prompt

    async def update_prompt(
        self, owner_id: str, prompt_id: str, label: str, content: str
    ) -> PromptRecord | None:
        stmt = (
            update(prompts)
            .where(prompts.c.id == prompt_id, prompts.c.owner_id == owner_id)
            .values(label=label, content=content, updated_at=now())
        )
        async with self._transaction("updating a prompt", write=True) as conn:
            await conn.execute(stmt)
            return await _prompt(conn, owner_id, prompt_id)

    async def delete_prompt(self, owner_id: str, prompt_id: str) -> bool:
        """Also clears the owner's selection of it."""
        stmt = delete(prompts).where(prompts.c.id == prompt_id, prompts.c.owner_id == owner_id)
        async with self._transaction("deleting a prompt", write=True) as conn:
            if (await conn.execute(stmt)).rowcount == 0:
                return False
            await conn.execute(
                update(selections)
                .where(
                    selections.c.owner_id == owner_id,
                    selections.c.system_prompt_id == prompt_id,
                )
                .values(system_prompt_id=None, updated_at=now())
            )
        return True

    async def list_skills(self, owner_id: str) -> list[SkillRecord]:
        """Oldest first."""
        async with self._transaction("listing skills") as conn:
            return await _skills(conn, owner_id)

    async def skill(self, owner_id: str, skill_id: str) -> SkillRecord | None:
        found = await self.skills_by_ids(owner_id, [skill_id])
        return found[0] if found else None

    async def skills_by_ids(self, owner_id: str, ids: Sequence[str]) -> list[SkillRecord]:
        """In the order of ``ids``; ids the owner has no skill for are skipped."""
        wanted = list(dict.fromkeys(ids))
        query = select(*_SKILL).where(skills.c.owner_id == owner_id, skills.c.id.in_(wanted))
        async with self._transaction("loading skills") as conn:
            rows = (await conn.execute(query)).all()
        found = {row.id: SkillRecord(*row) for row in rows}
        return [found[skill_id] for skill_id in wanted if skill_id in found]

    async def create_skill(
        self,
        owner_id: str,
        filename: str,
        name: str,
        description: str,
        content: str,
        size_bytes: int,
    ) -> SkillRecord:
        """Raises ``SkillNameTaken`` also when a concurrent upload wins the same name."""
        stamp = now()
        skill = SkillRecord(
            str(uuid4()), owner_id, filename, name, description, content, size_bytes, stamp, stamp
        )
        stmt = (
            self._insert(skills)
            .values(asdict(skill))
            .on_conflict_do_nothing(index_elements=[skills.c.owner_id, skills.c.name])
        )
        async with self._transaction("creating a skill", write=True) as conn:
            inserted = (await conn.execute(stmt)).rowcount
        if inserted == 0:
            raise SkillNameTaken(name)
        return skill

    async def delete_skill(self, owner_id: str, skill_id: str) -> bool:
        """Also removes it from the owner's selection."""
        stmt = delete(skills).where(skills.c.id == skill_id, skills.c.owner_id == owner_id)
        async with self._transaction("deleting a skill", write=True) as conn:
            if (await conn.execute(stmt)).rowcount == 0:
                return False
            current = await _selection(conn, owner_id, lock=True)
            if current is not None and skill_id in current.skill_ids:
                kept = [kept_id for kept_id in current.skill_ids if kept_id != skill_id]
                await conn.execute(
                    update(selections)
                    .where(selections.c.owner_id == owner_id)
                    .values(skill_ids=json.dumps(kept), updated_at=now())
                )
        return True

    async def selection(self, owner_id: str) -> SelectionRecord | None:
        async with self._transaction("loading the selection") as conn:
            return await _selection(conn, owner_id)

    async def save_selection(
        self, owner_id: str, system_prompt_id: str | None, skill_ids: Sequence[str]
    ) -> SelectionRecord:
        """Replace the selection; duplicates collapse (first one wins its place).

        Ids the owner has no prompt or skill for are dropped: the result says what was kept.
        """
        wanted = list(dict.fromkeys(skill_ids))
        async with self._transaction("saving the selection", write=True) as conn:
            owned_skills = set(await _owned(conn, skills, owner_id, wanted))
            prompt_ids = [] if system_prompt_id is None else [system_prompt_id]
            owned_prompt = await _owned(conn, prompts, owner_id, prompt_ids)
            saved = SelectionRecord(
                owner_id,
                owned_prompt[0] if owned_prompt else None,
                tuple(skill_id for skill_id in wanted if skill_id in owned_skills),
                now(),
            )
            values = {**asdict(saved), "skill_ids": json.dumps(list(saved.skill_ids))}
            stmt = self._insert(selections).values(values)
            await conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=[selections.c.owner_id],
                    set_={name: stmt.excluded[name] for name in values if name != "owner_id"},
                )
            )
        return saved


# A user's (``owner_id``) prompts, skills and selection, as a send reads them.
_PROMPTS_OF = (
    select(*_PROMPT)
    .where(prompts.c.owner_id == bindparam("owner_id"))
    .order_by(prompts.c.is_default.desc(), prompts.c.created_at, prompts.c.id)
)
_SKILLS_OF = (
    select(*_SKILL)
    .where(skills.c.owner_id == bindparam("owner_id"))
    .order_by(skills.c.created_at, skills.c.id)
)
_SELECTION_OF = select(*columns_of(selections, SelectionRecord)).where(
    selections.c.owner_id == bindparam("owner_id")
)


def owner_assets(run: Run, owner_id: str) -> OwnerAssets:
    """``assets``, run in the caller's one-trip transaction."""
    key = {"owner_id": owner_id}
    selection = run(_SELECTION_OF, key)
    return OwnerAssets(
        [PromptRecord(*row) for row in run(_PROMPTS_OF, key)],
        [SkillRecord(*row) for row in run(_SKILLS_OF, key)],
        _selection_record(selection[0]) if selection else None,
        frozenset(row[0] for row in run(GROUP_NAMES, {"user_id": owner_id})),
    )


async def _prompts(conn: AsyncConnection, owner_id: str) -> list[PromptRecord]:
    query = (
        select(*_PROMPT)
        .where(prompts.c.owner_id == owner_id)
        .order_by(prompts.c.is_default.desc(), prompts.c.created_at, prompts.c.id)
    )
    return [PromptRecord(*row) for row in (await conn.execute(query)).all()]


async def _skills(conn: AsyncConnection, owner_id: str) -> list[SkillRecord]:
    query = (
        select(*_SKILL)
        .where(skills.c.owner_id == owner_id)
        .order_by(skills.c.created_at, skills.c.id)
    )
    return [SkillRecord(*row) for row in (await conn.execute(query)).all()]


def _prompt_query(owner_id: str, prompt_id: str) -> Select[Any]:
    return select(*_PROMPT).where(prompts.c.id == prompt_id, prompts.c.owner_id == owner_id)


async def _prompt(conn: AsyncConnection, owner_id: str, prompt_id: str) -> PromptRecord | None:
    row = (await conn.execute(_prompt_query(owner_id, prompt_id))).one_or_none()
    return None if row is None else PromptRecord(*row)


async def _owned(
    conn: AsyncConnection, table: Table, owner_id: str, ids: Sequence[str]
) -> Sequence[str]:
    """Which of ``ids`` the owner has in ``table``, share-locked until the transaction ends."""
    query = (
        select(table.c.id)
        .where(table.c.owner_id == owner_id, table.c.id.in_(ids))
        .with_for_update(read=True)
    )
    return (await conn.scalars(query)).all()


async def _selection(
    conn: AsyncConnection, owner_id: str, *, lock: bool = False
) -> SelectionRecord | None:
    query = select(*columns_of(selections, SelectionRecord)).where(
        selections.c.owner_id == owner_id
    )
    row = (await conn.execute(query.with_for_update() if lock else query)).one_or_none()
    return None if row is None else _selection_record(tuple(row))


def _selection_record(row: Sequence[Any]) -> SelectionRecord:
    owner_id, system_prompt_id, skill_ids, updated_at = row
    return SelectionRecord(owner_id, system_prompt_id, tuple(json.loads(skill_ids)), updated_at)
