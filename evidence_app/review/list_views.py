"""The task page's long lists as htmx fragments: a page of the Evidence list
and a page of a run's transcript, each with a search within it (``?q=``) and a "more"
row that loads the next page (``?offset=``). The queries are in
``evidence_app.review.lists``."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from evidence_app.review import lists, task_page
from evidence_app.review.trace_tree import offset_of
from project.roles import is_staff_role
from project.views import render_fragment
from tasks_app.records import Run, visible_task


@login_required
@require_GET
def evidence_list(request: HttpRequest, task_id: int) -> HttpResponse:
    """A page of the task's tool results: the first page of a search (the list is
    replaced) or the next page (the "more" row is replaced)."""
    task = visible_task(request, task_id)
    query = lists.search_words(request.GET.get("q"))
    page, labels = lists.evidence_page(
        task, task_page.evidence_runs(task), offset=offset_of(request.GET), query=query
    )
    return render_fragment(
        request,
        "evidence_app/_evidence_list.html",
        {
            "task": task,
            "page": page,
            "evidence_labels": labels,
            "query": query,
            "oob": not page.offset,
        },
    )


@login_required
@require_GET
def run_transcript(request: HttpRequest, task_id: int, run_id: int) -> HttpResponse:
    """A page of a run's transcript (staff material, as the trace tree), with its
    search; the first page comes with the search box and the run's output."""
    task = visible_task(request, task_id)
    if not is_staff_role(request.user):
        raise PermissionDenied("The validator's internals are for reviewers and operators.")
    run = get_object_or_404(Run.objects.defer("payload", "usage", "warnings"), pk=run_id, task=task)
    query = lists.search_words(request.GET.get("q"))
    page = lists.transcript_page(run, offset=offset_of(request.GET), query=query)
    searched = "q" in request.GET
    prefix = f"transcript-{run.pk}"
    return render_fragment(
        request,
        f"evidence_app/_transcript.html#{'messages' if searched or page.offset else 'transcript'}",
        {
            "task": task,
            "run": run,
            "page": page,
            "query": query,
            "oob": searched and not page.offset,
            "ids": {k: f"{prefix}-{k}" for k in ("search", "found", "messages")},
        },
    )
