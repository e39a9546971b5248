"""The review team's figures (issue 27, item 6): decisions per reviewer, time per item
from a reviewer's first view to their decision, the review queue's age and the audits
waiting, from constructed decisions, visits, events and audits with known times."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from evidence_app.models import Audit, AuditState, VerdictRoute
from evidence_app.trust import team as team_module
from evidence_app.trust.team import team_figures
from tasks_app.models import Feedback, ReviewVisit, Task, TaskEvent
from tasks_app.workflow.states import TaskStatus as S
from tests.api.conftest import bearer_client
from tests.factories import TaskFactory, UserFactory, ValidationSnapshotFactory
from tests.ui.conftest import make_reviewable_task

pytestmark = pytest.mark.django_db

MIN = 60.0
HOUR = 3600.0


def _decision(
    author: Any,
    *,
    at: datetime,
    action: str = "satisfied",
    seen_before: float | None = None,
    state: str = "applied",
) -> Feedback:
    """A decision on a closed task at ``at``; with ``seen_before`` (seconds), the
    author's first view of that attempt that long before it (negative: after it)."""
    task = TaskFactory(status=S.CLOSED, attempt_count=2)
    if seen_before is not None:
        ReviewVisit.objects.create(
            task=task,
            attempt_index=2,
            reviewer=author,
            first_viewed_at=at - timedelta(seconds=seen_before),
        )
    return Feedback.objects.create(
        task=task, author=author, action=action, attempt_index=2, created_at=at, state=state
    )


def _audit(
    *,
    created: datetime,
    reviewer: Any = None,
    viewed: float | None = None,
    decided: datetime | None = None,
) -> Audit:
    snapshot = ValidationSnapshotFactory(task=TaskFactory(status=S.CLOSED), attempt_index=1)
    return Audit.objects.create(
        snapshot=snapshot,
        task_id=snapshot.task_id,
        attempt_index=1,
        route=VerdictRoute.AUTO_ACCEPTED,
        probability=0.05,
        created_at=created,
        state=AuditState.DONE if decided else AuditState.OPEN,
        reviewer=reviewer,
        correct=True if decided else None,
        first_viewed_at=decided - timedelta(seconds=viewed) if decided and viewed else None,
        judge_first_viewed_at=decided - timedelta(seconds=viewed) if decided and viewed else None,
        decided_at=decided,
    )


def _waiting(*, entered: list[datetime]) -> Task:
    """A task in needs_review that entered it at each of ``entered`` (the last counts)."""
    task = TaskFactory(status=S.NEEDS_REVIEW, attempt_count=1)
    for at in entered:
        TaskEvent.objects.create(
            task=task, from_status=S.VALIDATING, to_status=S.NEEDS_REVIEW, at=at
        )
    return task


@pytest.fixture
def rex(db: Any) -> Any:
    user = UserFactory(username="rex")
    user.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    return user


@pytest.fixture
def world(reviewer: Any, rex: Any, requester: Any) -> dict[str, Any]:
    """rita: five decisions (four timed: 1, 2, 3 and 10 min; one decided without opening
    the page) and one audit (5 min); rex: two timed decisions (30 s, 90 s) and one whose
    only visit came after it; outside the figures: a decision eight days old, an undone
    one, a note; a requester's decision counts apart. Three tasks wait for review (1 h,
    2 h and 10 h) and two audits are open (3 h and 1 h)."""
    now = timezone.now()
    ago = lambda seconds: now - timedelta(seconds=seconds)  # noqa: E731
    _decision(reviewer, at=ago(2 * HOUR), seen_before=1 * MIN)
    _decision(reviewer, at=ago(30 * HOUR), seen_before=2 * MIN, action="revise")
    _decision(reviewer, at=ago(3 * 24 * HOUR), seen_before=3 * MIN)
    _decision(reviewer, at=ago(5 * 24 * HOUR), seen_before=10 * MIN, action="abandon")
    _decision(reviewer, at=ago(1 * HOUR))
    _decision(rex, at=ago(3 * HOUR), seen_before=30)
    _decision(rex, at=ago(4 * HOUR), seen_before=90)
    _decision(rex, at=ago(5 * HOUR), seen_before=-60)
    _decision(reviewer, at=ago(8 * 24 * HOUR), seen_before=1)
    _decision(reviewer, at=ago(HOUR), seen_before=1, state="undone")
    _decision(reviewer, at=ago(HOUR), seen_before=1, action="note")
    _decision(requester, at=ago(HOUR))
    _audit(created=ago(2 * 24 * HOUR), reviewer=reviewer, viewed=5 * MIN, decided=ago(6 * HOUR))
    oldest = _waiting(entered=[ago(40 * HOUR), ago(10 * HOUR)])
    _waiting(entered=[ago(2 * HOUR)])
    _waiting(entered=[ago(1 * HOUR)])
    oldest_audit = _audit(created=ago(3 * HOUR))
    _audit(created=ago(1 * HOUR))
    return {"now": now, "oldest_task": oldest, "oldest_audit": oldest_audit}


