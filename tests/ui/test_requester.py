"""Requester pages (U4): my tasks, new task form with an optional team plan, live
progress polling that stops when the task is no longer running."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from tasks_app.models import Task
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import RunFactory, TaskFactory, ToolEvidenceFactory

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "progress"}


def test_new_task_form_creates_a_task(client: Any, requester: Any) -> None:
    """U4, A1: request, rules and policy; redirect to the task page with a message."""
    client.force_login(requester)
    assert client.get(reverse("task_new")).status_code == 200
    response = client.post(
        reverse("task_new"),
        {
            "title": "",
            "request": "How many remote days are allowed?\nPlease cite.",
            "rules": "Be brief.",
            "plan": "",
            "validation_policy": "always",
        },
    )
    task = Task.objects.get(owner=requester)
    assert response.status_code == 302 and response["Location"] == reverse(
        "task_detail", args=[task.pk]
    )
    assert (
        task.title == "How many remote days are allowed?"
        and task.rules == "Be brief."
        and task.plan == {}
    )
    page = client.get(response["Location"]).content.decode()
    assert f"Task #{task.pk} created" in page
    assert 'id="progress"' in page and "every 2s" in page  # live progress while queued


def test_new_task_form_accepts_a_valid_team_plan(client: Any, requester: Any) -> None:
    """U4, X4: an optional team plan as JSON, checked by the runtime's plan schema."""
    plan = {
        "kind": "team",
        "mode": "parallel",
        "nodes": [{"id": "a", "role": "Reader"}, {"id": "b", "role": "Checker"}],
    }
    client.force_login(requester)
    client.post(
        reverse("task_new"),
        {"request": "Compare policies", "plan": json.dumps(plan), "validation_policy": "always"},
    )
    assert Task.objects.get(owner=requester).plan == plan


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        (
            '{"kind": "team", "mode": "sideways", "nodes": [{"id": "a", "role": "r"}]}',
            "The plan is not valid",
        ),
    ],
)
def test_new_task_form_rejects_bad_plans(
    client: Any, requester: Any, plan: str, message: str
) -> None:
    """A3, U4: a bad plan is a form error (422), no task is created."""
    client.force_login(requester)
    response = client.post(
        reverse("task_new"), {"request": "x", "plan": plan, "validation_policy": "always"}
    )
    assert response.status_code == 422
    assert message in response.content.decode()
    assert not Task.objects.exists()


def test_new_task_form_requires_a_request(client: Any, requester: Any) -> None:
    """A3: empty request is refused."""
    client.force_login(requester)
    response = client.post(reverse("task_new"), {"request": "", "validation_policy": "always"})
    assert response.status_code == 422 and not Task.objects.exists()


def test_progress_shows_steps_and_tool_calls_as_they_happen(client: Any, requester: Any) -> None:
    """U4: while running, the polled fragment lists runs and tool calls stored so far."""
    task = TaskFactory(owner=requester, status=S.RUNNING, attempt_count=1, version=2)
    run = RunFactory(task=task, attempt_index=1, status="running", model_name="offline:researcher")
    client.force_login(requester)
    url = reverse("task_progress", args=[task.pk])
    first = client.get(url, {"seen": 2}, **HX).content.decode()
    assert "Running" in first and "search_documents" not in first
    ToolEvidenceFactory(
        run=run, sequence=0, tool_name="search_documents", arguments={"query": "remote <b>days</b>"}
    )
    second = client.get(url, {"seen": 2}, **HX).content.decode()
    assert "search_documents" in second and "&lt;b&gt;days&lt;/b&gt;" in second
    assert "offline:researcher (offline stand-in, not an LLM)" in second


def test_progress_reloads_the_task_view_when_the_status_changed(
    client: Any, requester: Any
) -> None:
    """U4: a status change since the page was drawn re-fetches #main (no full reload);
    the final view no longer polls."""
    task = TaskFactory(
        owner=requester,
        status=S.AWAITING_FEEDBACK,
        attempt_count=1,
        version=4,
        final_answer="Done.",
    )
    client.force_login(requester)
    response = client.get(reverse("task_progress", args=[task.pk]), {"seen": 2}, **HX)
    location = json.loads(response["HX-Location"])
    assert location == {
        "path": reverse("task_detail", args=[task.pk]),
        "target": "#main",
        "push": "false",
    }
    page = client.get(
        location["path"], HTTP_HX_REQUEST="true", HTTP_HX_TARGET="main"
    ).content.decode()
    assert 'id="progress"' not in page
    assert "Done." in page and 'value="satisfied"' in page  # feedback buttons for the requester


def test_my_tasks_polls_only_while_something_runs(client: Any, requester: Any) -> None:
    """U4: the list refreshes itself while a task is queued or running."""
    client.force_login(requester)
    task = TaskFactory(owner=requester, status=S.RUNNING)
    page = client.get(reverse("home")).content.decode()
    assert 'hx-trigger="every 3s"' in page
    Task.objects.filter(pk=task.pk).update(status=S.CLOSED)
    fragment = client.get(
        reverse("home"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="task-list"
    ).content.decode()
    assert "every 3s" not in fragment and fragment.lstrip().startswith('<div id="task-list"')


def test_all_tasks_page_is_for_staff(client: Any, requester: Any, reviewer: Any) -> None:
    """A2: reviewers see everyone's tasks; requesters cannot open that page."""
    TaskFactory(owner=requester, title="Alice's task")
    client.force_login(requester)
    assert client.get(reverse("task_list_all")).status_code == 403
    client.force_login(reviewer)
    page = client.get(reverse("task_list_all"), {"status": "open"}).content.decode()
    assert "Alice&#x27;s task" in page


def _row(page: str, task_id: int) -> str:
    start = page.index(f'data-task-id="{task_id}"')
    return page[start : page.index("</tr>", start)]


def test_lists_show_reruns_after_a_worker_fault_beside_the_attempts(
    client: Any, requester: Any, reviewer: Any
) -> None:
    """Issue 17 (two budgets): the task lists (mine, all) and the review queue show the
    re-runs after a worker fault next to the attempts, in the progress line's words,
    and nothing when there were none."""
    calm = TaskFactory(owner=requester, status=S.NEEDS_REVIEW, attempt_count=1, max_attempts=2)
    once = TaskFactory(
        owner=requester, status=S.NEEDS_REVIEW, attempt_count=2, max_attempts=2, requeue_count=1
    )
    twice = TaskFactory(owner=requester, status=S.OPEN, attempt_count=1, requeue_count=2)
    client.force_login(requester)
    mine = client.get(reverse("my_tasks")).content.decode()
    assert "re-run" not in _row(mine, calm.pk)
    assert "re-run 1 time after a worker fault" in _row(mine, once.pk)
    assert "re-run 2 times after a worker fault" in _row(mine, twice.pk)
    progress = client.get(reverse("task_progress", args=[once.pk]), **HX).content.decode()
    assert "attempt 2 of 2, re-run 1 time after a worker fault" in progress

    client.force_login(reviewer)
    everyone = client.get(reverse("task_list_all")).content.decode()
    assert "re-run 1 time after a worker fault" in _row(everyone, once.pk)
    queue = client.get(reverse("review_queue")).content.decode()
    assert "attempt 2 of 2, re-run 1 time after a worker fault" in _row(queue, once.pk)
    assert "attempt 1 of 2</span>" in _row(queue, calm.pk)
    assert "re-run" not in _row(queue, calm.pk)
