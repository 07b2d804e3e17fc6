"""Memory search latency at 1 000, 10 000 and 100 000 memories on SQLite and PostgreSQL.

Data: deterministic English, Chinese and mixed statements (seeded RNG) drawn from a Zipf
vocabulary — a few very common words and a long tail of rare ones (names, project codes) —
all in ONE namespace, the worst case (a real namespace holds one user's memories). Queries are
user-message-like questions drawn from the same vocabulary, half English and half Chinese,
``top_k = 20`` (the default ``memory_max_items``). Setup is a bulk upsert; each search is timed
alone after a warm-up.

Run: ``python bench/memory_search.py [--sizes 1000,10000,100000] [--queries 400]
[--backends sqlite,postgresql]``. PostgreSQL uses ``YOUYOU_BENCH_PG_DSN`` (default the local
``postgres@127.0.0.1:5432/test``) to create and drop a scratch database.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from storage_scale import database

from youyou.adapters.memory import SqlMemoryStorage, open_memory_storage
from youyou.domain.memory import Memory

NAMESPACE = "bench-user"
TOP_K = 20
BATCH = 2000


def _words(text: str) -> list[str]:
    return text.split()


EN_WORDS = _words("""
coffee tea python rust golang kubernetes docker postgres sqlite redis kafka deploy release
billing invoice payment customer dashboard metrics latency outage incident oncall pager
weekend morning evening vacation flight hotel tokyo berlin london shanghai beijing paris
vegetarian allergy peanuts gluten running cycling hiking piano guitar jazz novel chess
daughter son wife husband birthday anniversary dentist doctor gym yoga marathon budget
mortgage salary manager team interview promotion conference talk slides review design
frontend backend mobile android ios typescript react vue terminal vim emacs laptop monitor
keyboard linux macos windows cloud aws azure gcp terraform ansible grafana prometheus alert
backup migration schema index query cache queue worker cron timezone utc report quarterly
roadmap deadline sprint ticket jira github gitlab pipeline build test flaky coverage lint
""")
EN_VERBS = _words("prefers likes uses avoids owns manages plans maintains studies dislikes")
EN_GLUE = _words("the a for with on in at of and to")
ZH_WORDS = _words("""
咖啡 喝茶 工程师 后端 前端 部署 上线 数据库 缓存 队列 监控 告警 值班 故障 发布 项目 周末
早上 晚上 出差 机票 酒店 上海 北京 深圳 杭州 东京 素食 过敏 花生 跑步 骑行 爬山 钢琴
吉他 小说 象棋 女儿 儿子 生日 纪念日 牙医 健身 瑜伽 预算 房贷 工资 经理 团队 面试 晋升
会议 演讲 设计 评审 手机 电脑 键盘 显示器 云服务 备份 迁移 索引 查询 报表 季度 路线图
截止 需求 测试 覆盖率 流水线 猫 狗 旅行 摄影 电影 音乐 火锅 米饭 面条 早餐 午饭 晚饭
""")
ZH_VERBS = _words("喜欢 常用 不喜欢 负责 计划 维护 学习 讨厌 擅长 关注")
SYLLABLES = _words("ka ro mi zen tor vel qua sir bon lex dru fin gal hep ix jun kor lum nix pav")
HAN = "云海星河山林风雨雪月光影金木水火土石桥塔龙凤松竹梅兰春夏秋冬东南西北天地"


def _vocabulary(rng: random.Random) -> tuple[list[str], list[str]]:
    """Real words first (most frequent under Zipf), then a long tail of rare names."""
    en_tail = {"".join(rng.choices(SYLLABLES, k=3)) for _ in range(4000)}
    zh_tail = {"".join(rng.choices(HAN, k=2)) for _ in range(3000)}
    return EN_WORDS + sorted(en_tail), ZH_WORDS + sorted(zh_tail)


def _zipf(words: list[str], rng: random.Random) -> Callable[[int], list[str]]:
    weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(len(words))))
    return lambda k: rng.choices(words, cum_weights=weights, k=k)


class Corpus:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        en, zh = _vocabulary(self.rng)
        self.en = _zipf(en, self.rng)
        self.zh = _zipf(zh, self.rng)

    def english(self) -> str:
        words = self.en(self.rng.randint(4, 12))
        for _ in range(len(words) // 3):
            words.insert(self.rng.randrange(len(words)), self.rng.choice(EN_GLUE))
        return f"User {self.rng.choice(EN_VERBS)} " + " ".join(words)

    def chinese(self) -> str:
        words = self.zh(self.rng.randint(3, 9))
        joiners = self.rng.choices(["", "的", "，", "和"], k=len(words))
        body = "".join(w + j for w, j in zip(words, joiners, strict=True))
        return "用户" + self.rng.choice(ZH_VERBS) + body

    def memory_text(self) -> str:
        roll = self.rng.random()
        if roll < 0.5:
            return self.english()
        if roll < 0.9:
            return self.chinese()
        return self.chinese() + " " + " ".join(self.en(2))

    def query(self, index: int) -> str:
        if index % 2 == 0:
            topics = " and ".join(self.en(self.rng.randint(2, 4)))
            return f"What do you remember about {topics}?"
        return "我" + self.rng.choice(ZH_VERBS) + "".join(self.zh(self.rng.randint(1, 3))) + "吗？"


def memories(count: int, seed: int = 7) -> list[Memory]:
    corpus = Corpus(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    return [
        Memory(
            id=f"m{i:06d}",
            namespace=NAMESPACE,
            content=corpus.memory_text(),
            created_at=start + timedelta(minutes=i),
            updated_at=start + timedelta(minutes=i),
        )
        for i in range(count)
    ]


async def measure(store: SqlMemoryStorage, size: int, queries: int) -> dict[str, float]:
    items = memories(size)
    began = time.perf_counter()
    for offset in range(0, size, BATCH):
        await store.upsert_many(items[offset : offset + BATCH])
    insert_s = time.perf_counter() - began
    if store.engine.dialect.name == "postgresql":
        async with store.engine.begin() as conn:  # the statistics autovacuum would gather
            await conn.exec_driver_sql("ANALYZE memories")
    corpus = Corpus(seed=size + 1)
    texts = [corpus.query(i) for i in range(queries)]
    for text in texts[:20]:
        await store.search(NAMESPACE, text, TOP_K)
    timings: list[float] = []
    hits = 0
    for text in texts:
        began = time.perf_counter()
        found = await store.search(NAMESPACE, text, TOP_K)
        timings.append((time.perf_counter() - began) * 1000)
        hits += len(found)
    timings.sort()
    return {
        "insert_s": insert_s,
        "p50": statistics.median(timings),
        "p99": timings[min(len(timings) - 1, int(len(timings) * 0.99))],
        "mean": statistics.fmean(timings),
        "hits": hits / len(texts),
    }


async def run(backend: str, size: int, queries: int) -> dict[str, float]:
    async with database(backend) as url:
        store = await open_memory_storage(url)
        try:
            return await measure(store, size, queries)
        finally:
            await store.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--backends", default="sqlite,postgresql")
    args = parser.parse_args()
    print(
        f"{'backend':<11} {'memories':>9} {'insert s':>9} {'p50 ms':>8} {'p99 ms':>8} "
        f"{'mean ms':>8} {'hits':>5}"
    )
    for backend in args.backends.split(","):
        for size in (int(s) for s in args.sizes.split(",")):
            r = await run(backend, size, args.queries)
            print(
                f"{backend:<11} {size:>9,} {r['insert_s']:>9.1f} {r['p50']:>8.2f} "
                f"{r['p99']:>8.2f} {r['mean']:>8.2f} {r['hits']:>5.1f}",
                flush=True,
            )


if __name__ == "__main__":
    asyncio.run(main())
