"""The long lists of the task page, paged like the trace tree: a task's tool
results (the Evidence panel) and a run's transcript, ``PAGE_SIZE`` rows at a time, each
with a search within it. Every read is a bounded number of indexed queries whatever the
size of the attempt (20,000 results, 40,000 messages): the page is a slice of an ordered
query and its total a count, never a list of every row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from django.db.models import F, Q, QuerySet

from evidence_app.review.trace_tree import PAGE_SIZE, TreePage
from evidence_app.validation.selectors import evidence_labels_for_task, evidence_labels_of
from tasks_app.records import Run, RunMessage, Task, ToolEvidence

# A transcript message can be a whole tool result: half a page of the evidence list.
TRANSCRIPT_PAGE_SIZE = PAGE_SIZE // 2
# Longer search words are cut (a pasted paragraph is not a search).
SEARCH_MAX_CHARS = 200

__all__ = [
    "PAGE_SIZE",
    "TRANSCRIPT_PAGE_SIZE",
    "evidence_page",
    "search_words",
    "transcript_page",
]


def search_words(raw: str | None) -> str:
    """The search of a list as typed, trimmed (empty: no search)."""
    return " ".join((raw or "").split())[:SEARCH_MAX_CHARS]


def _slice(qs: QuerySet[Any], *, offset: int, size: int, total: int) -> TreePage:
    rows = list(qs[offset : offset + size + 1])
    more = len(rows) > size
    return TreePage(
        items=rows[:size],
        offset=offset,
        total=total,
        next_offset=offset + size if more else None,
        size=size,
    )


def evidence_page(
    task: Task, runs: Sequence[Run], *, offset: int, query: str = "", size: int = PAGE_SIZE
) -> tuple[TreePage, dict[int, str]]:
    """A page of the task's tool results without their content, in the list's order
    (attempt, run, sequence), those whose tool, title, URL or content contain ``query``
    when it is given; with the ``R<n>`` label of each result in the validator's packet.
    ``runs`` are the task's runs with their ``evidence_count`` (the total without a
    search, and the labels of a page, come from them: no read of every result id)."""
    base = ToolEvidence.objects.filter(task=task)
    if query:
        base = base.filter(
            Q(tool_name__icontains=query)
            | Q(title__icontains=query)
            | Q(url__icontains=query)
            | Q(content__icontains=query)
        )
        total = base.count()
    else:
        total = sum(r.evidence_count for r in runs)  # type: ignore[attr-defined]
    ordered = (
        base.without_content()
        .annotate(size=F("content_chars"))
        .order_by("attempt_index", "run_id", "sequence")
    )
    # The next pages are PAGE_SIZE long whatever the size of this one.
    page = replace(_slice(ordered, offset=offset, size=size, total=total), size=PAGE_SIZE)
    if query:
        # A filtered page is not a run of consecutive results: the ids' labels are read.
        every = evidence_labels_for_task(task.pk)
        labels = {e.pk: every[e.pk] for e in page.items if e.pk in every}
    else:
        labels = evidence_labels_of(page.items, runs, start=offset)
    return page, labels


def transcript_page(run: Run, *, offset: int, query: str = "") -> TreePage:
    """A page of the run's messages in order, those whose text or role contain
    ``query`` when it is given."""
    base = RunMessage.objects.filter(run=run)
    if query:
        base = base.filter(Q(content__icontains=query) | Q(role__iexact=query))
    ordered = base.defer("payload").order_by("index")
    return _slice(ordered, offset=offset, size=TRANSCRIPT_PAGE_SIZE, total=base.count())
