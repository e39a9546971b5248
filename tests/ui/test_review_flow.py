"""Review flow without the browser (issue 13): complete-and-next within the queue's
filter, assignment, progress, the keyword field, knowledge-base search, the replay's
model check and differences, readable chart ticks, styled error pages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import reverse

from evidence_app.models import ReplayRequest, ValidationSnapshot
from evidence_app.operator.charts import nice_step
from evidence_app.operator.validation_views import verdict_changes
from tasks_app.models import Task
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import KnowledgeDocumentFactory
from tests.ui.conftest import make_reviewable_task

pytestmark = pytest.mark.django_db
HX_MAIN = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "main"}


def test_deciding_opens_the_next_task_of_the_same_filtered_queue(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 13: satisfied on the task page moves to the next task of the queue with the
    filter kept (a task outside the filter is skipped); the last one goes back to it."""
    first = make_reviewable_task(requester, title="Budget one")
    make_reviewable_task(requester, title="Leave policy")  # not matching the filter
    third = make_reviewable_task(requester, title="Budget three")
    client.force_login(reviewer)
    page = client.get(reverse("task_detail", args=[first.pk]), {"q": "budget"}).content.decode()
    assert "Task 1 of 2 in the queue" in page and 'id="queue-next"' in page
    response = client.post(
        reverse("task_feedback", args=[first.pk]),
        {
            "action": "satisfied",
            "version": first.version,
            "return_to": "next",
            "filters": "q=budget",
        },
        **HX_MAIN,
    )
    location = json.loads(response["HX-Location"])
    assert location["path"] == reverse("task_detail", args=[third.pk]) + "?q=budget"
    response = client.post(
        reverse("task_feedback", args=[third.pk]),
        {"action": "abandon", "version": third.version, "return_to": "next", "filters": "q=budget"},
        **HX_MAIN,
    )
    assert json.loads(response["HX-Location"])["path"] == reverse("review_queue") + "?q=budget"
    queue = client.get(reverse("review_queue")).content.decode()
    assert 'id="queue-done">2<' in queue and 'id="queue-mine">2<' in queue
    assert 'id="queue-remaining">1<' in queue


def test_refused_decision_does_not_move_on(client: Any, reviewer: Any, requester: Any) -> None:
    """Issue 13: a stale decision stays on the task with its message; nothing changes."""
    task = make_reviewable_task(requester)
    make_reviewable_task(requester, title="Another")
    client.force_login(reviewer)
    response = client.post(
        reverse("task_feedback", args=[task.pk]),
        {"action": "satisfied", "version": task.version - 1, "return_to": "next"},
        **HX_MAIN,
    )
    assert response.status_code == 409 and "HX-Location" not in response
    assert Task.objects.get(pk=task.pk).status == S.NEEDS_REVIEW


