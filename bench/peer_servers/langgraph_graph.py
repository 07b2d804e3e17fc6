"""The LangGraph Agent Server's graph in the side-by-side server benchmark: one node that sends
the conversation to the fake OpenAI-compatible model through langchain-openai and appends its
answer, the smallest agent that streams a model's answer.

Loaded by ``langgraph dev`` in the peer's own environment (``setup.sh``), never by YouYou; the
model's address comes from ``BENCH_MODEL_URL``. Left out of the project's mypy run, which
does not have LangGraph.
"""

from __future__ import annotations

import os
from typing import Any

from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph

model = ChatOpenAI(
    model="fake-model",
    base_url=os.environ["BENCH_MODEL_URL"],
    api_key="bench",  # the fake checks no key
    streaming=True,
    max_retries=0,
    timeout=120,
)


async def call_model(state: MessagesState) -> dict[str, Any]:
    return {"messages": [await model.ainvoke(state["messages"])]}


graph = StateGraph(MessagesState).add_node("model", call_model).add_edge(START, "model").compile()
