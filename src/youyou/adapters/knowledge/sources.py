"""Bringing the index in line with the ``[[knowledge]]`` directories, changed files only.

A file is re-split and re-indexed only when the SHA-256 of its content differs from the one
stored with it; files gone from a directory, and sources gone from the configuration, leave
the index. A file that is not UTF-8 text or is larger than ``MAX_DOCUMENT_BYTES`` is skipped
(and leaves the index if an earlier version was in it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from youyou.adapters.knowledge.index import KnowledgeIndex
from youyou.adapters.knowledge.passages import is_markdown, split_passages
from youyou.adapters.knowledge.tool import SOURCE_PREFIX, source_scope
from youyou.config import KnowledgeSourceSettings
from youyou.domain.config import config_error
from youyou.domain.errors import AgentError, ErrorCode, ErrorSource

MAX_DOCUMENT_BYTES = 2 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class SourceFile:
    source: str
    path: str  # relative to the source directory, with "/" separators
    file: Path


@dataclass(slots=True)
class IndexReport:
    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    passages: int = 0  # passages written by this run
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, why)

    @property
    def files(self) -> int:
        return self.added + self.updated + self.unchanged + len(self.skipped)


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    content_hash: str
    size_bytes: int


def decode_document(name: str, data: bytes) -> Decoded:
    """UTF-8 text without NUL characters (a BOM dropped) within the size limit, else
    INPUT_VALIDATION saying why."""
    if len(data) > MAX_DOCUMENT_BYTES:
        raise _invalid(f"{name} is larger than {MAX_DOCUMENT_BYTES // (1024 * 1024)} MiB")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _invalid(f"{name} is not UTF-8 text (byte {exc.start})") from None
    if "\x00" in text:  # binary, and PostgreSQL cannot store it in text
        raise _invalid(f"{name} is not text (it holds a NUL character)")
    return Decoded(text, hashlib.sha256(data).hexdigest(), len(data))


def source_files(source: KnowledgeSourceSettings, where: str) -> list[SourceFile]:
    """Every regular file matching one of the source's globs, sorted by path."""
    root = source.path.expanduser()
    if not root.is_dir():
        raise config_error(f"{where}.path: {root} is not a directory")
    found = {
        match.relative_to(root).as_posix(): match
        for pattern in source.glob
        for match in root.glob(pattern)
        if match.is_file()
    }
    return [SourceFile(source.id, path, found[path]) for path in sorted(found)]


Progress = Callable[[int, int], None]  # (files done, files in all)


async def sync_sources(
    index: KnowledgeIndex,
    sources: Sequence[KnowledgeSourceSettings],
    on_progress: Progress | None = None,
) -> IndexReport:
    """``on_progress`` once the files are listed and after each one.

    Every directory is listed before anything is written, so a missing one (INVALID_CONFIG)
    changes nothing.
    """
    planned = [source_files(s, f"knowledge[{i}]") for i, s in enumerate(sources)]
    total = sum(len(files) for files in planned)
    progress = on_progress or (lambda done, total: None)
    progress(0, total)
    report = IndexReport()
    configured = {source_scope(s.id) for s in sources}
    for scope in await index.scopes():
        if scope.startswith(SOURCE_PREFIX) and scope not in configured:
            report.removed += await index.delete_scope(scope)
    for source, files in zip(sources, planned, strict=True):
        scope = source_scope(source.id)
        stored = {d.path: d.content_hash for d in await index.documents(scope)}
        kept: set[str] = set()
        for item in files:
            if await _sync_file(index, scope, item, stored.get(item.path), report):
                kept.add(item.path)
            progress(report.files, total)
        gone = [path for path in stored if path not in kept]
        report.removed += await index.delete(scope, paths=gone)
    return report


async def _sync_file(
    index: KnowledgeIndex, scope: str, item: SourceFile, stored: str | None, report: IndexReport
) -> bool:
    """Whether the file is in the index now (False: skipped)."""
    name = f"{item.source}/{item.path}"
    try:
        with item.file.open("rb") as handle:
            decoded = decode_document(name, handle.read(MAX_DOCUMENT_BYTES + 1))
    except OSError as exc:
        report.skipped.append((name, exc.strerror or str(exc)))
        return False
    except AgentError as err:
        report.skipped.append((name, err.message))
        return False
    if decoded.content_hash == stored:
        report.unchanged += 1
        return True
    passages = split_passages(decoded.text, markdown=is_markdown(item.path))
    await index.put(scope, item.path, decoded.content_hash, decoded.size_bytes, passages)
    report.passages += len(passages)
    if stored is None:
        report.added += 1
    else:
        report.updated += 1
    return True


def _invalid(message: str) -> AgentError:
    return AgentError(ErrorCode.INPUT_VALIDATION, message, source=ErrorSource.TOOL)