def test_figures_give_the_known_counts_percentiles_and_ages(
    world: dict[str, Any], reviewer: Any, rex: Any
) -> None:
    """Issue 27, item 6: per reviewer, applied decisions by action and judged audits; time
    per item p50/p95 per reviewer and overall (inverted_cdf: a value someone took), items
    without a first view (or with one after the decision) counted apart, never as zero;
    the queue's age from the latest entry into needs_review; the open audits."""
    team = team_figures("week", now=world["now"])
    by_name = {r.username: r for r in team.reviewers}
    assert [r.username for r in team.reviewers] == ["rita", "rex"]
    rita = by_name["rita"]
    assert rita.actions == {"satisfied": 3, "revise": 1, "abandon": 1}
    assert (rita.decisions, rita.audits, rita.role) == (5, 1, "reviewer")
    # rita's timed items: 1, 2, 3, 5 (the audit) and 10 minutes.
    assert (rita.time.count, rita.time.no_first_view) == (5, 1)
    assert (rita.time.p50, rita.time.p95) == (3 * MIN, 10 * MIN)
    assert by_name["rex"].actions == {"satisfied": 3}
    assert (by_name["rex"].time.p50, by_name["rex"].time.p95) == (30, 90)
    assert by_name["rex"].time.no_first_view == 1
    assert team.other_decisions == 1
    assert (team.decisions, team.audits_judged) == (9, 1)
    # Decisions: 30 s, 60 s, 90 s, 2, 3 and 10 min; the audit: 5 min; everything: both.
    assert team.decision_time.__dict__ == {
        "count": 6,
        "no_first_view": 2,
        "p50": 90.0,
        "p95": 10 * MIN,
    }
    assert (team.audit_time.count, team.audit_time.p50, team.audit_time.p95) == (1, 300, 300)
    assert (team.item_time.count, team.item_time.p50, team.item_time.p95) == (7, 2 * MIN, 600)
    assert team.capped is False
    queue = team.queue
    assert (queue.count, queue.p50, queue.p95, queue.oldest) == (3, 2 * HOUR, 10 * HOUR, 10 * HOUR)
    assert queue.oldest_task_id == world["oldest_task"].pk
    audits = team.audits
    assert (audits.count, audits.oldest, audits.oldest_audit_id) == (
        2,
        3 * HOUR,
        world["oldest_audit"].pk,
    )

    day = team_figures("day", now=world["now"])
    assert {r.username: r.decisions for r in day.reviewers} == {"rita": 2, "rex": 3}
    assert {r.username: r.audits for r in day.reviewers} == {"rita": 1, "rex": 0}
    assert (day.decision_time.p50, day.decision_time.p95) == (60, 90)


def test_time_per_item_reads_only_the_newest_rows_and_says_so(
    world: dict[str, Any], monkeypatch: Any
) -> None:
    """Issue 27, item 6: the percentiles read a bounded number of the period's newest
    decisions (and audits); past it the figures say they were capped, and the counts of
    decisions stay whole (they are aggregates)."""
    monkeypatch.setattr(team_module, "DURATION_ROWS_MAX", 3)
    team = team_figures("week", now=world["now"])
    assert team.capped is True
    # The three newest staff decisions: rita 1 h (no view), rita 2 h (60 s), rex 3 h (30 s).
    assert team.decision_time.__dict__ == {
        "count": 2,
        "no_first_view": 1,
        "p50": 30.0,
        "p95": 60.0,
    }
    assert team.decisions == 9


