"""The runbook knowledge base (``[[knowledge]]`` and workbench uploads) and its
``search_knowledge`` tool; see docs/knowledge.md."""

from youyou.adapters.knowledge.base import KnowledgeBase
from youyou.adapters.knowledge.index import KnowledgeDocument, KnowledgeIndex, PassageHit
from youyou.adapters.knowledge.passages import Passage, split_passages
from youyou.adapters.knowledge.sources import IndexReport, SourceFile
from youyou.adapters.knowledge.tool import (
    SEARCH_KNOWLEDGE_TOOL_NAME,
    SearchKnowledgeTool,
    citation,
)

__all__ = [
    "SEARCH_KNOWLEDGE_TOOL_NAME",
    "IndexReport",
    "KnowledgeBase",
    "KnowledgeDocument",
    "KnowledgeIndex",
    "Passage",
    "PassageHit",
    "SearchKnowledgeTool",
    "SourceFile",
    "citation",
    "split_passages",
]
