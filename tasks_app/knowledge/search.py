"""Searching the knowledge base: full-text search on PostgreSQL (a GIN index, ranked),
a simpler word match on SQLite. The agents' tools and the search page use it."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, TypedDict

from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector
from django.db import connection
from django.db.models import QuerySet

from project.db import MARKER_ID, MARKER_TEXT, Prepared
from project.dbturn import db_turn
from tasks_app.knowledge.models import KnowledgeDocument

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class _Ranked(TypedDict):
    rank: float


STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves please tell give find answer question know need want many much also per
    does according us use using may might shall must get got one""".split()
)
_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'-]*")


def keywords(text: str, *, limit: int = 12) -> list[str]:
    """Content words of ``text`` in first-seen order, lowercased, without stop words."""
    seen: list[str] = []
    for raw in _WORD_RE.findall(text):
        word = raw.lower().strip("'-")
        if len(word) < 3 and not word.isdigit():
            continue
        if word in STOPWORDS or word in seen:
            continue
        seen.append(word)
        if len(seen) >= limit:
            break
    return seen


def stem(word: str) -> str:
    """A crude English stem, enough to match 'budgets' with 'budget' offline."""
    word = word.lower()
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ied", "es", "ed", "ly", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def snippet(body: str, terms: list[str], width: int = 240) -> str:
    lowered = body.lower()
    positions = [lowered.find(t) for t in terms if lowered.find(t) >= 0]
    start = max(min(positions) - 60, 0) if positions else 0
    text = " ".join(body[start : start + width].split())
    return ("…" if start else "") + text + ("…" if start + width < len(body) else "")


def _raw_query(terms: list[str]) -> str:
    """The OR of the key words as a ``to_tsquery`` text ("" when none is left): a
    natural-language question rarely has every word in one document, and ranking puts
    the documents with most matches first."""
    safe = [re.sub(r"[^a-z0-9]", "", t) for t in terms]
    return " | ".join(t for t in safe if t)


def search_queryset(
    terms: list[str], limit: int
) -> QuerySet[WithAnnotations[KnowledgeDocument, _Ranked]] | None:
    """PostgreSQL: the ranked full-text match of ``terms`` (None when no term is left)."""
    raw_query = _raw_query(terms)
    return _ranked(raw_query, limit) if raw_query else None


def _ranked(raw_query: str, limit: int) -> QuerySet[WithAnnotations[KnowledgeDocument, _Ranked]]:
    """The documents matching the ``to_tsquery`` text ``raw_query``, best first."""

    # The same expression as the GIN index knowledgedocument_search (migration 0004):
    # the match (@@) then reads the index instead of every document.
    vector = SearchVector("title", weight="A", config="english") + SearchVector(
        "body", weight="B", config="english"
    )
    search_query = SearchQuery(raw_query, search_type="raw", config="english")
    # alias, not annotate: the vector is matched and ranked in the database, never sent
    # back (parsing a tsvector per document was worker CPU for nothing).
    return (
        KnowledgeDocument.objects.alias(search=vector)
        .filter(search=search_query)
        .annotate(rank=SearchRank(vector, search_query))
        .order_by("-rank", "title")[:limit]
    )


DOC_FIELDS = ("id", "title", "body", "source_url", "source_key", "created_at", "updated_at")


@functools.cache
def _prepared_search(limit: int) -> Prepared:
    """``_ranked`` compiled once per limit (compiling its text-search
    expressions cost the worker more than PostgreSQL spent running it)."""
    return Prepared(_ranked(MARKER_TEXT, limit).values_list(*DOC_FIELDS, "rank"), terms=MARKER_TEXT)


@functools.cache
def prepared_document() -> Prepared:
    return Prepared(
        KnowledgeDocument.objects.filter(pk=MARKER_ID).values_list(*DOC_FIELDS), pk=MARKER_ID
    )


def _search_postgres(terms: list[str], limit: int) -> list[tuple[KnowledgeDocument, float]]:
    raw_query = _raw_query(terms)
    if not raw_query:
        return []
    return [
        (KnowledgeDocument(**dict(zip(DOC_FIELDS, row[:-1], strict=True))), float(row[-1]))
        for row in _prepared_search(limit).rows(terms=raw_query)
    ]


def _search_simple(terms: list[str], limit: int) -> list[tuple[KnowledgeDocument, float]]:
    """SQLite fallback: score each document by key-word hits in title (x3) and body."""
    stems = {stem(t) for t in terms}
    scored = []
    for doc in KnowledgeDocument.objects.all():
        title_words = {stem(w) for w in _WORD_RE.findall(doc.title.lower())}
        body_words: dict[str, int] = {}
        for w in _WORD_RE.findall(doc.body.lower()):
            s = stem(w)
            if s in stems:
                body_words[s] = body_words.get(s, 0) + 1
        matched = stems & (title_words | set(body_words))
        if not matched:
            continue
        score = len(matched) + 3 * len(stems & title_words) + 0.01 * sum(body_words.values())
        scored.append((doc, score / (4 * len(stems))))
    scored.sort(key=lambda pair: (-pair[1], pair[0].title))
    return scored[:limit]


def search_documents(query: str, limit: int = 5) -> list[tuple[KnowledgeDocument, float]]:
    """The knowledge-base search behind the agent's tool, best first; the reviewers'
    search on the task page uses the same one."""
    terms = keywords(query) or [query.lower()]
    with db_turn():
        if connection.vendor == "postgresql":
            return _search_postgres(terms, limit)
        return _search_simple(terms, limit)