def test_empty_figures_say_nothing_rather_than_zero(db: Any) -> None:
    """Issue 27, item 6: with nothing decided, waiting or open, there are no percentiles
    (None, shown as a dash), not zeros."""
    team = team_figures("month")
    assert team.reviewers == [] and team.decisions == 0
    assert (team.item_time.count, team.item_time.p50, team.item_time.p95) == (0, None, None)
    assert (team.queue.count, team.queue.p50, team.queue.oldest_task_id) == (0, None, None)
    assert (team.audits.count, team.audits.oldest) == (0, None)


def test_a_reviewer_opening_the_task_records_the_first_view_once(
    client: Client, reviewer: Any, operator: Any, requester: Any
) -> None:
    """Issue 27, item 6: a reviewer's (or operator's) view of a task waiting for review
    records a first view of its current attempt; a second view does not move it."""
    task = make_reviewable_task(requester)
    client.force_login(reviewer)
    assert client.get(reverse("task_detail", args=[task.pk])).status_code == 200
    first = ReviewVisit.objects.get(task=task, reviewer=reviewer)
    assert first.attempt_index == 1
    assert client.get(reverse("task_detail", args=[task.pk])).status_code == 200
    # A queue navigation (an htmx load of the page into #main) is a view too.
    again = client.get(
        reverse("task_detail", args=[task.pk]), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="main"
    )
    assert again.status_code == 200
    assert list(ReviewVisit.objects.values_list("reviewer_id", "first_viewed_at")) == [
        (reviewer.pk, first.first_viewed_at)
    ]
    # The next attempt is a new item.
    Task.objects.filter(pk=task.pk).update(attempt_count=2)
    client.get(reverse("task_detail", args=[task.pk]))
    assert sorted(
        ReviewVisit.objects.filter(reviewer=reviewer).values_list("attempt_index", flat=True)
    ) == [1, 2]
    client.force_login(operator)
    client.get(reverse("task_detail", args=[task.pk]))
    assert ReviewVisit.objects.filter(reviewer=operator).count() == 1


def test_a_requester_view_or_a_task_not_waiting_records_nothing(
    client: Client, reviewer: Any, requester: Any
) -> None:
    """Issue 27, item 6: a requester looking at their own task waiting for review records
    no visit; nor does a reviewer opening a task that is not waiting for review."""
    task = make_reviewable_task(requester)
    client.force_login(requester)
    assert client.get(reverse("task_detail", args=[task.pk])).status_code == 200
    assert not ReviewVisit.objects.exists()
    closed = TaskFactory(owner=requester, status=S.CLOSED, attempt_count=1)
    client.force_login(reviewer)
    assert client.get(reverse("task_detail", args=[closed.pk])).status_code == 200
    assert not ReviewVisit.objects.exists()


def test_team_page_and_overview_show_the_figures_to_operators(
    client: Client, world: dict[str, Any], operator: Any
) -> None:
    """Issue 27, item 6: /ops/team/ shows the queue's age with a link to the oldest task,
    the open audits, time per item and the decisions per reviewer; the period selector
    narrows them; the operator overview's panel links to the page."""
    client.force_login(operator)
    html = client.get(reverse("ops_team")).content.decode()
    oldest = world["oldest_task"].pk
    assert 'data-figure="queue-count">3<' in html
    assert 'data-figure="queue-p50">2 h 00 min<' in html
    assert 'data-figure="queue-p95">10 h 00 min<' in html
    assert (
        f'10 h 00 min (<a href="{reverse("task_detail", args=[oldest])}">task #{oldest}</a>)'
        in html
    )
    assert 'data-figure="audits-open">2<' in html
    assert '<tr data-reviewer="rita"><td>rita</td><td>Reviewer</td><td class="num">3</td>' in html
    assert '<td class="num">3 min 00 s</td><td class="num">10 min 00 s</td>' in html
    assert '<tr data-time="decisions"><td>Decisions</td><td class="num">6</td>' in html
    assert "in the same period: 1." in html
    day = client.get(reverse("ops_team"), {"period": "day"})
    assert day.context["team"].period == "day"
    assert 'aria-current="page">Last 24 hours<' in day.content.decode()
    assert client.get(reverse("ops_team"), {"period": "year"}).context["team"].period == "week"
    overview = client.get(reverse("ops_index")).content.decode()
    assert f'href="{reverse("ops_team")}"' in overview
    assert f">task #{oldest}</a>" in overview


