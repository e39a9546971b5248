"""Actions from the UI (U3, S5): satisfied / revise / abandon, claims, stale and
illegal actions refused with a message and nothing applied."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from tasks_app.models import Feedback, Task, TaskEvent
from tasks_app.workflow import services
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory, UserFactory

pytestmark = pytest.mark.django_db

HX_MAIN = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "main"}


def feedback_url(task: Task) -> str:
    return reverse("task_feedback", args=[task.pk])


def test_reviewer_marks_satisfied_and_returns_to_queue(
    client: Any, reviewer: Any, review_task: Any
) -> None:
    """U3, V3: satisfied closes the task (force-accepted: the validator did not accept);
    from the task page of the last queue item the reviewer goes back to the (now empty)
    queue without a full reload (issue 13: complete-and-next)."""
    client.force_login(reviewer)
    response = client.post(
        feedback_url(review_task),
        {"action": "satisfied", "version": review_task.version, "return_to": "next"},
        **HX_MAIN,
    )
    assert response.status_code == 200
    assert (
        '"path": "/review/"' in response["HX-Location"]
        and '"target": "#main"' in response["HX-Location"]
    )
    review_task.refresh_from_db()
    assert review_task.status == S.CLOSED
    assert review_task.validation_outcome == "force_accepted"
    assert Feedback.objects.get(task=review_task).author == reviewer
    queue = client.get(reverse("review_queue"), **HX_MAIN).content.decode()
    assert f'data-task-id="{review_task.pk}"' not in queue
    assert "satisfied" in queue and 'hx-swap-oob="true"' in queue  # the message travels out of band


def test_revise_needs_a_comment_and_queues_nothing_without_it(
    client: Any, reviewer: Any, review_task: Any
) -> None:
    """S5: a revision without comment is refused (422), nothing changes."""
    client.force_login(reviewer)
    response = client.post(
        feedback_url(review_task),
        {"action": "revise", "comment": " ", "version": review_task.version},
        **HX_MAIN,
    )
    assert response.status_code == 422
    assert "needs a comment" in response.content.decode()
    review_task.refresh_from_db()
    assert review_task.status == S.NEEDS_REVIEW


@pytest.mark.parametrize("htmx", [True, False])
def test_blank_revise_comes_back_beside_the_field_with_the_text(
    client: Any, reviewer: Any, review_task: Any, htmx: bool
) -> None:
    """Issue 26 item 1: a blank revise comment is refused (422) with the page showing
    the revise form open, the comment box required, marked invalid, holding what was
    typed, the error beside it, and no error banner; nothing changes."""
    client.force_login(reviewer)
    events = review_task.events.count()
    response = client.post(
        feedback_url(review_task),
        {
            "action": "revise",
            "comment": "  \n ",
            "version": review_task.version,
            "return_to": "next",
            "filters": "vstatus=insufficient_evidence",
        },
        **(HX_MAIN if htmx else {}),
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert '<div id="revise-panel" class="inline-form">' in html  # open, not hidden
    assert 'required data-submit-with="revise-submit"' in html
    assert 'aria-invalid="true">  \n </textarea>' in html
    assert '<p id="revise-error" class="field-error">Say what should change' in html
    assert 'aria-describedby="revise-error revise-help"' in html
    assert "msg-error" not in html
    # The queue's filters stay in the form, for complete-and-next after the retry.
    assert 'name="filters" value="vstatus=insufficient_evidence"' in html
    assert [str(m) for m in get_messages(response.wsgi_request)] == []
    review_task.refresh_from_db()
    assert review_task.status == S.NEEDS_REVIEW
    assert review_task.events.count() == events
    assert not review_task.feedback.exists()


def test_revise_with_comment_moves_to_needs_revision(
    client: Any, requester: Any, review_task: Any
) -> None:
    """S5, U4: the requester's own revise with a comment."""
    client.force_login(requester)
    response = client.post(
        feedback_url(review_task),
        {"action": "revise", "comment": "Cite section 18", "version": review_task.version},
    )
    assert response.status_code == 302 and response["Location"] == reverse(
        "task_detail", args=[review_task.pk]
    )
    review_task.refresh_from_db()
    assert review_task.status == S.NEEDS_REVISION
    assert Feedback.objects.get(task=review_task).comment == "Cite section 18"