def test_assignment_and_the_assigned_to_me_filter(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 13: a reviewer assigns a queue item; 'Assigned to me' shows only those."""
    mine = make_reviewable_task(requester, title="Mine")
    other = make_reviewable_task(requester, title="Not mine")
    client.force_login(reviewer)
    client.post(reverse("task_assign", args=[mine.pk]), {"assignee": reviewer.pk})
    assert Task.objects.get(pk=mine.pk).assigned_to == reviewer
    page = client.get(reverse("review_queue"), {"assigned": "mine"}).content.decode()
    assert f'data-task-id="{mine.pk}"' in page and f'data-task-id="{other.pk}"' not in page
    client.post(reverse("task_assign", args=[mine.pk]), {"assignee": requester.pk})
    assert Task.objects.get(pk=mine.pk).assigned_to == reviewer  # not a reviewer: refused
    client.post(reverse("task_assign", args=[mine.pk]), {"assignee": ""})
    assert Task.objects.get(pk=mine.pk).assigned_to is None


def test_reviewer_lands_on_the_queue_and_requester_on_their_tasks(
    client: Any, reviewer: Any, requester: Any
) -> None:
    client.force_login(reviewer)
    assert client.get(reverse("home"))["Location"] == reverse("review_queue")
    client.force_login(requester)
    assert client.get(reverse("home")).status_code == 200


def test_no_native_dialogs_and_no_admin_link_without_admin_access(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 13: no hx-confirm / prompt; a reviewer without admin permissions sees no
    Admin link; the revise form is a real textarea."""
    task = make_reviewable_task(requester)
    client.force_login(reviewer)
    page = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert "hx-confirm" not in page and "prompt(" not in page
    assert reverse("admin:index") not in page and ">Admin<" not in page
    assert '<textarea id="feedback-comment"' in page


def test_requester_internals_are_refused_but_verdict_is_in_words(
    client: Any, requester: Any
) -> None:
    task = make_reviewable_task(requester)
    snap = task.validations.get()
    client.force_login(requester)
    page = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert "could not confirm the answer" in page
    assert 'id="input-panel"' not in page and "default@abc123" not in page
    assert client.get(reverse("snapshot_download", args=[task.pk, snap.pk])).status_code == 403


def test_verdict_lists_show_each_sentence_once(client: Any, reviewer: Any, requester: Any) -> None:
    task = make_reviewable_task(requester)
    same = "The section number is not in the evidence."
    ValidationSnapshot.objects.filter(task=task).update(
        result={
            "status": "insufficient_evidence",
            "issues": [same],
            "missing_requirements": [same],
            "evidence_gaps": [same],
            "reasoning": "Short.",
        }
    )
    client.force_login(reviewer)
    page = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    verdict = page[page.index('id="verdict-panel"') : page.index('id="verdict-technical"')]
    assert verdict.count(same) == 1
    assert "Confidence" not in verdict  # no score beside "could not confirm"


def test_keyword_policy_needs_its_keywords(client: Any, requester: Any) -> None:
    client.force_login(requester)
    data = {"request": "What is the budget?", "validation_policy": "keywords"}
    response = client.post(reverse("task_new"), data)
    assert response.status_code == 422 and Task.objects.count() == 0
    client.post(reverse("task_new"), {**data, "validation_keywords": "budget, travel"})
    assert Task.objects.get().validation_keywords == ["budget", "travel"]


def test_knowledge_search_opens_the_document_at_the_passage(client: Any, reviewer: Any) -> None:
    doc = KnowledgeDocumentFactory(
        title="Meals", body="Intro text.\n\nThe daily meal allowance is 32 EUR.\n\nOther."
    )
    client.force_login(reviewer)
    results = client.get(reverse("kb_search"), {"q": "meal allowance"}, HTTP_HX_REQUEST="true")
    html = results.content.decode()
    assert f"{reverse('kb_document', args=[doc.pk])}?q=meal%20allowance#p2" in html
    page = client.get(reverse("kb_document", args=[doc.pk]), {"q": "meal allowance"})
    text = page.content.decode()
    assert 'id="p2" class="match"' in text and "<mark>meal</mark>" in text


def test_knowledge_search_is_for_reviewers(client: Any, requester: Any) -> None:
    client.force_login(requester)
    assert client.get(reverse("kb_search"), {"q": "x"}).status_code == 403


def test_replay_with_an_unknown_model_is_refused_before_queueing(
    client: Any, operator: Any, requester: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Issue 13: the model name is checked against the providers; nothing is queued."""
    task = make_reviewable_task(requester)
    original = task.validations.get()
    client.force_login(operator)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            reverse("ops_replay", args=[original.pk]),
            {"model": "nosuchprovider:model"},
            **HX_MAIN,
        )
    assert response.status_code == 422 and 'id="model-error"' in response.content.decode()
    assert callbacks == [] and ValidationSnapshot.objects.count() == 1


def test_replay_page_waits_without_reload_and_lists_differences(
    client: Any, operator: Any, requester: Any
) -> None:
    """V9, issue 22: while the newest replay request is queued the page polls; once its
    replay is stored the poll stops and the differences are listed; a failed request
    says so, with its reason, where it said "queued"."""
    task = make_reviewable_task(requester)
    original = task.validations.get()
    client.force_login(operator)
    request = ReplayRequest.objects.create(original=original, requested_by=operator)
    url = reverse("ops_validation", args=[original.pk])
    fragment = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "side-by-side"}
    waiting = client.get(url).content.decode()
    assert 'hx-trigger="every 1s"' in waiting and "The replay is queued" in waiting
    replay = ValidationSnapshot.objects.create(
        task=task,
        attempt_index=1,
        kind="replay",
        replay_of=original,
        status="accepted",
        score=0.9,
        result={"status": "accepted", "issues": []},
    )
    ReplayRequest.objects.filter(pk=request.pk).update(state="succeeded", result=replay)
    done = client.get(url, **fragment).content.decode()
    assert "every 1s" not in done and 'id="replay-changes"' in done
    ReplayRequest.objects.create(
        original=original, state="failed", error="DomainError: no template 'retired'"
    )
    failed = client.get(url, **fragment).content.decode()
    assert "every 1s" not in failed and 'data-state="failed"' in failed
    assert "The replay failed" in failed and "no template &#x27;retired&#x27;" in failed
    changes = verdict_changes(original, replay)
    assert changes[0] == "Status: Insufficient evidence → Accepted"
    assert "Reason no longer given: The section number is not in the evidence." in changes


def test_verdict_changes_lists_category_score_claims_and_reasons() -> None:
    """V9: each difference in a sentence, in order: status, category (none when unset),
    score, a claim whose verdict changed (claims only in one verdict, and entries that
    are not claims, are left out), then reasons added and dropped (issues and
    reconciliation notes alike)."""
    original = ValidationSnapshot(
        status="insufficient_evidence",
        failure_category="incomplete",
        score=None,
        result={
            "claims": [
                {"text": "Budget is 1,750 EUR.", "verdict": "unsupported"},
                {"text": "Leave is 28 days.", "verdict": "supported"},
                "not a claim",
            ],
            "issues": ["No source for the budget.", "Kept"],
            "reconciliation": ["citation 1 unverified"],
        },
    )
    replay = ValidationSnapshot(
        status="rejected",
        failure_category=None,
        score=0.25,
        result={
            "claims": [
                "not a claim",
                {"text": "Leave is 28 days.", "verdict": "supported"},
                {"text": "Budget is 1,750 EUR.", "verdict": "contradicted"},
                {"text": "A new claim.", "verdict": "supported"},
            ],
            "issues": ["Kept", "Budget contradicted."],
        },
    )
    assert verdict_changes(original, replay) == [
        "Status: Insufficient evidence → Rejected",
        "Category: Incomplete → none",
        "Score: – → 0.25",
        "Claim “Budget is 1,750 EUR.”: unsupported → contradicted",
        "New reason: Budget contradicted.",
        "Reason no longer given: No source for the budget.",
        "Reason no longer given: citation 1 unverified",
    ]
    same = ValidationSnapshot(status="accepted", score=0.5, result=None)
    assert verdict_changes(same, ValidationSnapshot(status="accepted", score=0.5)) == []


@pytest.mark.parametrize(("top", "step"), [(1, 1), (4, 1), (18, 5), (37, 10), (180, 50)])
def test_chart_ticks_are_round_numbers(top: int, step: int) -> None:
    assert nice_step(top) == step


def test_error_pages_have_navigation(client: Any, requester: Any) -> None:
    client.force_login(requester)
    for url, status in ((reverse("review_queue"), 403), ("/no-such-page/", 404)):
        response = client.get(url)
        assert response.status_code == status
        html = response.content.decode()
        assert 'aria-label="Main"' in html and reverse("my_tasks") in html