def test_team_page_is_for_operators_only(client: Client, reviewer: Any, requester: Any) -> None:
    """Issue 27, item 6: reviewers and requesters get 403 as on the other operator pages."""
    for person in (requester, reviewer):
        client.force_login(person)
        assert client.get(reverse("ops_team")).status_code == 403


def test_team_api_gives_the_figures_to_operators(
    world: dict[str, Any], operator: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 27, item 6: GET /team?period=… (operators) returns the same figures; others
    get 403; an unknown period is a 422."""
    otto = bearer_client(operator)
    body = otto.get("/api/v1/team", {"period": "week"}).json()
    assert body["period"] == "week"
    assert (body["decisions"], body["other_decisions"], body["audits_judged"]) == (9, 1, 1)
    rita = next(r for r in body["reviewers"] if r["username"] == "rita")
    assert (rita["satisfied"], rita["revise"], rita["abandon"], rita["audits"]) == (3, 1, 1, 1)
    assert rita["time"] == {
        "count": 5,
        "no_first_view": 1,
        "p50_seconds": 180.0,
        "p95_seconds": 600.0,
    }
    assert body["queue"]["count"] == 3
    assert body["queue"]["oldest_task_id"] == world["oldest_task"].pk
    assert body["queue"]["oldest_seconds"] == pytest.approx(10 * HOUR, abs=60)
    assert body["audits"]["open"] == 2
    assert body["audits"]["oldest_audit_id"] == world["oldest_audit"].pk
    assert otto.get("/api/v1/team").json()["period"] == "week"
    assert otto.get("/api/v1/team", {"period": "year"}).status_code == 422
    for person in (reviewer, requester):
        assert bearer_client(person).get("/api/v1/team").status_code == 403


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_metrics_show_queue_age_decisions_and_the_audit_queue(
    client: Client, world: dict[str, Any], reviewer: Any, rex: Any
) -> None:
    """Issue 27, item 6: /metrics gives the queue's age quantiles, the decisions of the
    last 24 hours overall and per role (status changes out of needs_review by a person,
    and judged audits), and the open audits with the oldest one's age."""
    for person, hours in ((reviewer, 2), (rex, 3), (reviewer, 30)):
        task = TaskFactory(status=S.CLOSED)
        TaskEvent.objects.create(
            task=task,
            from_status=S.NEEDS_REVIEW,
            to_status=S.CLOSED,
            actor=person,
            actor_kind="user",
            at=world["now"] - timedelta(hours=hours),
        )
    samples = _samples(client.get("/metrics", REMOTE_ADDR="127.0.0.1").content.decode())
    age = "evidentia_review_queue_age_seconds"
    assert samples[(age, (("quantile", "0.5"),))] == pytest.approx(2 * HOUR, abs=60)
    assert samples[(age, (("quantile", "0.95"),))] == pytest.approx(10 * HOUR, abs=60)
    assert samples[(age, (("quantile", "1"),))] == pytest.approx(10 * HOUR, abs=60)
    assert samples[("evidentia_review_queue_tasks", ())] == 3
    # Two status changes and one judged audit in the last 24 hours, all by reviewers.
    assert samples[("evidentia_review_decisions_24h", ())] == 3
    by_role = "evidentia_review_decisions_24h_by_role"
    assert samples[(by_role, (("role", "reviewer"),))] == 3
    assert samples[(by_role, (("role", "requester"),))] == 0
    assert samples[("evidentia_audit_queue_open", ())] == 2
    assert samples[("evidentia_audit_queue_oldest_seconds", ())] == pytest.approx(3 * HOUR, abs=60)