def test_stale_action_is_refused_with_409_and_nothing_applied(
    client: Any, reviewer: Any, review_task: Any
) -> None:
    """U3: the form carries the version the reviewer saw; the task changed since → 409."""
    client.force_login(reviewer)
    seen = review_task.version
    # Someone else revised it meanwhile (new version).
    services.task_apply_feedback(
        task_id=review_task.pk, actor=review_task.owner, action="revise", comment="redo"
    )
    events_before = TaskEvent.objects.filter(task=review_task).count()
    response = client.post(
        feedback_url(review_task), {"action": "abandon", "version": seen}, **HX_MAIN
    )
    assert response.status_code == 409
    body = response.content.decode()
    assert "Not applied" in body and "changed since you loaded it" in body
    assert "<html" not in body  # the refreshed task view, for #main
    review_task.refresh_from_db()
    assert review_task.status == S.NEEDS_REVISION
    assert TaskEvent.objects.filter(task=review_task).count() == events_before


def test_double_submit_is_applied_once(client: Any, reviewer: Any, review_task: Any) -> None:
    """U3: the same action sent twice (double click) is not applied twice."""
    client.force_login(reviewer)
    data = {"action": "satisfied", "version": review_task.version}
    assert client.post(feedback_url(review_task), data, **HX_MAIN).status_code == 200
    assert client.post(feedback_url(review_task), data, **HX_MAIN).status_code == 409
    assert Feedback.objects.filter(task=review_task).count() == 1


def test_stale_action_without_htmx_redirects_with_message(
    client: Any, reviewer: Any, review_task: Any
) -> None:
    """U3: plain form posts (no JS) get a redirect and the message."""
    client.force_login(reviewer)
    response = client.post(
        feedback_url(review_task), {"action": "satisfied", "version": review_task.version - 1}
    )
    assert response.status_code == 302
    assert any("changed since you loaded it" in str(m) for m in get_messages(response.wsgi_request))
    review_task.refresh_from_db()
    assert review_task.status == S.NEEDS_REVIEW


def test_illegal_action_is_refused(client: Any, requester: Any) -> None:
    """S3: satisfied on a running task is illegal → 409, nothing applied."""
    task = TaskFactory(owner=requester, status=S.RUNNING, version=1)
    client.force_login(requester)
    response = client.post(feedback_url(task), {"action": "satisfied", "version": 1}, **HX_MAIN)
    assert response.status_code == 409
    assert "cannot move from" in response.content.decode()
    task.refresh_from_db()
    assert task.status == S.RUNNING


def test_claim_by_another_reviewer_blocks_actions_until_taken_over(
    client: Any, reviewer: Any, review_task: Any
) -> None:
    """U3: a live claim by someone else refuses the action; an explicit take-over works."""
    other = UserFactory(username="ruth", is_staff=True)
    other.groups.add(*reviewer.groups.all())
    services.task_claim(task_id=review_task.pk, reviewer=other)
    client.force_login(reviewer)
    page = client.get(reverse("task_detail", args=[review_task.pk])).content.decode()
    assert "Claimed by <strong>ruth</strong>" in page and "Take over the claim from ruth" in page
    response = client.post(
        feedback_url(review_task), {"action": "abandon", "version": review_task.version}, **HX_MAIN
    )
    assert response.status_code == 409 and "claimed by ruth" in response.content.decode()
    assert (
        client.post(
            reverse("task_claim", args=[review_task.pk]), {"op": "claim"}, **HX_MAIN
        ).status_code
        == 409
    )
    assert (
        client.post(
            reverse("task_claim", args=[review_task.pk]), {"op": "claim", "force": "1"}, **HX_MAIN
        ).status_code
        == 200
    )
    review_task.refresh_from_db()
    assert review_task.claimed_by == reviewer
    assert (
        client.post(
            feedback_url(review_task),
            {"action": "abandon", "version": review_task.version},
            **HX_MAIN,
        ).status_code
        == 200
    )
    review_task.refresh_from_db()
    assert review_task.status == S.ABANDONED


def test_claim_and_release(client: Any, reviewer: Any, review_task: Any) -> None:
    """U3: claim, see it in the queue, release."""
    client.force_login(reviewer)
    client.post(reverse("task_claim", args=[review_task.pk]), {"op": "claim"})
    review_task.refresh_from_db()
    assert review_task.claimed_by == reviewer
    assert (
        "You hold the claim"
        in client.get(reverse("task_detail", args=[review_task.pk])).content.decode()
    )
    client.post(reverse("task_claim", args=[review_task.pk]), {"op": "release"})
    review_task.refresh_from_db()
    assert review_task.claimed_by is None


