"""Issue 47, item 3: wherever a task's status shows (the task page's top, the
requester's own view, the lists, the API's ``status_reason``), the one-line reason it is
there, in words."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tasks_app.records import TaskEvent
from tasks_app.workflow.status_reasons import status_reason_words
from tests.api.conftest import bearer_client
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db

BELOW = "validator: accepted (score 0.90), below the certified threshold 0.95: a person decides"
DISAGREE = (
    "judges disagree: offline:judge says accepted, offline:judge-corroborating says "
    "insufficient_evidence"
)


def moved(task: Any, to_status: str, reason: str, *, from_status: str = "validating") -> None:
    task.status = to_status
    task.save(update_fields=["status"])
    TaskEvent.objects.create(task=task, from_status=from_status, to_status=to_status, reason=reason)


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_the_reason_reads_in_words_and_a_status_without_one_says_what_it_means() -> None:
    """Issue 47, item 3: stored codes become words (insufficient_evidence →
    insufficient evidence; model names stay); only the first line; no reason: what the
    status means."""
    assert status_reason_words("needs_review", DISAGREE) == (
        "judges disagree: offline:judge says accepted, offline:judge-corroborating says "
        "insufficient evidence"
    )
    assert status_reason_words("needs_review", "validator: rejected (goal_missed)\nTrace") == (
        "validator: rejected (goal missed)"
    )
    assert status_reason_words("validating", "") == "the validator is checking the answer"


def test_the_task_page_says_why_at_the_top_for_the_reviewer_and_the_requester(
    client: Any, requester: Any, reviewer: Any
) -> None:
    """Issue 47, item 3: an accepted verdict held below the certified threshold says so
    beside the status, before the rest of the page, to the reviewer and to the requester
    (who saw only "Validating → Needs review by the system")."""
    task = TaskFactory(owner=requester)
    moved(task, "validating", "attempt 1 submitted", from_status="running")
    moved(task, "needs_review", BELOW)
    for person in (reviewer, requester):
        client.force_login(person)
        html = client.get(reverse("task_detail", args=[task.pk])).content.decode()
        line = re.search(r'<p class="status-reason" id="task-status-reason">(.*?)</p>', html, re.S)
        assert line is not None, person
        assert text_of(line.group(1)).strip() == f"Why needs review: {BELOW}"
        assert html.index('id="task-status"') < html.index('id="task-status-reason"')
        assert html.index('id="task-status-reason"') < html.index('class="grid-main"')


def test_the_lists_show_the_reason_under_each_status_but_not_while_it_is_withheld(
    client: Any, requester: Any, reviewer: Any
) -> None:
    """Issue 47, item 3: "My tasks" and "All tasks" give each row's reason under its
    status, in words."""
    task = TaskFactory(owner=requester)
    moved(task, "needs_review", DISAGREE)
    client.force_login(requester)
    mine = client.get(reverse("my_tasks")).content.decode()
    row = re.search(rf'<tr data-task-id="{task.pk}">.*?</tr>', mine, re.S).group(0)
    assert (
        '<div class="small muted status-reason" hx-disable>judges disagree: offline:judge says '
        "accepted, offline:judge-corroborating says insufficient evidence</div>"
    ) in row
    client.force_login(reviewer)
    every = client.get(reverse("task_list_all")).content.decode()
    assert "says insufficient evidence</div>" in every


def test_the_api_gives_status_reason_on_a_task_and_in_lists(requester: Any) -> None:
    """Issue 47, item 3: ``status_reason`` on ``GET /tasks/{id}`` and on each item of
    ``GET /tasks``, the same line as the pages."""
    task = TaskFactory(owner=requester)
    moved(task, "needs_review", BELOW)
    other = TaskFactory(owner=requester)
    api = bearer_client(requester)
    one = api.get(f"/api/v1/tasks/{task.pk}").json()
    assert one["status_reason"] == BELOW
    listed = {t["id"]: t["status_reason"] for t in api.get("/api/v1/tasks").json()["items"]}
    assert listed == {task.pk: BELOW, other.pk: "waiting for the agent to start"}
    schema = api.get("/api/v1/openapi.json").json()["components"]["schemas"]
    assert "status_reason" in schema["TaskListItemOut"]["required"]


def test_the_task_page_reads_the_reason_with_the_task_not_in_a_query_of_its_own(
    client: Any, reviewer: Any
) -> None:
    """Issue 48: the reason comes in the task's own query (the task page's statements
    stay bounded); the page still shows it."""
    task = TaskFactory()
    moved(task, "validating", "attempt 1 submitted", from_status="running")
    moved(task, "needs_review", BELOW)
    client.force_login(reviewer)
    with CaptureQueriesContext(connection) as captured:
        html = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert f"Why needs review: {BELOW}" in text_of(html)
    reason_alone = 'SELECT "tasks_app_taskevent"."reason"'
    assert [q["sql"] for q in captured if q["sql"].startswith(reason_alone)] == []
