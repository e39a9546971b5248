"""What the reviewer's triage queue reads (selectors): needs_review tasks, oldest
first, filtered by the latest verdict, claim, assignment and title; the day's progress;
where a task stands in the queue and its neighbours (complete-and-next); the queue page's
context; the reviewers a task can be assigned to. The queue's page and the decisions
taken from it (``queue_views``, ``decision_views``) render what these read."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import (
    Case,
    Count,
    DurationField,
    Exists,
    ExpressionWrapper,
    F,
    IntegerField,
    JSONField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    When,
)
from django.db.models.expressions import CombinedExpression
from django.db.models.functions import Coalesce
from django.db.models.lookups import GreaterThan
from django.http import HttpRequest, QueryDict
from django.utils import timezone

from evidence_app.models import FailureCategory, ValidationSnapshot, ValidationStatus
from evidence_app.review.audit_page import open_audit_count
from evidence_app.review.forms import QUEUE_FILTER_KEYS, QueueFilterForm
from evidence_app.trust.blinding import audit_exposures_record
from project.db import MARKER_ID, Prepared
from project.pagination import CountedPaginator
from project.roles import REVIEWERS
from tasks_app.records import (
    Feedback,
    Task,
    TaskEvent,
    TaskStatus,
    TaskStatusCount,
    status_counts,
)

QUEUE_PAGE_SIZE = 50


def _not_held() -> Q:
    """A task whose decision waits in its undo window is decided: it leaves the queue
    now, and comes back if the decision is undone."""
    return ~Q(Exists(Feedback.objects.pending().filter(task=OuterRef("pk"))))


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
            # The first issue the validator named: enough to triage without opening.
            v_issue=Subquery(latest.values("result__issues__0")[:1]),
            v_claims=Subquery(latest.values("claim_summary")[:1], output_field=JSONField()),
            # Why the task waits for a person: the reason of its move into the queue
            # ("judges disagree …" on an accepted verdict).
            v_why=Subquery(
                TaskEvent.objects.filter(task=OuterRef("pk"), to_status=TaskStatus.NEEDS_REVIEW)
                .order_by("-at", "-id")
                .values("reason")[:1]
            ),
        )
        .filter(_not_held())
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
    assigned = filters.get("assigned")
    if assigned == "mine":
        qs = qs.filter(assigned_to=user)
    elif assigned == "unassigned":
        qs = qs.filter(assigned_to__isnull=True)
    return qs


def queue_filters(params: QueryDict) -> tuple[dict[str, Any], str]:
    """The valid queue filters in ``params`` and their canonical query string."""
    form = QueueFilterForm(params)
    filters = form.cleaned_data if form.is_valid() else {}
    clean = QueryDict(mutable=True)
    for key in QUEUE_FILTER_KEYS:
        if filters.get(key):
            clean[key] = filters[key]
    return filters, clean.urlencode()


def queue_progress(user: Any) -> dict[str, int]:
    """Decisions people took today on tasks that were waiting for review, all reviewers
    and this one: a status event out of needs_review with a person as actor."""
    start = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    return TaskEvent.objects.filter(
        from_status=TaskStatus.NEEDS_REVIEW, actor__isnull=False, at__gte=start
    ).aggregate(
        done_today=Count("task_id", distinct=True),
        mine_today=Count("task_id", distinct=True, filter=Q(actor=user)),
    )


class _SubqueryCount(Subquery):
    """The number of rows of a subquery, as a correlated scalar subquery."""

    template = "(SELECT count(*) FROM (%(subquery)s) AS _counted)"
    output_field = IntegerField()


def _beyond(at: OuterRef, pk: OuterRef, *, before: bool, prefix: str = "") -> Q:
    """The tasks (``prefix``: through a relation) before or after the outer task in queue
    order (created_at, id). The keyset is also bounded by ``created_at`` alone, so the
    index (status, created_at, id) starts or ends its range at the outer task instead of
    filtering the whole queue row by row."""
    strict, loose = ("lt", "lte") if before else ("gt", "gte")
    created, ident = f"{prefix}created_at", f"{prefix}id"
    return Q(**{f"{created}__{loose}": at}) & (
        Q(**{f"{created}__{strict}": at}) | Q(**{created: at, f"{ident}__{strict}": pk})
    )


def queue_position(user: Any, filters: dict[str, Any], task_id: int) -> dict[str, Any]:
    """Where ``task_id`` stands in the queue with these filters: position (1-based, 0 when
    it is not in it), total, and the previous and next task ids in queue order.

    The whole queue (no filter) is read by keyset on its order (created_at, id) in one
    query, not as the list of every queued id (100,000 ids per task page at a
    million tasks): the neighbours are one indexed row each, the position an
    index-only count of the tasks between it and the nearer end of the queue, the
    total the status counter (PostgreSQL). A filtered queue
    (a title search, a verdict) has to be scanned anyway: one pass over its ids is
    cheaper than a keyset query repeating the filter in every subquery (measured at a
    million tasks: 240 ms against 1.5 s)."""
    if any(filters.get(k) for k in QUEUE_FILTER_KEYS) or connection.vendor != "postgresql":
        return _position_in(
            list(queue_queryset(user, filters).values_list("pk", flat=True)), task_id
        )

    row = _keyset_row(task_id)
    if row is None or not row["in_queue"]:
        # Not in the queue (or no such task: callers pass a visible one): no position,
        # the queue's first task next.
        return {
            "position": 0,
            "total": unfiltered_queue_size(
                row["total"] if row else status_counts().get(TaskStatus.NEEDS_REVIEW, 0)
            ),
            "prev_id": None,
            "next_id": row["first_id"]
            if row
            else queue_queryset(user, filters).values_list("pk", flat=True).first(),
        }
    prev_id, next_id = row["prev_id"], row["next_id"]
    return {
        "position": row["before_n"] + 1,
        "total": unfiltered_queue_size(row["total"]),
        "prev_id": prev_id,
        "next_id": next_id,
        # After a decision this task leaves the queue: the one after it, else the one before.
        "after_decision_id": next_id if next_id is not None else prev_id,
    }


_KEYSET_COLUMNS = ("in_queue", "total", "first_id", "prev_id", "next_id", "before_n")


@functools.cache
def _keyset_query() -> Prepared:
    """The query of ``_keyset_row``, compiled once: the whole queue (no filter) reads
    the same for every user, and building its five subqueries of the queue through the
    ORM cost more CPU than PostgreSQL spends running them (issue 48: the task page)."""

    def queue() -> QuerySet[Task]:
        # The whole queue's rows without the list's columns and verdict annotations:
        # only ids are read here, and the ORM compiles less.
        return Task.objects.needs_review().filter(_not_held()).order_by("created_at", "id")

    at, pk = OuterRef("created_at"), OuterRef("pk")
    earlier, later = _beyond(at, pk, before=True), _beyond(at, pk, before=False)

    def held(*where: Q) -> _SubqueryCount:
        """How many needs_review tasks (``where``) have a decision waiting in its undo
        window, so left the queue: read from the pending decisions' few rows."""
        return _SubqueryCount(
            Feedback.objects.pending()
            .filter(Q(task__status=TaskStatus.NEEDS_REVIEW), *where)
            .order_by()
            .values("task_id")
            .distinct()
        )

    def queued(*, before: bool) -> CombinedExpression:
        """How many tasks of the queue come before (after) this one: an index-only count
        of the needs_review tasks there, no join per row, less the held ones."""
        there = Task.objects.needs_review().filter(earlier if before else later)
        return _SubqueryCount(there.order_by().values("pk")) - held(
            _beyond(at, pk, before=before, prefix="task__")
        )

    total = Coalesce(
        Subquery(
            TaskStatusCount.objects.filter(status=TaskStatus.NEEDS_REVIEW)
            .values("status")
            .annotate(total=Sum("n"))
            .values("total")[:1]
        ),
        0,
    )
    # The position is counted from the nearer end of the queue, judged by creation
    # time (the oldest and newest needs_review task: one index entry each): the tasks
    # before this one, or the queue's size (the status counter less the held tasks)
    # less those after it and itself. Either count is exact; the nearer one reads at
    # most about half the queue, and a task near either end a few entries.
    oldest, newest = (
        Subquery(Task.objects.needs_review().order_by(order).values("created_at")[:1])
        for order in ("created_at", "-created_at")
    )
    nearer_the_end = GreaterThan(
        ExpressionWrapper(F("created_at") - oldest, output_field=DurationField()),
        ExpressionWrapper(newest - F("created_at"), output_field=DurationField()),
    )
    return Prepared(
        Task.objects.filter(pk=MARKER_ID)
        .annotate(
            in_queue=Exists(queue().filter(pk=pk)),
            total=total,
            first_id=Subquery(queue().values("pk")[:1]),
            prev_id=Subquery(
                queue().filter(earlier).order_by("-created_at", "-id").values("pk")[:1]
            ),
            next_id=Subquery(queue().filter(later).order_by("created_at", "id").values("pk")[:1]),
            before_n=Case(
                When(nearer_the_end, then=total - held() - 1 - queued(before=False)),
                default=queued(before=True),
                output_field=IntegerField(),
            ),
        )
        .values_list(*_KEYSET_COLUMNS)[:1],
        task_id=MARKER_ID,
    )


