"""Tasks API: create, list, read, feedback, claims, events, runs.

A1, A2, A3, S2, S5, V3, U3.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.test import Client
from django.utils import timezone
from ninja.responses import NinjaJSONEncoder

from evidence_app.models import ValidationSnapshot
from evidence_app.validation.selectors import latest_original, validation_summary
from tasks_app.api.schemas import ValidationSummaryOut
from tasks_app.models import Feedback, Task, TaskEvent
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import (
    RunFactory,
    RunMessageFactory,
    TaskFactory,
    ToolEvidenceFactory,
    ValidationSnapshotFactory,
)

pytestmark = pytest.mark.django_db

JSON = "application/json"


def post(client: Client, url: str, data: Any = None) -> Any:
    return client.post(url, data if data is not None else {}, content_type=JSON)


# --- Create -----------------------------------------------------------------------------


def test_create_task_returns_201_with_flags_and_queues_nothing_half_written(
    alice: Client, requester: Any
) -> None:
    """A1, S2: POST /tasks creates an open task owned by the caller; the documented fields
    are present with their snake_case names."""
    response = post(
        alice,
        "/api/v1/tasks",
        {
            "request": "What is the annual training budget?",
            "title": "Training budget",
            "rules": "Cite the handbook.",
            "validation_policy": "always",
        },
    )
    assert response.status_code == 201, response.content
    body = response.json()
    task = Task.objects.get(pk=body["id"])
    assert task.owner == requester
    assert task.status == S.OPEN
    for field in (
        "id",
        "title",
        "request",
        "status",
        "is_open",
        "is_execution_active",
        "requires_user_action",
        "validation_outcome",
        "attempt_count",
        "final_answer",
        "latest_validation",
        "created_at",
        "updated_at",
    ):
        assert field in body
    assert body["title"] == "Training budget"
    assert body["rules"] == "Cite the handbook."
    assert body["status"] == "open"
    assert body["is_open"] is True
    assert body["is_execution_active"] is False
    assert body["requires_user_action"] is False
    assert body["validation_outcome"] is None
    assert body["latest_validation"] is None


def test_create_task_with_a_team_plan_stores_the_validated_plan(alice: Client) -> None:
    """A1, X4: a valid team plan is accepted and stored."""
    plan = {
        "kind": "team",
        "mode": "dag",
        "nodes": [
            {"id": "policy", "role": "Policy reader", "instructions": "Read the policy."},
            {
                "id": "costs",
                "role": "Cost checker",
                "instructions": "Check.",
                "depends_on": ["policy"],
            },
        ],
    }
    response = post(alice, "/api/v1/tasks", {"request": "Plan a trip", "plan": plan})
    assert response.status_code == 201, response.content
    stored = Task.objects.get(pk=response.json()["id"]).plan
    assert stored["kind"] == "team"
    assert stored["mode"] == "dag"
    assert [n["id"] for n in stored["nodes"]] == ["policy", "costs"]
    assert stored["nodes"][1]["depends_on"] == ["policy"]


@pytest.mark.parametrize(
    ("plan", "field"),
    [
        ({"kind": "team", "nodes": [{"id": "a", "role": ""}]}, "plan"),
        ({"kind": "team", "mode": "circle", "nodes": [{"id": "a", "role": "r"}]}, "mode"),
        ({"kind": "team", "nodes": []}, "nodes"),
        ({"kind": "team", "nodes": "abc"}, "nodes"),
        (
            {
                "kind": "team",
                "mode": "dag",
                "nodes": [
                    {"id": "a", "role": "r", "depends_on": ["b"]},
                    {"id": "b", "role": "r", "depends_on": ["a"]},
                ],
            },
            "plan",
        ),
        ({"kind": "team", "nodes": [{"id": "a", "role": "r", "depends_on": ["ghost"]}]}, "plan"),
        ({"kind": "committee"}, "plan"),
        ({"kind": "single", "surprise": 1}, "surprise"),
    ],
)
def test_invalid_plan_is_422_naming_the_field(
    alice: Client, plan: dict[str, Any], field: str
) -> None:
    """A3: an invalid plan is refused with 422 and a message naming the field; nothing
    is written."""
    response = post(alice, "/api/v1/tasks", {"request": "Do it", "plan": plan})
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["code"] == "validation_error"
    assert field in body["detail"]
    assert all(error["field"].startswith("plan") for error in body["errors"])
    assert Task.objects.count() == 0


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ({}, "request"),
        ({"request": 42}, "request"),
        ({"request": "   "}, "request"),
        ({"request": "ok", "validation_policy": "sometimes"}, "validation_policy"),
        ({"request": "ok", "validation_keywords": "budget"}, "validation_keywords"),
        ({"request": "ok", "title": ["x"]}, "title"),
        ({"request": "ok", "unknown_field": 1}, "unknown_field"),
    ],
)
def test_wrong_types_are_422_naming_the_field(
    alice: Client, payload: dict[str, Any], field: str
) -> None:
    """A3: wrong types and unknown values get 422 with the field named."""
    response = post(alice, "/api/v1/tasks", payload)
    assert response.status_code == 422, response.content
    body = response.json()
    assert body["code"] == "validation_error"
    assert [e["field"] for e in body["errors"]] == [field]
    assert field in body["detail"]
    assert Task.objects.count() == 0


# --- Read and list ----------------------------------------------------------------------


def test_get_task_shows_latest_verdict_attempts_and_outcome(alice: Client, requester: Any) -> None:
    """A1, V1, V3: the task shows its latest (original) verdict with issues, gaps,
    category and revision prompt, and one entry per attempt."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW, attempt_count=2, final_answer="42")
    run1 = RunFactory(task=task, attempt_index=1)
    run2 = RunFactory(task=task, attempt_index=2)
    ValidationSnapshotFactory(task=task, attempt_index=1, status="rejected")
    latest = ValidationSnapshotFactory(
        task=task,
        attempt_index=2,
        status="insufficient_evidence",
        score=0.4,
        failure_category="incomplete",
        model_name="offline:judge",
        template_version="default@abc",
        result={
            "status": "insufficient_evidence",
            "issues": ["the figure is not in the evidence"],
            "missing_requirements": ["cite the source"],
            "evidence_gaps": ["no document states 42"],
            "recommended_revision_prompt": "Find the source.",
            "reasoning": "Unsupported.",
        },
    )
    ValidationSnapshotFactory(
        task=task, attempt_index=2, status="accepted", kind="replay", replay_of=latest
    )

    response = alice.get(f"/api/v1/tasks/{task.pk}")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "needs_review"
    assert body["requires_user_action"] is True
    assert body["final_answer"] == "42"
    verdict = body["latest_validation"]
    assert verdict["id"] == latest.pk
    assert verdict["status"] == "insufficient_evidence"
    assert verdict["passed"] is False
    assert verdict["score"] == 0.4
    assert verdict["issues"] == ["the figure is not in the evidence"]
    assert verdict["missing_requirements"] == ["cite the source"]
    assert verdict["evidence_gaps"] == ["no document states 42"]
    assert verdict["failure_category"] == "incomplete"
    assert verdict["recommended_revision_prompt"] == "Find the source."
    assert verdict["model"] == "offline:judge"
    assert body["attempts"] == [
        {
            "attempt_index": 1,
            "run_ids": [run1.pk],
            "validation_id": body["attempts"][0]["validation_id"],
            "validation_status": "rejected",
        },
        {
            "attempt_index": 2,
            "run_ids": [run2.pk],
            "validation_id": latest.pk,
            "validation_status": "insufficient_evidence",
        },
    ]


