"""The knowledge base of one agent: configured sources, users' uploads, who searches what.

A workbench user searches the configured sources their access lists allow plus their own
uploads; the local user of the CLI searches every configured source. ``tool()`` closes a
``search_knowledge`` tool over exactly those scopes.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Sequence

from sqlalchemy.ext.asyncio import AsyncEngine

from youyou.adapters.knowledge.index import KnowledgeDocument, KnowledgeIndex, PassageHit
from youyou.adapters.knowledge.passages import Passage, is_markdown, split_passages
from youyou.adapters.knowledge.postgres import PostgresKnowledgeIndex
from youyou.adapters.knowledge.sources import (
    Decoded,
    IndexReport,
    Progress,
    decode_document,
    sync_sources,
)
from youyou.adapters.knowledge.sqlite_fts import SqliteKnowledgeIndex
from youyou.adapters.knowledge.tool import SearchKnowledgeTool, source_scope, upload_scope
from youyou.config import KnowledgeSourceSettings
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

MAX_NAME_CHARS = 200
_PATH_PARTS = re.compile(r"[\\/]")


class KnowledgeBase:
    def __init__(self, index: KnowledgeIndex, sources: Sequence[KnowledgeSourceSettings]) -> None:
        self.index = index
        self.sources = tuple(sources)

    @classmethod
    async def open(
        cls, engine: AsyncEngine, sources: Sequence[KnowledgeSourceSettings]
    ) -> KnowledgeBase:
        """On an engine the caller owns and disposes (the session store's), schema ensured."""
        sqlite = engine.dialect.name == "sqlite"
        index = (SqliteKnowledgeIndex if sqlite else PostgresKnowledgeIndex)(engine)
        await index.ensure_schema()
        return cls(index, sources)

    def scopes(
        self, owner_id: str | None = None, allowed: Callable[[str], bool] | None = None
    ) -> tuple[str, ...]:
        """``owner_id``: the workbench user, whose uploads are searched too; ``allowed``: which
        source ids they may read. Both None: the CLI's local user, who reads every source."""
        shared = tuple(source_scope(s.id) for s in self.sources if allowed is None or allowed(s.id))
        return (*shared, upload_scope(owner_id)) if owner_id is not None else shared

    def tool(
        self, owner_id: str | None = None, allowed: Callable[[str], bool] | None = None
    ) -> SearchKnowledgeTool:
        return SearchKnowledgeTool(self.index, self.scopes(owner_id, allowed))

    async def search(self, query: str, top_k: int) -> list[PassageHit]:
        """What the local user finds (``youyou kb search``)."""
        return await self.index.search(self.scopes(), query, top_k)

    async def index_sources(self, on_progress: Progress | None = None) -> IndexReport:
        """Re-index the configured sources' changed files (``youyou kb index``)."""
        return await sync_sources(self.index, self.sources, on_progress)

    async def upload(self, owner_id: str, name: str, data: bytes) -> KnowledgeDocument:
        """Add a user's document, or replace the one of the same name (INPUT_VALIDATION for
        a bad name, non-UTF-8 content or one over the size limit)."""
        name = _document_name(name)
        # Decoding and splitting a large document takes a while: off the event loop.
        decoded, passages = await asyncio.to_thread(_decoded_passages, name, data)
        if not passages:
            raise _invalid(f"{name} has no text to search")
        return await self.index.put(
            upload_scope(owner_id), name, decoded.content_hash, decoded.size_bytes, passages
        )

    async def uploads(self, owner_id: str) -> list[KnowledgeDocument]:
        return await self.index.documents(upload_scope(owner_id))

    async def delete_upload(self, owner_id: str, document_id: str) -> bool:
        """False when the id is unknown to this owner (another user's ids included)."""
        return await self.index.delete(upload_scope(owner_id), ids=[document_id]) > 0


def _decoded_passages(name: str, data: bytes) -> tuple[Decoded, list[Passage]]:
    decoded = decode_document(name, data)
    return decoded, split_passages(decoded.text, markdown=is_markdown(name))


def _document_name(name: str) -> str:
    """The last part of a path a browser or client may send, trimmed."""
    base = _PATH_PARTS.split(name)[-1].strip()
    if not base or len(base) > MAX_NAME_CHARS or not base.isprintable():
        raise _invalid(f"a document needs a printable name of 1 to {MAX_NAME_CHARS} characters")
    return base


def _invalid(message: str) -> AgentError:
    return AgentError(ErrorCode.INPUT_VALIDATION, message, source=ErrorSource.TOOL)
