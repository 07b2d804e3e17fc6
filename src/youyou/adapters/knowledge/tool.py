"""``search_knowledge``: ranked runbook passages, each under the citation the model must copy.

The mandatory instructions require citing sources; a citation is only as good as what the
model was given, so every passage arrives headed by a ready-made line
``[source: runbooks/db.md § Failover > Steps, lines 12–30]`` (where it is, which section, which
lines) and the result says to cite it. The tool is closed over the scopes its user may read:
arguments cannot widen them.
"""

from __future__ import annotations

from collections.abc import Sequence

from youyou.adapters.knowledge.index import KnowledgeIndex, PassageHit
from youyou.adapters.tools.load_skill import DISPLAY_KEY
from youyou.domain.cancel import CancellationToken
from youyou.domain.ledger import ToolOutput
from youyou.domain.tool import ToolDescriptor, ToolInput

SEARCH_KNOWLEDGE_TOOL_NAME = "search_knowledge"
DEFAULT_TOP_K = 5
MAX_TOP_K = 20
SOURCE_PREFIX = "source:"
UPLOAD_PREFIX = "user:"

_DESCRIPTOR = ToolDescriptor.builtin(
    name=SEARCH_KNOWLEDGE_TOOL_NAME,
    description=(
        "Search the runbook knowledge base (the team's runbooks and the user's uploaded "
        "documents) by keywords, in English or Chinese. Returns the best passages, each under "
        "a [source: …] line naming the document, section and lines: cite that line when you "
        "use a passage, and say so when nothing relevant is found instead of guessing. "
        "按关键词检索运维手册知识库（中英文均可），返回最相关的段落及出处；"
        "引用段落时注明其 [source: …] 出处。"
    ),
    parameters_schema={
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "Keywords: service, symptom, error text, procedure name.",
            },
            "top_k": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_TOP_K,
                "description": f"How many passages (default {DEFAULT_TOP_K}).",
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    },
)


def source_scope(source_id: str) -> str:
    return SOURCE_PREFIX + source_id


def upload_scope(owner_id: str) -> str:
    return UPLOAD_PREFIX + owner_id


def document_name(scope: str, path: str) -> str:
    """``<source id>/<path in it>`` for a configured source, the file name for an upload."""
    if scope.startswith(SOURCE_PREFIX):
        return f"{scope.removeprefix(SOURCE_PREFIX)}/{path}"
    return f"{path} (uploaded)"


def citation(hit: PassageHit) -> str:
    section = f" § {' > '.join(hit.headings)}" if hit.headings else ""
    lines = (
        f"line {hit.line_start}"
        if hit.line_start == hit.line_end
        else f"lines {hit.line_start}–{hit.line_end}"
    )
    return f"[source: {document_name(hit.scope, hit.path)}{section}, {lines}]"


def render_results(query: str, hits: Sequence[PassageHit]) -> str:
    if not hits:
        return (
            f'No passage of the knowledge base matches "{query}". Try other keywords; if '
            "nothing matches, say that the runbooks do not cover it rather than guessing."
        )
    head = (
        f'{len(hits)} passage{"s" if len(hits) > 1 else ""} for "{query}", best first. '
        "Cite the [source: …] line of each passage you use."
    )
    blocks = [f"[{rank}] {citation(hit)}\n{hit.text}" for rank, hit in enumerate(hits, 1)]
    return "\n\n".join([head, *blocks])


class SearchKnowledgeTool:
    """Read-only, so it runs in parallel with other read-only calls."""

    def __init__(self, index: KnowledgeIndex, scopes: Sequence[str]) -> None:
        self._index = index
        self.scopes = tuple(scopes)

    @property
    def descriptor(self) -> ToolDescriptor:
        return _DESCRIPTOR

    async def call(self, tool_input: ToolInput, cancel: CancellationToken) -> ToolOutput:
        query = str(tool_input.arguments["query"]).strip()
        top_k = int(tool_input.arguments.get("top_k", DEFAULT_TOP_K))
        hits = await self._index.search(self.scopes, query, top_k)
        citations = [citation(hit) for hit in hits]
        shown = f"{len(hits)} found: " + " ".join(citations) if hits else "no matching passage"
        return ToolOutput(
            content=render_results(query, hits),
            metadata={DISPLAY_KEY: shown, "citations": citations},
        )