def test_requester_cannot_read_or_act_on_another_requesters_task(
    bob: Client, requester: Any
) -> None:
    """A2: every endpoint answers 404 for someone else's task, and nothing changes."""
    task = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
    run = RunFactory(task=task)
    for url in (
        f"/api/v1/tasks/{task.pk}",
        f"/api/v1/tasks/{task.pk}/events",
        f"/api/v1/tasks/{task.pk}/runs",
        f"/api/v1/tasks/{task.pk}/validations",
        f"/api/v1/runs/{run.pk}/messages",
        f"/api/v1/runs/{run.pk}/evidence",
    ):
        response = bob.get(url)
        assert response.status_code == 404, url
        assert response.json()["code"] == "not_found"
    response = post(bob, f"/api/v1/tasks/{task.pk}/feedback", {"action": "abandon"})
    assert response.status_code == 404
    task.refresh_from_db()
    assert task.status == S.AWAITING_FEEDBACK
    assert bob.get("/api/v1/tasks").json() == {"items": [], "count": 0, "next": None}


def test_reviewers_and_operators_see_every_task(
    rita: Client, otto: Client, requester: Any, other_requester: Any
) -> None:
    """A2: staff roles see all tasks."""
    TaskFactory(owner=requester)
    TaskFactory(owner=other_requester)
    for client in (rita, otto):
        assert client.get("/api/v1/tasks").json()["count"] == 2