def _keyset_row(task_id: int) -> Mapping[str, Any] | None:
    """In one query: whether ``task_id`` is in the whole queue, the queue's size (the
    status counter), its first task, the task's neighbours (one indexed row each) and the
    number of tasks before it (counted from the nearer end)."""
    rows = _keyset_query().rows(task_id=task_id)
    return dict(zip(_KEYSET_COLUMNS, rows[0], strict=True)) if rows else None


def unfiltered_queue_size(needs_review: int) -> int:
    """The whole queue's size from the status counter's ``needs_review``: less the tasks
    whose decision waits in its undo window, which left the queue (a small count on the
    pending decisions' partial index)."""
    held = Feedback.objects.pending().filter(task__status=TaskStatus.NEEDS_REVIEW).count()
    return max(0, int(needs_review) - held)


def _position_in(ids: list[int], task_id: int) -> dict[str, Any]:
    """``queue_position`` from the queue's ids in order."""
    if task_id not in ids:
        return {
            "position": 0,
            "total": len(ids),
            "prev_id": None,
            "next_id": ids[0] if ids else None,
        }
    i = ids.index(task_id)
    return {
        "position": i + 1,
        "total": len(ids),
        "prev_id": ids[i - 1] if i > 0 else None,
        "next_id": ids[i + 1] if i + 1 < len(ids) else None,
        # After a decision this task leaves the queue: the one after it, else the one before.
        "after_decision_id": ids[i + 1] if i + 1 < len(ids) else (ids[i - 1] if i else None),
    }


