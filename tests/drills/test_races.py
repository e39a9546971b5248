"""Drill 4: 20 concurrent claim / feedback calls on one task through the HTTP API
(S3, S5, U3, A3). A real threaded server (pytest-django's ``live_server``), 20
client threads released together by a barrier, each with its own bearer token.

For every race: one winner per transition, every loser a 409, and the event log is a
consistent chain (each event starts where the previous one ended) ending at the final
status, with exactly one event and one feedback row per winning call.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from typing import Any

import httpx
import pytest
from django.contrib.auth.models import Group

from tasks_app.accounts.auth import api_token_create
from tasks_app.models import Feedback, Task, TaskEvent
from tasks_app.workflow.states import TaskStatus as S
from tests.drills.support import report
from tests.factories import TaskFactory, UserFactory

pytestmark = [
    pytest.mark.drill,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(120),
]

CALLERS = 20
FIGURES: dict[str, str] = {}  # the claim race's figure, for the one summary line


def bearer(user: Any) -> str:
    return api_token_create(user=user, name="race")[1]


def race(base_url: str, calls: list[tuple[str, str, dict[str, Any] | None]]) -> list[Any]:
    """Send all calls (token, path, json body) at once; returns (status, body) per call."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def send(index: int, token: str, path: str, body: dict[str, Any] | None) -> None:
        with httpx.Client(
            base_url=base_url, headers={"Authorization": f"Bearer {token}"}, timeout=30
        ) as client:
            barrier.wait(timeout=20)
            response = client.post(path, json=body or {})
            results[index] = (response.status_code, response.json())

    threads = [threading.Thread(target=send, args=(i, *call)) for i, call in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert all(r is not None for r in results), "a call did not finish"
    return results


def assert_consistent_log(task: Task, *, winners: int, start: str) -> list[TaskEvent]:
    events = list(TaskEvent.objects.filter(task=task).order_by("at", "id"))
    assert len(events) == winners
    status = start
    for event in events:
        assert event.from_status == status, [(e.from_status, e.to_status) for e in events]
        status = event.to_status
    task.refresh_from_db()
    assert task.status == status
    assert task.version == 1 + winners  # the factory's version plus one per transition
    return events


@pytest.fixture
def reviewers() -> list[Any]:
    group = Group.objects.get_or_create(name="reviewers")[0]
    users = [UserFactory(username=f"reviewer{i:02d}", is_staff=True) for i in range(CALLERS)]
    for user in users:
        user.groups.add(group)
    return users


def test_twenty_reviewers_claim_at_once_one_wins(live_server: Any, reviewers: list[Any]) -> None:
    """U3: 20 simultaneous claims of one task: one 200, nineteen 409 claimed_by_other,
    and the claim belongs to the winner."""
    owner = UserFactory(username="alice")
    task = TaskFactory(owner=owner, status=S.NEEDS_REVIEW, version=1)
    calls = [(bearer(r), f"/api/v1/tasks/{task.pk}/claim", None) for r in reviewers]
    results = race(live_server.url, calls)
    statuses = Counter(code for code, _ in results)
    assert statuses == {200: 1, 409: CALLERS - 1}, results
    assert {body["code"] for code, body in results if code == 409} == {"claimed_by_other"}
    winner = next(body["claimed_by"] for code, body in results if code == 200)
    task.refresh_from_db()
    assert task.claimed_by.username == winner and task.status == S.NEEDS_REVIEW
    assert not TaskEvent.objects.filter(task=task).exists()  # a claim is not a transition
    FIGURES["claims"] = f"claim: 1 winner, {statuses[409]} x 409"


def test_twenty_stale_decisions_at_once_one_wins(live_server: Any, reviewers: list[Any]) -> None:
    """S3/S5: 20 simultaneous decisions (satisfied / revise / abandon, from the requester
    and reviewers) all made on the same version: exactly one is applied, 19 get 409, one
    event and one feedback row are written."""
    owner = UserFactory(username="alice")
    task = TaskFactory(owner=owner, status=S.NEEDS_REVIEW, version=1)
    rng = random.Random(8)
    people = [owner, *reviewers[: CALLERS - 1]]
    calls = []
    for person in people:
        action = rng.choice(["satisfied", "revise", "abandon"])
        body = {"action": action, "expected_version": 1, "comment": "more detail please"}
        calls.append((bearer(person), f"/api/v1/tasks/{task.pk}/feedback", body))
    results = race(live_server.url, calls)
    statuses = Counter(code for code, _ in results)
    assert statuses == {200: 1, 409: CALLERS - 1}, results
    events = assert_consistent_log(task, winners=1, start=S.NEEDS_REVIEW)
    assert Feedback.objects.filter(task=task).count() == 1
    winner_status = next(body["status"] for code, body in results if code == 200)
    assert events[-1].to_status == winner_status


def test_twenty_unversioned_decisions_follow_the_transition_table(
    live_server: Any, reviewers: list[Any]
) -> None:
    """S3/S5: 20 simultaneous decisions without a version: each is judged on the status
    the previous winner left (PostgreSQL's row lock; SQLite's one writer at a time), so
    more than one may apply (revise, then abandon), but every 200 is exactly one legal
    event, every other call a 409, and the log is one consistent chain ending at the
    final status."""
    owner = UserFactory(username="alice")
    task = TaskFactory(owner=owner, status=S.AWAITING_FEEDBACK, version=1)
    actions = (["revise", "abandon", "satisfied"] * CALLERS)[:CALLERS]
    people = [owner, *reviewers[: CALLERS - 1]]
    calls = [
        (bearer(p), f"/api/v1/tasks/{task.pk}/feedback", {"action": a, "comment": "again"})
        for p, a in zip(people, actions, strict=True)
    ]
    results = race(live_server.url, calls)
    statuses = Counter(code for code, _ in results)
    winners = statuses[200]
    assert winners >= 1 and statuses[409] == CALLERS - winners, results
    assert_consistent_log(task, winners=winners, start=S.AWAITING_FEEDBACK)
    assert Feedback.objects.filter(task=task).count() == winners
    task.refresh_from_db()
    assert task.status in {S.CLOSED, S.ABANDONED}
    claims = FIGURES.get("claims", "claim race not run")
    report(
        "races",
        f"{claims}; versioned decisions: 1 winner, 19 x 409; unversioned decisions: "
        f"{winners} legal transition(s), {statuses[409]} x 409, event log consistent",
    )
