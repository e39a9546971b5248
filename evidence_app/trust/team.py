"""The review team's figures (selectors): decisions per reviewer, time per item from a
reviewer's first view to their decision, the age of the review queue and the audits
waiting for a person.

Counts are grouped aggregates in the database. Percentiles are computed in Python
(numpy's ``inverted_cdf``: the p-th percentile is the smallest value that at least p %
of the items do not exceed, so it is always a time someone actually took) over one
column of rows, bounded: time per item reads at most ``DURATION_ROWS_MAX`` of the
period's newest decisions (and as many audits) and says when it stopped there; the queue
age reads one timestamp per task waiting for review, which a team keeps short."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import (
    Case,
    Count,
    Exists,
    OuterRef,
    Q,
    Subquery,
    Value,
    When,
)
from django.utils import timezone

from evidence_app.models import Audit, AuditState
from project.roles import OPERATORS, REVIEWERS
from tasks_app.records import (
    DecisionState,
    Feedback,
    FeedbackAction,
    ReviewVisit,
    TaskEvent,
    TaskStatus,
    review_queue_age_summary,
    review_queue_entries,
)

__all__ = [
    "DEFAULT_PERIOD",
    "PERIODS",
    "AuditQueue",
    "Durations",
    "QueueAge",
    "ReviewerFigures",
    "TeamFigures",
    "audit_queue",
    "decisions_by_role",
    "queue_age",
    "team_figures",
]

PERIODS = {"day": timedelta(days=1), "week": timedelta(days=7), "month": timedelta(days=30)}
DEFAULT_PERIOD = "week"
# Time per item reads at most this many of a period's newest decisions (and audits).
DURATION_ROWS_MAX = 20_000
DECISION_ACTIONS = (FeedbackAction.SATISFIED, FeedbackAction.REVISE, FeedbackAction.ABANDON)

# A person's role as the figures name it: reviewers (superusers decide as reviewers do),
# operators, requesters, and "removed" for an account deleted since.
REVIEWER, OPERATOR, REQUESTER, REMOVED = "reviewer", "operator", "requester", "removed"
ROLES = (REVIEWER, OPERATOR, REQUESTER, REMOVED)
STAFF_ROLES = (REVIEWER, OPERATOR)


def role_of(user_field: str) -> Case:
    """The role of the user in ``user_field`` as an SQL expression (group membership)."""
    memberships = get_user_model().groups.through.objects

    def member(group: str) -> Exists:
        return Exists(memberships.filter(user_id=OuterRef(user_field), group__name=group))

    return Case(
        When(**{f"{user_field}__isnull": True}, then=Value(REMOVED)),
        When(
            Q(**{f"{user_field}__is_superuser": True}) | Q(member(REVIEWERS)), then=Value(REVIEWER)
        ),
        When(member(OPERATORS), then=Value(OPERATOR)),
        default=Value(REQUESTER),
    )


@dataclass(frozen=True)
class Durations:
    """Seconds from first view to decision: how many items had a first view recorded
    (before the decision), the others, and the 50th and 95th percentiles."""

    count: int = 0
    no_first_view: int = 0
    p50: float | None = None
    p95: float | None = None

    @classmethod
    def of(cls, seconds: list[float], no_first_view: int) -> Durations:
        if not seconds:
            return cls(0, no_first_view)
        p50, p95 = percentiles(seconds, (50, 95))
        return cls(len(seconds), no_first_view, p50, p95)


def percentiles(values: list[float], qs: tuple[float, ...]) -> list[float]:
    """The ``qs`` percentiles of ``values`` (non-empty), each one of the values."""
    found = np.percentile(np.asarray(values, dtype=float), qs, method="inverted_cdf")
    return [float(v) for v in found]


@dataclass
class ReviewerFigures:
    """One person's decisions (by action) and audits in the period, and their time per
    item over both."""

    reviewer_id: int
    username: str
    role: str
    actions: dict[str, int] = field(default_factory=dict)
    audits: int = 0
    time: Durations = field(default_factory=Durations)

    @property
    def decisions(self) -> int:
        return sum(self.actions.values())

    @property
    def items(self) -> int:
        return self.decisions + self.audits

    def as_dict(self) -> dict[str, Any]:
        return {
            "reviewer_id": self.reviewer_id,
            "username": self.username,
            "role": self.role,
            "decisions": self.decisions,
            **{action: self.actions.get(action, 0) for action in DECISION_ACTIONS},
            "audits": self.audits,
        }


@dataclass(frozen=True)
class QueueAge:
    """Tasks waiting for review now, and how long since each entered ``needs_review``."""

    count: int = 0
    p50: float | None = None
    p95: float | None = None
    oldest: float | None = None
    oldest_task_id: int | None = None


@dataclass(frozen=True)
class AuditQueue:
    """Audits waiting for a person, and the age of the oldest."""

    count: int = 0
    oldest: float | None = None
    # No task id: the oldest audit is named by its own id alone (blind).
    oldest_audit_id: int | None = None


@dataclass
class TeamFigures:
    period: str
    since: datetime
    until: datetime
    reviewers: list[ReviewerFigures]
    # Decisions by people outside the review team (requesters, removed accounts).
    other_decisions: int
    decision_time: Durations
    audit_time: Durations
    item_time: Durations
    queue: QueueAge
    audits: AuditQueue
    # True when time per item stopped at DURATION_ROWS_MAX rows of decisions or audits.
    capped: bool = False

    @property
    def decisions(self) -> int:
        return sum(r.decisions for r in self.reviewers) + self.other_decisions

    @property
    def audits_judged(self) -> int:
        return sum(r.audits for r in self.reviewers)


def period_bounds(period: str, now: datetime | None = None) -> tuple[datetime, datetime]:
    """[since, until) of a named period ending now; a ``KeyError`` for an unknown name."""
    until = now or timezone.now()
    return until - PERIODS[period], until


def _decisions(since: datetime, until: datetime) -> Any:
    return Feedback.objects.filter(
        state=DecisionState.APPLIED,
        action__in=DECISION_ACTIONS,
        created_at__gte=since,
        created_at__lt=until,
    )


def _judged_audits(since: datetime, until: datetime) -> Any:
    return Audit.objects.filter(state=AuditState.DONE, decided_at__gte=since, decided_at__lt=until)


def _reviewer_rows(since: datetime, until: datetime) -> tuple[dict[int, ReviewerFigures], int]:
    """The review team's decisions by person and action, their judged audits, and the
    count of everyone else's decisions: two grouped queries."""
    people: dict[int, ReviewerFigures] = {}
    others = 0
    decided = (
        _decisions(since, until)
        .annotate(role=role_of("author"))
        .values("author_id", "author__username", "role", "action")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for row in decided:
        if row["role"] not in STAFF_ROLES:
            others += row["n"]
            continue
        person = people.setdefault(
            row["author_id"],
            ReviewerFigures(row["author_id"], row["author__username"], row["role"]),
        )
        person.actions[row["action"]] = person.actions.get(row["action"], 0) + row["n"]
    judged = (
        _judged_audits(since, until)
        .filter(reviewer__isnull=False)
        .annotate(role=role_of("reviewer"))
        .values("reviewer_id", "reviewer__username", "role")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for row in judged:
        person = people.setdefault(
            row["reviewer_id"],
            ReviewerFigures(row["reviewer_id"], row["reviewer__username"], row["role"]),
        )
        person.audits += row["n"]
    return people, others


def _seconds(rows: Iterable[tuple[int, Any, Any]]) -> dict[int, list[float | None]]:
    """Per person, each item's seconds from first view to decision (None: no first view
    recorded, or one after the decision: the item was decided elsewhere, e.g. from the
    queue's own form)."""
    out: dict[int, list[float | None]] = defaultdict(list)
    for person, viewed, decided in rows:
        ok = viewed is not None and decided is not None and viewed <= decided
        out[person].append((decided - viewed).total_seconds() if ok else None)
    return out


def _decision_seconds(since: datetime, until: datetime) -> tuple[dict[int, list[Any]], bool]:
    first_view = ReviewVisit.objects.filter(
        task_id=OuterRef("task_id"),
        attempt_index=OuterRef("attempt_index"),
        reviewer_id=OuterRef("author_id"),
    ).values("first_viewed_at")[:1]
    rows = list(
        _decisions(since, until)
        .annotate(role=role_of("author"))
        .filter(role__in=STAFF_ROLES)
        .annotate(first_view=Subquery(first_view))
        .order_by("-created_at", "-id")
        .values_list("author_id", "first_view", "created_at")[: DURATION_ROWS_MAX + 1]
    )
    return _seconds(rows[:DURATION_ROWS_MAX]), len(rows) > DURATION_ROWS_MAX


def _audit_seconds(since: datetime, until: datetime) -> tuple[dict[int, list[Any]], bool]:
    rows = list(
        _judged_audits(since, until)
        .filter(reviewer__isnull=False)
        .order_by("-decided_at", "-id")
        .values_list("reviewer_id", "judge_first_viewed_at", "decided_at")[: DURATION_ROWS_MAX + 1]
    )
    return _seconds(rows[:DURATION_ROWS_MAX]), len(rows) > DURATION_ROWS_MAX


def _summary(per_person: dict[int, list[float | None]]) -> Durations:
    values = [s for items in per_person.values() for s in items]
    seen = [s for s in values if s is not None]
    return Durations.of(seen, len(values) - len(seen))


def queue_age(now: datetime | None = None) -> QueueAge:
    """The tasks in ``needs_review`` and their age since the latest event that moved them
    there (a task without such an event counts from its creation).

    On PostgreSQL one query does it all: the entry times in one join and grouping
    rather than a subquery per task, and the percentiles (``percentile_disc``: each one
    of the ages, as ``percentiles``), so a large queue is not carried into Python on
    every scrape."""
    now = now or timezone.now()
    if connection.vendor == "postgresql":
        return _queue_age_sql(now)
    rows = list(review_queue_entries())
    if not rows:
        return QueueAge()
    ages = [max(0.0, (now - at).total_seconds()) for _, at in rows]
    p50, p95 = percentiles(ages, (50, 95))
    return QueueAge(len(rows), p50, p95, ages[0], rows[0][0])


def _queue_age_sql(now: datetime) -> QueueAge:
    count, p50, p95, oldest, oldest_id = review_queue_age_summary(now)
    if not count:
        return QueueAge()
    return QueueAge(int(count), float(p50), float(p95), float(oldest), int(oldest_id))


def audit_queue(now: datetime | None = None) -> AuditQueue:
    """Open audits: how many, and the oldest (two indexed reads)."""
    now = now or timezone.now()
    count = Audit.objects.open().count()
    if not count:
        return AuditQueue()
    oldest = Audit.objects.open().order_by("created_at", "id").values("pk", "created_at")[0]
    age = max(0.0, (now - oldest["created_at"]).total_seconds())
    return AuditQueue(count, age, oldest["pk"])


def team_figures(period: str = DEFAULT_PERIOD, now: datetime | None = None) -> TeamFigures:
    """Everything the team page and ``GET /team`` show for a named period ending now."""
    now = now or timezone.now()
    since, until = period_bounds(period, now)
    people, others = _reviewer_rows(since, until)
    decision_seconds, decisions_capped = _decision_seconds(since, until)
    audit_seconds, audits_capped = _audit_seconds(since, until)
    for person_id, person in people.items():
        mine = decision_seconds.get(person_id, []) + audit_seconds.get(person_id, [])
        person.time = _summary({person_id: mine})
    reviewers = sorted(people.values(), key=lambda r: (-r.items, r.username))
    everything = {
        person_id: decision_seconds.get(person_id, []) + audit_seconds.get(person_id, [])
        for person_id in set(decision_seconds) | set(audit_seconds)
    }
    return TeamFigures(
        period=period,
        since=since,
        until=until,
        reviewers=reviewers,
        other_decisions=others,
        decision_time=_summary(decision_seconds),
        audit_time=_summary(audit_seconds),
        item_time=_summary(everything),
        queue=queue_age(now),
        audits=audit_queue(now),
        capped=decisions_capped or audits_capped,
    )


def decisions_by_role(now: datetime | None = None, *, hours: int = 24) -> dict[str, int]:
    """People's decisions in the last ``hours`` by role, for /metrics: status changes out
    of ``needs_review`` made by a person (the review queue's "decided today", read on its
    partial index) and audits judged."""
    since = (now or timezone.now()) - timedelta(hours=hours)
    counts = dict.fromkeys(ROLES, 0)
    decided = (
        TaskEvent.objects.filter(
            from_status=TaskStatus.NEEDS_REVIEW, actor__isnull=False, at__gte=since
        )
        .annotate(role=role_of("actor"))
        .values("role")
        .annotate(n=Count("pk"))
        .order_by()
    )
    judged = (
        Audit.objects.filter(state=AuditState.DONE, decided_at__gte=since)
        .annotate(role=role_of("reviewer"))
        .values("role")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for row in [*decided, *judged]:
        counts[row["role"]] = counts.get(row["role"], 0) + row["n"]
    return counts