def queue_context(
    request: HttpRequest, params: QueryDict, *, whole_page: bool = True
) -> dict[str, Any]:
    """The queue page's context for these filters and page (``params``): the page of
    tasks, the status counters, the day's progress; with ``whole_page``, the number of
    open audits the page's head links to (the list's refresh does not repeat it). The
    tasks listed are seen by the reader: their open audits are not blind for them."""
    form = QueueFilterForm(params)
    filters, query = queue_filters(params)
    counts = status_counts()  # the status counters: no scan of the table
    # Unfiltered, the queue is every needs_review task: its size is a counter too.
    total = None if query else unfiltered_queue_size(counts.get(TaskStatus.NEEDS_REVIEW, 0))
    page = CountedPaginator(
        queue_queryset(request.user, filters), QUEUE_PAGE_SIZE, count=total
    ).get_page(params.get("page"))
    tasks = list(page.object_list)
    # A task in the queue went to a person after its earlier verdicts: its open audits
    # are not blind for whoever sees it listed.
    audit_exposures_record(
        user=request.user, task_ids=[t.pk for t in tasks], channel="the review queue"
    )
    context = {
        "form": form,
        "page": page,
        "tasks": tasks,
        "counts": [(s, TaskStatus(s).label, counts.get(s, 0)) for s in TaskStatus.values],
        "needs_review_count": counts.get(TaskStatus.NEEDS_REVIEW, 0),
        "query": query,
        "filtered": bool(query),
        "categories": dict(FailureCategory.choices),
        "vstatuses": dict(ValidationStatus.choices),
        "now": timezone.now(),
        "progress": queue_progress(request.user),
    }
    if whole_page:
        context["open_audits"] = open_audit_count(request.user)
    return context


def reviewer_choices() -> list[Any]:
    User = get_user_model()
    return list(
        User.objects.filter(Q(groups__name=REVIEWERS) | Q(is_superuser=True), is_active=True)
        .distinct()
        .order_by("username")
        .only("pk", "username")
    )