def test_requester_cannot_claim(client: Any, requester: Any, review_task: Any) -> None:
    """U3: claims are for reviewers."""
    client.force_login(requester)
    assert (
        client.post(reverse("task_claim", args=[review_task.pk]), {"op": "claim"}).status_code
        == 403
    )


def test_operator_only_user_cannot_decide_on_others_tasks(
    client: Any, operator: Any, review_task: Any
) -> None:
    """S5: decisions belong to the requester and reviewers."""
    client.force_login(operator)
    assert (
        client.post(
            feedback_url(review_task), {"action": "abandon", "version": review_task.version}
        ).status_code
        == 403
    )


def test_queue_keyboard_action_rerenders_the_list(
    client: Any, reviewer: Any, review_task: Any, requester: Any
) -> None:
    """U1, U3: an action sent from the queue (s/r/a) answers with the refreshed list,
    keeping the filters."""
    from tests.ui.conftest import make_reviewable_task

    second = make_reviewable_task(requester, title="Second in queue")
    client.force_login(reviewer)
    response = client.post(
        feedback_url(review_task),
        {
            "action": "abandon",
            "version": review_task.version,
            "return_to": "queue",
            "filters": "vstatus=insufficient_evidence",
        },
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="queue-list",
    )
    body = response.content.decode()
    assert response.status_code == 200
    assert body.lstrip().startswith('<div id="queue-list"')
    assert f'data-task-id="{review_task.pk}"' not in body and f'data-task-id="{second.pk}"' in body
    assert (
        "vstatus=insufficient_evidence" in body
    )  # the refreshed list keeps polling with the filters
    assert "abandon" in body.lower()


def test_queue_keyboard_action_stale_gets_409_list(
    client: Any, reviewer: Any, review_task: Any
) -> None:
    """U3: a stale action from the queue re-renders the list with the message, status 409."""
    client.force_login(reviewer)
    response = client.post(
        feedback_url(review_task),
        {"action": "satisfied", "version": 0, "return_to": "queue"},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="queue-list",
    )
    assert response.status_code == 409
    assert "Not applied" in response.content.decode()
    review_task.refresh_from_db()
    assert review_task.status == S.NEEDS_REVIEW


def test_notes(client: Any, reviewer: Any, review_task: Any) -> None:
    """U3 (notes): a reviewer adds a note; it shows on the page; an empty one is refused."""
    client.force_login(reviewer)
    client.post(
        reverse("task_note", args=[review_task.pk]), {"comment": "Checked section 18 by hand."}
    )
    assert (
        "Checked section 18 by hand."
        in client.get(reverse("task_detail", args=[review_task.pk])).content.decode()
    )
    assert (
        client.post(
            reverse("task_note", args=[review_task.pk]), {"comment": ""}, **HX_MAIN
        ).status_code
        == 422
    )


def test_csrf_is_enforced_on_actions(reviewer: Any, review_task: Any) -> None:
    """U3: CSRF protection stays on; htmx sends the token as a header."""
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(reviewer)
    assert (
        strict.post(
            feedback_url(review_task), {"action": "abandon", "version": review_task.version}
        ).status_code
        == 403
    )
    page = strict.get(reverse("task_detail", args=[review_task.pk]))
    token = page.context["csrf_token"]
    ok = strict.post(
        feedback_url(review_task),
        {"action": "abandon", "version": review_task.version},
        HTTP_X_CSRFTOKEN=str(token),
        **HX_MAIN,
    )
    assert ok.status_code == 200


def test_blank_revise_from_the_queue_is_refused_with_the_list(
    client: Any, reviewer: Any, review_task: Any
) -> None:
    """Issue 26 item 1: a blank revise sent from the queue's inline form (past its own
    check) is refused (422): the list comes back with the task still in it and the
    reason, and nothing changes."""
    client.force_login(reviewer)
    events = review_task.events.count()
    response = client.post(
        feedback_url(review_task),
        {
            "action": "revise",
            "comment": "   ",
            "version": review_task.version,
            "return_to": "queue",
        },
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="queue-list",
    )
    body = response.content.decode()
    assert response.status_code == 422
    assert body.lstrip().startswith('<div id="queue-list"')
    assert f'data-task-id="{review_task.pk}"' in body
    assert "Not applied: Say what should change: a revision needs a comment." in body
    review_task.refresh_from_db()
    assert review_task.status == S.NEEDS_REVIEW
    assert review_task.events.count() == events
    assert not review_task.feedback.exists()