def test_list_filters_by_status_flags_and_text(alice: Client, requester: Any) -> None:
    """A1, S2: status (repeatable), requires_user_action, is_open, is_execution_active
    and q filter the list; ordering and limit/offset page it."""
    review = TaskFactory(owner=requester, status=S.NEEDS_REVIEW, title="Holiday rules")
    running = TaskFactory(owner=requester, status=S.RUNNING, title="Laptop budget")
    closed = TaskFactory(owner=requester, status=S.CLOSED, title="Parking")

    def ids(query: str) -> list[int]:
        response = alice.get(f"/api/v1/tasks?{query}")
        assert response.status_code == 200, response.content
        return sorted(item["id"] for item in response.json()["items"])

    assert ids("status=needs_review&status=closed") == sorted([review.pk, closed.pk])
    assert ids("requires_user_action=true") == [review.pk]
    assert ids("is_open=false") == [closed.pk]
    assert ids("is_execution_active=true") == [running.pk]
    assert ids("is_open=true&is_execution_active=false") == [review.pk]
    assert ids("q=laptop") == [running.pk]
    page = alice.get("/api/v1/tasks?ordering=created_at&limit=2&offset=1").json()
    assert page["count"] == 3
    assert [item["id"] for item in page["items"]] == [running.pk, closed.pk]


def test_staff_list_count_matches_its_items_with_every_filter(rita: Client, requester: Any) -> None:
    """Issue 16: a reviewer's count comes from the status counters only when status is
    the sole filter; with ``agent`` (or a flag, or q) it counts the filtered rows."""
    TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    TaskFactory(owner=requester, status=S.NEEDS_REVIEW, agent="external")
    TaskFactory(owner=requester, status=S.CLOSED, agent="external")
    for query, expected in (
        ("", 3),
        ("status=needs_review", 2),
        ("agent=external", 2),
        ("agent=internal", 1),
        ("status=needs_review&agent=external", 1),
        ("is_open=false", 1),
    ):
        body = rita.get(f"/api/v1/tasks?{query}").json()
        assert body["count"] == len(body["items"]) == expected, query


def test_list_verdict_summaries_read_as_json_equal_the_snapshot_rows(
    rita: Client, requester: Any
) -> None:
    """Issue 16: the list reads each task's latest original verdict (on PostgreSQL as one
    JSON column, elsewhere by a sliced prefetch); every item's ``latest_validation``
    equals the summary of that snapshot row (latest by time then id, replays ignored,
    blanks as null, no verdict as null)."""
    now = timezone.now()
    tasks = [TaskFactory(owner=requester, status=S.NEEDS_REVIEW) for _ in range(4)]
    ValidationSnapshotFactory(task=tasks[0], status="rejected", created_at=now)
    ValidationSnapshotFactory(
        task=tasks[0],
        status="accepted",
        score=0.875,
        failure_category="",
        model_status="accepted",
        claim_summary={"total": 2, "supported": 2},
        created_at=now + timedelta(seconds=1, microseconds=123_456),
    )
    ValidationSnapshotFactory(task=tasks[0], kind="replay", created_at=now + timedelta(hours=1))
    ValidationSnapshotFactory(task=tasks[1], status="insufficient_evidence", score=None)
    same = now.replace(microsecond=0)
    for status in ("validator_error", "rejected"):  # same time: the larger id wins
        ValidationSnapshotFactory(
            task=tasks[2], status=status, failure_category="unsupported_claim", created_at=same
        )
    items = {i["id"]: i for i in rita.get("/api/v1/tasks?limit=10").json()["items"]}
    for task in tasks:
        summary = validation_summary(latest_original(task.pk))
        expected = (
            None
            if summary is None
            else json.loads(
                json.dumps(
                    ValidationSummaryOut.model_validate(summary).model_dump(),
                    cls=NinjaJSONEncoder,
                )
            )
        )
        assert items[task.pk]["latest_validation"] == expected
    assert items[tasks[0].pk]["latest_validation"]["passed"] is True
    assert items[tasks[2].pk]["latest_validation"]["status"] == "rejected"
    assert items[tasks[3].pk]["latest_validation"] is None


