"""Decisions in the pages (issue 26 items 1 and 6): the pending decision on the task page
and out of the queue, the undo view, comments on satisfied and abandon, the revise
comment beside the answer it asked for, what a requester is told, the new-task form's
team plan behind a disclosure, the empty queue's words."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from tasks_app.models import DecisionState, Feedback, FeedbackAction, Task
from tasks_app.workflow import services
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import RunFactory
from tests.ui.conftest import make_reviewable_task

pytestmark = pytest.mark.django_db


def decide(client: Any, task: Task, action: str, **fields: str) -> Any:
    data = {"action": action, "version": task.version, "return_to": "", **fields}
    return client.post(reverse("task_feedback", args=[task.pk]), data)


def test_a_pending_decision_replaces_the_buttons_and_leaves_the_queue(
    client: Any, reviewer: Any, requester: Any, settings: Any
) -> None:
    """Issue 26 item 1: while pending, the task page shows "Satisfied by rita — undo"
    with the seconds left and no decision buttons, the queue leaves the task out; the
    undo view puts both back and the timeline says "Decision undone by rita"."""
    settings.DECISION_UNDO_SECONDS = 30
    task = make_reviewable_task(requester)
    client.force_login(reviewer)
    decide(client, task, "satisfied")
    page = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert 'id="pending-decision"' in page and "Satisfied</strong> by rita" in page
    assert 'id="act-satisfied"' not in page and 'id="undo-toast"' in page
    queue = client.get(reverse("review_queue")).content.decode()
    assert f'data-task-id="{task.pk}"' not in queue

    feedback = Feedback.objects.get(task=task)
    client.post(reverse("decision_undo", args=[task.pk, feedback.pk]))
    page = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert 'id="act-satisfied"' in page and 'id="pending-decision"' not in page
    assert "Decision undone</strong> by rita" in page
    assert f'data-task-id="{task.pk}"' in client.get(reverse("review_queue")).content.decode()


def test_someone_elses_undo_is_refused_and_changes_nothing(
    client: Any, reviewer: Any, requester: Any, other_requester: Any, settings: Any
) -> None:
    """Issue 26 item 1: a requester cannot undo a reviewer's decision (403)."""
    settings.DECISION_UNDO_SECONDS = 30
    task = make_reviewable_task(requester)
    feedback = services.task_decide(task_id=task.pk, actor=reviewer, action="satisfied")
    client.force_login(requester)
    response = client.post(reverse("decision_undo", args=[task.pk, feedback.pk]))
    assert response.status_code == 403
    feedback.refresh_from_db()
    assert feedback.state == DecisionState.PENDING


def test_satisfied_comment_and_abandon_reason_reach_the_timeline(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 26 item 6: the optional comment with Satisfied and the reason to Abandon are
    stored and shown in the timeline; text left in the revise box is not sent with them."""
    done = make_reviewable_task(requester, title="Done one")
    gone = make_reviewable_task(requester, title="Gone one")
    client.force_login(reviewer)
    decide(client, done, "satisfied", satisfied_comment="Clear and cited.", comment="draft")
    decide(client, gone, "abandon", abandon_reason="Asked twice.", comment="draft")
    assert Feedback.objects.get(task=done).comment == "Clear and cited."
    assert Feedback.objects.get(task=gone).comment == "Asked twice."
    page = client.get(reverse("task_detail", args=[gone.pk])).content.decode()
    assert "Abandon</strong> by rita: <span hx-disable>Asked twice.</span>" in page
    plain = make_reviewable_task(requester, title="Plain one")
    decide(client, plain, "satisfied", comment="draft")
    assert Feedback.objects.get(task=plain).comment == ""


def test_the_revise_comment_is_shown_beside_the_next_attempts_answer(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 26 item 6: attempt 2's answer says "Revision asked by rita: <comment>"."""
    task = make_reviewable_task(requester)
    services.task_apply_feedback(
        task_id=task.pk, actor=reviewer, action="revise", comment="Name the section."
    )
    Task.objects.filter(pk=task.pk).update(status=S.NEEDS_REVIEW, attempt_count=2)
    RunFactory(task=task, attempt_index=2, output_text="Section 18: 1,800 EUR.")
    client.force_login(reviewer)
    page = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert 'id="revision-asked"' in page
    assert "Revision asked by rita:</strong> <span hx-disable>Name the section.</span>" in page
    assert Feedback.objects.filter(action=FeedbackAction.REVISE).count() == 1


def test_a_requester_is_told_a_reviewer_also_sees_the_task(
    client: Any, requester: Any, reviewer: Any
) -> None:
    """Issue 26 item 6: on a needs-review task the requester learns a reviewer also sees
    it; a reviewer is not told so."""
    task = make_reviewable_task(requester)
    client.force_login(requester)
    page = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert "A reviewer also sees this task in the review queue" in page
    client.force_login(reviewer)
    page = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert "A reviewer also sees this task" not in page


def test_the_team_plan_box_is_behind_an_advanced_disclosure(client: Any, requester: Any) -> None:
    """Issue 26 item 6: the raw JSON plan box is inside a closed "Advanced: team plan"."""
    client.force_login(requester)
    page = client.get(reverse("task_new")).content.decode()
    start = page.index('<details class="field" id="advanced-plan">')
    assert "<summary>Advanced: team plan</summary>" in page[start:]
    assert page.index('name="plan"') > start
    assert page.index('name="plan"') < page.index("</details>", start)


def test_the_empty_queue_says_what_it_means(client: Any, reviewer: Any) -> None:
    """Issue 26 item 6: the empty queue says what it means and what to expect."""
    client.force_login(reviewer)
    page = client.get(reverse("review_queue")).content.decode()
    assert (
        "Nothing to review: every task the validator doubted has been decided. New ones "
        "appear here automatically." in page
    )
