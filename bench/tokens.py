"""Token counting benchmark: BPE throughput and the per-turn cost of the context estimator.

Run: ``.venv/bin/python bench/tokens.py``. Prints tokens/s per encoding on mixed English/Chinese
text, then what one turn costs the estimator when one message is added to a history of
100 / 1 000 / 10 000 messages (the cached, incremental path should stay flat).
"""

from __future__ import annotations

import gc
import random
import time
from collections.abc import Callable

from youyou.adapters.tokens import ApproximateTokenCounter, BpeTokenCounter
from youyou.application.token_estimator import ContextTokenEstimator
from youyou.domain.content import TextBlock
from youyou.domain.context import VisibleMessage
from youyou.domain.ledger import (
    AssistantMessage,
    ToolCall,
    ToolCallRecord,
    ToolOutput,
    ToolResult,
    ToolResultRecord,
    UserMessage,
)
from youyou.ports.token_counter import TokenCounter

ENGLISH = (
    "The on-call engineer opened the incident at 03:12 UTC after the error rate crossed 5%.",
    "def handler(event, context):\n    return {'status': 200, 'body': json.dumps(event)}\n",
    "Restarting the pods did not help; the connection pool was exhausted by a slow query.",
    "ERROR 2026-11-30T12:00:01Z worker-7 timeout after 30000 ms (retry 3/5) on /api/v2/orders",
)
CHINESE = (
    "值班工程师在凌晨三点收到告警，发现订单服务的错误率突然升高。",
    "重启容器之后问题没有解决，数据库连接池被一个慢查询占满了。",
    "请帮我总结这次故障的根本原因，并给出三条改进建议。",
    "日志显示第七个工作进程在三十秒后超时，重试了三次。",
)
SYSTEM_PROMPT = "You are YouYou, a careful on-call assistant. 回答要简洁。\n" * 40


def mixed_text(rng: random.Random, sentences: int) -> str:
    pool = ENGLISH + CHINESE
    return " ".join(f"{rng.choice(pool)} #{rng.randrange(10_000)}" for _ in range(sentences))


def fresh_text(rng: random.Random, words: int) -> str:
    """Non-repeating text: made-up English-like words and random common Chinese characters."""
    syllables = ("ka", "lo", "mi", "ter", "on", "ex", "pre", "ing", "st", "ro", "qu", "ve")
    parts = []
    for _ in range(words):
        length = rng.randint(1, 4)
        if rng.random() < 0.5:
            parts.append("".join(rng.choice(syllables) for _ in range(length)))
        else:
            parts.append("".join(chr(rng.randint(0x4E00, 0x62FF)) for _ in range(length)))
    return " ".join(parts)


def bench_throughput() -> None:
    rng = random.Random(7)
    corpora = {
        "log-like (repeating sentences)": [mixed_text(rng, 40) for _ in range(300)],
        "fresh (no repeated words)": [fresh_text(rng, 400) for _ in range(300)],
    }
    for label, texts in corpora.items():
        chars = sum(len(t) for t in texts)
        print(f"Throughput on mixed English/Chinese text, {label}, {chars:,} characters")
        bench_counters(texts)


def bench_counters(texts: list[str]) -> None:
    counters: list[tuple[str, TokenCounter]] = [
        (name, BpeTokenCounter(name)) for name in ("cl100k_base", "o200k_base", "llama3", "qwen3")
    ]
    counters.append(("approximate", ApproximateTokenCounter()))
    for name, counter in counters:
        counter.count_text(texts[0])  # load outside the timing
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            tokens = sum(counter.count_text(t) for t in texts)
            best = min(best, time.perf_counter() - start)
        print(f"  {name:<12} {tokens:>9,} tokens  {tokens / best / 1e6:6.2f} M tokens/s")


def make_message(rng: random.Random, seq: int) -> VisibleMessage:
    kind = seq % 4
    if kind == 0:
        return VisibleMessage(seq, UserMessage(content=(TextBlock(text=mixed_text(rng, 3)),)))
    if kind == 1:
        record = ToolCallRecord(
            call_id=f"c{seq}",
            tool_name="search_logs",
            requested_arguments={"query": "timeout", "limit": 50},
            effective_arguments={"query": "timeout", "limit": 50, "service": "orders"},
        )
        return VisibleMessage(seq, ToolCall(call=record))
    if kind == 2:
        output = ToolOutput(content=mixed_text(rng, 20))
        result = ToolResultRecord(call_id=f"c{seq - 1}", tool_name="search_logs", output=output)
        return VisibleMessage(seq, ToolResult(result=result))
    return VisibleMessage(seq, AssistantMessage(content=(TextBlock(text=mixed_text(rng, 6)),)))


def per_turn_ms(turns: int, turn: Callable[[int], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    for i in range(turns):
        turn(i)
    return (time.perf_counter() - start) / turns * 1000


def history_turn_costs(counter: TokenCounter, size: int) -> tuple[float, float, float]:
    """ms per turn: incremental, cached re-sum of the history, uncached re-count."""
    turns = 100
    rng = random.Random(size)
    history = [make_message(rng, seq) for seq in range(1, size + 1)]
    extra_rng = random.Random(0)  # the same new messages for every history size
    extra = [make_message(extra_rng, seq) for seq in range(size + 1, size + 2 * turns + 1)]

    estimator = ContextTokenEstimator(counter)
    running = estimator.messages_tokens(history)
    estimator.text_tokens(SYSTEM_PROMPT)

    def incremental(i: int) -> None:
        nonlocal running
        running += estimator.message_tokens(extra[i])
        estimator.text_tokens(SYSTEM_PROMPT)

    def resum(i: int) -> None:
        estimator.messages_tokens([*history, *extra[: turns + i + 1]])
        estimator.text_tokens(SYSTEM_PROMPT)

    def uncached(i: int) -> None:
        fresh = ContextTokenEstimator(counter)
        fresh.messages_tokens([*history, extra[i]])
        fresh.text_tokens(SYSTEM_PROMPT)

    return per_turn_ms(turns, incremental), per_turn_ms(turns, resum), per_turn_ms(3, uncached)


def bench_estimator() -> None:
    print("\nEstimator cost of one turn that adds one message (o200k_base), ms per turn")
    print(f"  {'history':>8} {'incremental':>12} {'re-sum cached':>14} {'uncached':>10}")
    counter = BpeTokenCounter("o200k_base")
    for size in (100, 1_000, 10_000):
        incremental_ms, resum_ms, uncached_ms = history_turn_costs(counter, size)
        print(f"  {size:>8,} {incremental_ms:>12.4f} {resum_ms:>14.4f} {uncached_ms:>10.2f}")
    print(
        "  incremental = running total + message_tokens(new) + cached system prompt;\n"
        "  re-sum cached = messages_tokens(whole history), only the new message tokenized;\n"
        "  uncached = a fresh estimator re-tokenizing the whole history (what caching avoids)."
    )


if __name__ == "__main__":
    bench_throughput()
    bench_estimator()
