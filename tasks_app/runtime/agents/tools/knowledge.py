"""Knowledge-base tools: searching the knowledge base (``tasks_app.knowledge.search``)
and reading a document in full."""

from __future__ import annotations

from project.dbturn import db_turn
from tasks_app.knowledge.models import KnowledgeDocument
from tasks_app.knowledge.search import (
    DOC_FIELDS,
    keywords,
    prepared_document,
    search_documents,
    snippet,
)
from tasks_app.runtime.agents.tools.registry import Tool, ToolError, ToolOutput, register_tool


def search_knowledge(query: str, limit: int = 5) -> ToolOutput:
    query = str(query).strip()
    if not query:
        raise ToolError("query must not be empty")
    limit = max(1, min(int(limit), 10))
    terms = keywords(query) or [query.lower()]
    hits = search_documents(query, limit)
    if not hits:
        return ToolOutput(
            content=f"No documents match '{query}'.", payload={"query": query, "hits": []}
        )
    # Plain list without counts or scores in the text (they are in the payload): figures
    # here would read like competing facts to a grounding check.
    lines = [f"Documents matching '{query}', best first:"]
    for doc, _score in hits:
        lines.append(f"- [doc {doc.pk}] {doc.title}")
        lines.append(f"   {snippet(doc.body, terms)}")
    lines.append("Use read_document with a document_id to read a document in full.")
    return ToolOutput(
        content="\n".join(lines),
        payload={
            "query": query,
            "hits": [{"id": d.pk, "title": d.title, "score": s} for d, s in hits],
        },
    )


def read_document(document_id: int | str) -> ToolOutput:
    try:
        pk = int(str(document_id).strip().removeprefix("doc").strip())
    except ValueError:
        raise ToolError(f"document_id must be a number, got {document_id!r}") from None
    with db_turn():
        found = prepared_document().rows(pk=pk)
    doc = KnowledgeDocument(**dict(zip(DOC_FIELDS, found[0], strict=True))) if found else None
    if doc is None:
        raise ToolError(f"there is no document with id {pk}")
    # The whole body, never cut: a fact deep in a long document must reach the evidence.
    return ToolOutput(
        content=f"Title: {doc.title}\n\n{doc.body}",
        title=doc.title,
        url=doc.source_url,
        payload={"document_id": doc.pk},
    )


register_tool(
    Tool(
        name="search_knowledge",
        description=(
            "Search the company knowledge base. Returns the best matching documents with "
            "their ids, titles and a short snippet. Read a document with read_document."
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Key words to search for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 10, "default": 5},
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        func=search_knowledge,
    )
)
register_tool(
    Tool(
        name="read_document",
        description="Read one knowledge-base document in full, by the id search_knowledge gave.",
        parameters={
            "type": "object",
            "properties": {"document_id": {"type": "integer"}},
            "required": ["document_id"],
            "additionalProperties": False,
        },
        func=read_document,
    )
)