def test_list_pages_by_offset_hold_the_rows_of_a_plain_slice(rita: Client, requester: Any) -> None:
    """Issue 16: past offset 0 the task lists read the page's ids first, then those
    rows; every page, for each ordering and a filter, holds the tasks of slicing the
    ordered list (ties on created_at broken by the id)."""
    start = timezone.now() - timedelta(days=1)
    for i in range(23):
        TaskFactory(
            owner=requester,
            status=(S.NEEDS_REVIEW, S.CLOSED, S.RUNNING)[i % 3],
            created_at=start + timedelta(minutes=i // 2),
        )
    tie = {"created_at": "id", "-created_at": "-id", "id": "id", "-id": "-id"}
    lists, active = "/api/v1/tasks", "/api/v1/tasks/active"
    for url, ordering, query, tasks in (
        (lists, "-created_at", "", Task.objects.all()),
        (
            lists,
            "created_at",
            "&status=closed&status=running",
            Task.objects.exclude(status=S.NEEDS_REVIEW),
        ),
        (lists, "-id", "", Task.objects.all()),
        (active, "created_at", "", Task.objects.exclude(status=S.CLOSED)),
    ):
        expected = list(tasks.order_by(ordering, tie[ordering]).values_list("pk", flat=True))
        seen: list[int] = []
        for offset in range(0, len(expected), 5):
            body = rita.get(f"{url}?ordering={ordering}&limit=5&offset={offset}{query}").json()
            assert body["count"] == len(expected)
            seen += [item["id"] for item in body["items"]]
        assert seen == expected, (url, ordering, query)


def test_active_tasks_are_the_open_ones_including_needs_review(
    alice: Client, requester: Any
) -> None:
    """A1, S2: /tasks/active lists open tasks, needs_review included, terminal ones not."""
    review = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    running = TaskFactory(owner=requester, status=S.RUNNING)
    TaskFactory(owner=requester, status=S.ABANDONED)
    body = alice.get("/api/v1/tasks/active").json()
    assert body["count"] == 2
    assert sorted(i["id"] for i in body["items"]) == sorted([review.pk, running.pk])


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("status=finished", "status"),
        ("limit=0", "limit"),
        ("limit=abc", "limit"),
        ("ordering=title", "ordering"),
        ("requires_user_action=perhaps", "requires_user_action"),
    ],
)
def test_bad_list_parameters_are_422_naming_the_parameter(
    alice: Client, query: str, field: str
) -> None:
    """A3: unknown statuses and wrong types in the query string get 422."""
    response = alice.get(f"/api/v1/tasks?{query}")
    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "validation_error"
    assert body["errors"][0]["field"].split(".")[0] == field


