"""The reviewer's triage queue (SPEC U1): needs_review tasks, oldest first, filtered by
the latest verdict, claim and title; refreshed by htmx without a full reload."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.paginator import Paginator
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse, QueryDict
from django.utils import timezone
from django.views.decorators.http import require_GET

from evidence_app.models import FailureCategory, ValidationSnapshot, ValidationStatus
from tasks_app.forms import QueueFilterForm
from tasks_app.models import Task
from tasks_app.states import TaskStatus
from tasks_app.views_common import render_fragment, render_page, reviewer_required, wants_fragment

QUEUE_PAGE_SIZE = 50


def queue_queryset(user: Any, filters: dict[str, Any]) -> QuerySet[Task]:
    """needs_review tasks, oldest first, annotated with their latest original verdict.

    The verdict comes from correlated subqueries so the whole page is one query however
    many tasks and snapshots there are.
    """
    latest = (
        ValidationSnapshot.objects.originals()
        .filter(task=OuterRef("pk"))
        .order_by("-created_at", "-id")
    )
    qs = (
        Task.objects.needs_review()
        .for_list()
        .annotate(
            v_status=Subquery(latest.values("status")[:1]),
            v_category=Subquery(latest.values("failure_category")[:1]),
            v_score=Subquery(latest.values("score")[:1]),
            # The first issue the validator named: enough to triage without opening.
            v_issue=Subquery(latest.values("result__issues__0")[:1]),
        )
        .order_by("created_at", "id")
    )
    if filters.get("q"):
        qs = qs.filter(title__icontains=filters["q"])
    if filters.get("category"):
        qs = qs.filter(v_category=filters["category"])
    vstatus = filters.get("vstatus")
    if vstatus == "none":
        qs = qs.filter(v_status__isnull=True)
    elif vstatus:
        qs = qs.filter(v_status=vstatus)
    claim = filters.get("claimed")
    live_since = timezone.now() - timedelta(seconds=settings.REVIEW_CLAIM_TIMEOUT_SECONDS)
    live_claim = Q(claimed_by__isnull=False, claimed_at__gte=live_since)
    if claim == "claimed":
        qs = qs.filter(live_claim)
    elif claim == "unclaimed":
        qs = qs.exclude(live_claim)
    elif claim == "mine":
        qs = qs.filter(live_claim, claimed_by=user)
    return qs


def queue_response(
    request: HttpRequest, params: QueryDict, *, fragment: str | None = None, status: int = 200
) -> HttpResponse:
    form = QueueFilterForm(params)
    filters = form.cleaned_data if form.is_valid() else {}
    page = Paginator(queue_queryset(request.user, filters), QUEUE_PAGE_SIZE).get_page(
        params.get("page")
    )
    counts = dict(
        Task.objects.order_by()
        .values_list("status")
        .annotate(n=Count("*"))  # COUNT(*): an index-only scan
        .values_list("status", "n")
    )
    clean = QueryDict(mutable=True)
    for key in ("q", "category", "vstatus", "claimed"):
        if filters.get(key):
            clean[key] = filters[key]
    query = clean.urlencode()
    context = {
        "form": form,
        "page": page,
        "tasks": page.object_list,
        "counts": [(s, TaskStatus(s).label, counts.get(s, 0)) for s in TaskStatus.values],
        "needs_review_count": counts.get(TaskStatus.NEEDS_REVIEW, 0),
        "query": query,
        "filtered": bool(query),
        "categories": dict(FailureCategory.choices),
        "vstatuses": dict(ValidationStatus.choices),
        "now": timezone.now(),
    }
    if fragment:
        return render_fragment(request, f"tasks_app/queue.html#{fragment}", context, status=status)
    return render_page(request, "tasks_app/queue.html", context, status=status)


@reviewer_required
@require_GET
def review_queue(request: HttpRequest) -> HttpResponse:
    if wants_fragment(request, "queue-list"):
        return queue_response(request, request.GET, fragment="queue_list")
    return queue_response(request, request.GET)
