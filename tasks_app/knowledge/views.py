"""Knowledge-base search for reviewers: the agent's own search, run from the
task page, and a document page that opens at the matching passage."""

from __future__ import annotations

import re
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from project.views import HtmxHttpRequest, render_fragment, render_page, reviewer_required
from tasks_app.knowledge.models import KnowledgeDocument
from tasks_app.knowledge.search import keywords, search_documents, stem

KB_RESULTS = 8
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")


def marked_segments(text: str, stems: set[str]) -> list[tuple[str, bool]]:
    """``text`` as (piece, is_match) pairs; the template escapes each piece and wraps
    matches in <mark>, so document text is never marked safe."""
    out: list[tuple[str, bool]] = []
    at = 0
    for m in _WORD.finditer(text):
        if stem(m.group(0)) in stems:
            if m.start() > at:
                out.append((text[at : m.start()], False))
            out.append((m.group(0), True))
            at = m.end()
    if at < len(text):
        out.append((text[at:], False))
    return out


def passages(body: str, stems: set[str]) -> list[dict[str, Any]]:
    """The document split into paragraphs, each with its marked pieces; the first
    paragraph with the most matching words is the one the page opens at."""
    paras = [p for p in re.split(r"\n\s*\n", body) if p.strip()]
    out = []
    for i, p in enumerate(paras):
        segments = marked_segments(p, stems) if stems else [(p, False)]
        out.append({"n": i + 1, "segments": segments, "hits": sum(1 for _, m in segments if m)})
    return out


def best_passage(items: list[dict[str, Any]]) -> int | None:
    best = max(items, key=lambda p: p["hits"], default=None)
    return best["n"] if best and best["hits"] else None


@reviewer_required
@require_GET
def kb_search(request: HtmxHttpRequest) -> HttpResponse:
    query = request.GET.get("q", "").strip()[:200]
    results: list[dict[str, Any]] = []
    if query:
        stems = {stem(t) for t in keywords(query)}
        for doc, _score in search_documents(query, KB_RESULTS):
            items = passages(doc.body, stems)
            at = best_passage(items)
            results.append(
                {
                    "doc": doc,
                    "passage": at,
                    "snippet": next((p for p in items if p["n"] == at), None),
                }
            )
    context = {"query": query, "results": results, "task_id": request.GET.get("task", "")}
    if request.htmx:
        return render_fragment(request, "tasks_app/_kb_results.html", context)
    return render_page(request, "tasks_app/kb_search.html", context)


@reviewer_required
@require_GET
def kb_document(request: HttpRequest, document_id: int) -> HttpResponse:
    doc = get_object_or_404(KnowledgeDocument, pk=document_id)
    query = request.GET.get("q", "").strip()[:200]
    stems = {stem(t) for t in keywords(query)} if query else set()
    items = passages(doc.body, stems)
    return render_page(
        request,
        "tasks_app/kb_document.html",
        {
            "doc": doc,
            "query": query,
            "passages": items,
            "best": best_passage(items),
            "task_id": request.GET.get("task", ""),
        },
    )