# --- Feedback ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("validator_status", "action", "to_status", "outcome"),
    [
        ("accepted", "satisfied", S.CLOSED, "accepted"),
        ("insufficient_evidence", "satisfied", S.CLOSED, "force_accepted"),
        ("accepted", "abandon", S.ABANDONED, None),
    ],
)
def test_feedback_applies_the_users_decision(
    alice: Client,
    requester: Any,
    validator_status: str,
    action: str,
    to_status: str,
    outcome: str | None,
) -> None:
    """S5, V3: satisfied closes (accepted or force_accepted), abandon abandons; the
    response is the updated task and an event records the actor."""
    task = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
    ValidationSnapshotFactory(task=task, status=validator_status)
    response = post(alice, f"/api/v1/tasks/{task.pk}/feedback", {"action": action, "comment": "ok"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == to_status
    assert body["validation_outcome"] == outcome
    assert body["is_open"] is False
    event = TaskEvent.objects.get(task=task)
    assert (event.to_status, event.actor, event.actor_kind) == (to_status, requester, "user")


def test_revise_with_comment_moves_to_needs_revision(alice: Client, requester: Any) -> None:
    """S5: revise with a comment → needs_revision, the comment stored as feedback."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    response = post(
        alice, f"/api/v1/tasks/{task.pk}/feedback", {"action": "revise", "comment": "Cite it."}
    )
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "needs_revision"
    assert Feedback.objects.get(task=task).comment == "Cite it."


def test_revise_without_comment_is_422_and_changes_nothing(alice: Client, requester: Any) -> None:
    """S5, A3: a revision needs a comment; without one: 422 naming `comment`."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    for payload in ({"action": "revise"}, {"action": "revise", "comment": "   "}):
        response = post(alice, f"/api/v1/tasks/{task.pk}/feedback", payload)
        assert response.status_code == 422
        assert response.json()["errors"] == [
            {"field": "comment", "message": "a revision needs a comment saying what to change"}
        ]
    task.refresh_from_db()
    assert task.status == S.NEEDS_REVIEW
    assert not TaskEvent.objects.filter(task=task).exists()
    assert not Feedback.objects.filter(task=task).exists()


def test_unknown_feedback_action_is_422(alice: Client, requester: Any) -> None:
    """A3: an action outside satisfied|revise|abandon is a schema error."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    response = post(alice, f"/api/v1/tasks/{task.pk}/feedback", {"action": "approve"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "action"


def test_illegal_transition_is_409_with_the_reason(alice: Client, requester: Any) -> None:
    """S3, A3: feedback on a closed task is refused with 409 and a message."""
    task = TaskFactory(owner=requester, status=S.CLOSED)
    response = post(alice, f"/api/v1/tasks/{task.pk}/feedback", {"action": "abandon"})
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "illegal_transition"
    assert "closed" in body["detail"]
    assert not Feedback.objects.filter(task=task).exists()


def test_stale_expected_version_is_409(alice: Client, requester: Any) -> None:
    """U3: an action based on an old view of the task is refused, not applied."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW, version=3)
    response = post(
        alice,
        f"/api/v1/tasks/{task.pk}/feedback",
        {"action": "satisfied", "expected_version": 2},
    )
    assert response.status_code == 409
    assert response.json()["code"] == "stale_action"
    task.refresh_from_db()
    assert task.status == S.NEEDS_REVIEW


# --- Claims -----------------------------------------------------------------------------


def test_reviewer_claims_and_releases_a_task(rita: Client, reviewer: Any, requester: Any) -> None:
    """U3: POST /claim records the claim, DELETE releases it."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    response = post(rita, f"/api/v1/tasks/{task.pk}/claim")
    assert response.status_code == 200, response.content
    claim = response.json()["claim"]
    assert claim["claimed_by"] == "rita"
    assert claim["is_live"] is True
    response = rita.delete(f"/api/v1/tasks/{task.pk}/claim")
    assert response.status_code == 200
    assert response.json()["claim"] is None
    task.refresh_from_db()
    assert task.claimed_by is None


def test_requesters_cannot_claim(alice: Client, requester: Any) -> None:
    """U3, A2: claiming is for reviewers; a requester gets 403 even on their own task."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    response = post(alice, f"/api/v1/tasks/{task.pk}/claim")
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert alice.delete(f"/api/v1/tasks/{task.pk}/claim").status_code == 403


def test_acting_on_a_task_claimed_by_someone_else_needs_force(
    rita: Client, otto: Client, reviewer: Any, operator: Any, requester: Any
) -> None:
    """U3: a second reviewer's claim or feedback is refused (409) while the claim is
    live, and goes through with force."""
    # Otto acts here as the second reviewer (operators alone may not claim or decide).
    operator.groups.add(Group.objects.get_or_create(name="reviewers")[0])
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    assert post(rita, f"/api/v1/tasks/{task.pk}/claim").status_code == 200

    response = post(otto, f"/api/v1/tasks/{task.pk}/claim")
    assert response.status_code == 409
    assert response.json()["code"] == "claimed_by_other"
    response = post(otto, f"/api/v1/tasks/{task.pk}/feedback", {"action": "satisfied"})
    assert response.status_code == 409
    assert response.json()["code"] == "claimed_by_other"
    task.refresh_from_db()
    assert task.status == S.NEEDS_REVIEW

    response = post(otto, f"/api/v1/tasks/{task.pk}/claim?force=true")
    assert response.status_code == 200
    assert response.json()["claimed_by"] == "otto"
    response = post(
        rita, f"/api/v1/tasks/{task.pk}/feedback", {"action": "satisfied", "force": True}
    )
    assert response.status_code == 200
    assert response.json()["status"] == "closed"


# --- Events, runs, messages -------------------------------------------------------------


def test_events_list_the_state_changes(alice: Client, requester: Any) -> None:
    """S3, A1: GET /events shows each transition with actor and reason."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    post(alice, f"/api/v1/tasks/{task.pk}/feedback", {"action": "revise", "comment": "More"})
    body = alice.get(f"/api/v1/tasks/{task.pk}/events").json()
    assert body["count"] == 1
    event = body["items"][0]
    assert (event["from_status"], event["to_status"]) == ("needs_review", "needs_revision")
    assert event["actor"] == "alice"
    assert "More" in event["reason"]


def test_runs_and_messages(alice: Client, rita: Client, requester: Any) -> None:
    """E1, A1: runs with their evidence counts, and a run's ordered transcript (for
    reviewers and operators, as on the pages; issue 34 finding 6: a requester is 403)."""
    task = TaskFactory(owner=requester)
    run = RunFactory(task=task, kind="main", output_text="answer", finish_reason="stop")
    ToolEvidenceFactory(run=run)
    ToolEvidenceFactory(run=run)
    RunMessageFactory(run=run, index=1, role="assistant", content="second")
    RunMessageFactory(run=run, index=0, role="user", content="first")

    runs = alice.get(f"/api/v1/tasks/{task.pk}/runs").json()
    assert runs["count"] == 1
    assert runs["items"][0]["id"] == run.pk
    assert runs["items"][0]["evidence_count"] == 2
    assert runs["items"][0]["output_text"] == "answer"

    messages = rita.get(f"/api/v1/runs/{run.pk}/messages").json()
    assert messages["count"] == 2
    assert [m["content"] for m in messages["items"]] == ["first", "second"]
    refused = alice.get(f"/api/v1/runs/{run.pk}/messages")
    assert refused.status_code == 403
    assert refused.json()["code"] == "permission_denied"
    assert alice.get("/api/v1/runs/999999/messages").status_code == 404


def test_me_reports_roles(alice: Client, otto: Client) -> None:
    """A2: GET /me says who the token belongs to."""
    assert alice.get("/api/v1/me").json() == {
        "username": "alice",
        "is_reviewer": False,
        "is_operator": False,
    }
    assert otto.get("/api/v1/me").json()["is_operator"] is True


def test_validation_snapshot_count_is_unchanged_by_reads(alice: Client, requester: Any) -> None:
    """A1: reading endpoints write nothing."""
    task = TaskFactory(owner=requester)
    ValidationSnapshotFactory(task=task)
    before = (ValidationSnapshot.objects.count(), TaskEvent.objects.count())
    alice.get(f"/api/v1/tasks/{task.pk}")
    alice.get("/api/v1/tasks")
    assert (ValidationSnapshot.objects.count(), TaskEvent.objects.count()) == before
