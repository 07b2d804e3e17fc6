"""Knowledge base: index 10 000 passages, then search them, on SQLite and PostgreSQL.

Data: deterministic runbooks (seeded RNG) written to a temporary directory: ``--files``
Markdown files of ``--sections`` ``##`` sections each, one passage per section, their text
drawn from the memory benchmark's Zipf vocabulary of English and Chinese (a few very common
words, a long tail of rare names). Indexing goes through ``youyou kb index``'s own path
(list, read, hash, split, write); it is timed for the first run (every file added) and for a
second one (every file unchanged: read and hash only). ``upload s`` times one workbench upload
of a 2 MB document of distinct made-up words (what a log or an inventory of host names looks
like to the indexer: almost every word is stemmed for the first time). Queries are half
English, half Chinese questions from the same vocabulary with ``top_k = 5`` (the tool's
default), each timed alone after a warm-up. Goal: p99 under 20 ms.

Run: ``python bench/knowledge_search.py [--files 500] [--sections 20] [--queries 400]
[--backends sqlite,postgresql]``. PostgreSQL uses ``YOUYOU_BENCH_PG_DSN`` (default the local
``postgres@127.0.0.1:5432/test``) to create and drop a scratch database.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import string
import tempfile
import time
from pathlib import Path

from memory_search import Corpus
from storage_scale import database

from youyou.adapters.knowledge import KnowledgeBase
from youyou.adapters.storage.engine import create_engine
from youyou.config import KnowledgeSourceSettings

TOP_K = 5


def write_runbooks(root: Path, files: int, sections: int, seed: int = 11) -> None:
    corpus = Corpus(seed)
    for number in range(files):
        lines = [f"# Runbook {number}", ""]
        for _ in range(sections):
            title = " ".join(corpus.en(3)) if corpus.rng.random() < 0.5 else "".join(corpus.zh(2))
            lines += [f"## {title}", *(corpus.memory_text() for _ in range(3)), ""]
        (root / f"runbook-{number:04d}.md").write_text("\n".join(lines), encoding="utf-8")


def distinct_words(size_bytes: int, seed: int = 7) -> bytes:
    """Markdown of ``size_bytes`` of nine-letter made-up words, 20 to a paragraph."""
    rng = random.Random(seed)
    words = ["".join(rng.choices(string.ascii_lowercase, k=9)) for _ in range(size_bytes // 11)]
    paragraphs = (" ".join(words[i : i + 20]) for i in range(0, len(words), 20))
    return ("# Inventory\n\n" + "\n\n".join(paragraphs)).encode()


async def measure(url: str, root: Path, queries: int) -> dict[str, float]:
    engine = create_engine(url)
    try:
        kb = await KnowledgeBase.open(engine, [KnowledgeSourceSettings(id="bench", path=root)])
        began = time.perf_counter()
        report = await kb.index_sources()
        index_s = time.perf_counter() - began
        began = time.perf_counter()
        again = await kb.index_sources()
        reindex_s = time.perf_counter() - began
        assert again.unchanged == report.added and not again.updated
        if engine.dialect.name == "postgresql":
            async with engine.begin() as conn:  # the statistics autovacuum would gather
                await conn.exec_driver_sql("ANALYZE knowledge_passages")
        corpus = Corpus(seed=99)
        texts = [corpus.query(i) for i in range(queries)]
        for text in texts[:20]:
            await kb.search(text, TOP_K)
        timings: list[float] = []
        hits = 0
        for text in texts:
            began = time.perf_counter()
            hits += len(await kb.search(text, TOP_K))
            timings.append((time.perf_counter() - began) * 1000)
        document = distinct_words(2 * 1024 * 1024 - 100)
        began = time.perf_counter()
        await kb.upload("bench-user", "inventory.md", document)
        upload_s = time.perf_counter() - began
    finally:
        await engine.dispose()
    timings.sort()
    return {
        "passages": report.passages,
        "index_s": index_s,
        "reindex_s": reindex_s,
        "p50": statistics.median(timings),
        "p99": timings[min(len(timings) - 1, int(len(timings) * 0.99))],
        "hits": hits / len(texts),
        "upload_s": upload_s,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--sections", type=int, default=20)
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    print(
        f"{'backend':<11} {'passages':>9} {'index s':>8} {'reindex s':>10} {'p50 ms':>7} "
        f"{'p99 ms':>7} {'hits':>5} {'upload s':>9}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_runbooks(root, args.files, args.sections)
        for backend in args.backends.split(","):
            async with database(backend) as url:
                r = await measure(url, root, args.queries)
            print(
                f"{backend:<11} {r['passages']:>9,.0f} {r['index_s']:>8.2f} "
                f"{r['reindex_s']:>10.2f} {r['p50']:>7.2f} {r['p99']:>7.2f} {r['hits']:>5.1f} "
                f"{r['upload_s']:>9.2f}",
                flush=True,
            )


if __name__ == "__main__":
    asyncio.run(main())
