"""Issue 39 item 5, the smaller items, as the server renders them: why a task is in the
queue, the undo flash and toast in the same words, ``u`` in the keyboard help, the
validator-input tabs naming their judge, an external task's revision wording, no "your
turn" on a task waiting in review, and the app's own 404 page under DEBUG."""

from __future__ import annotations

import importlib
import re
from typing import Any

import pytest
from django.test import override_settings
from django.urls import clear_url_caches, reverse

from tasks_app.models import TaskEvent
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory, ValidationSnapshotFactory
from tests.ui.conftest import make_reviewable_task

pytestmark = pytest.mark.django_db


def test_a_queue_row_says_why_an_accepted_task_waits_for_a_person(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 39: a row whose verdict is "Accepted" says why it is in the queue (the
    reason of its move to needs_review: the judges disagree); a row whose verdict names
    its issue does not repeat it."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW, attempt_count=1, title="Pair")
    ValidationSnapshotFactory(task=task, attempt_index=1, status="accepted", result={})
    reason = "judges disagree: offline:judge said accepted, offline:second said rejected"
    TaskEvent.objects.create(
        task=task, from_status=S.VALIDATING, to_status=S.NEEDS_REVIEW, reason=reason
    )
    other = make_reviewable_task(requester)
    client.force_login(reviewer)
    html = client.get(reverse("review_queue")).content.decode()
    row = re.search(rf'<tr data-task-id="{task.pk}".*?</tr>', html, re.S)
    assert row and f"Why here: {reason}" in row.group(0)
    plain = re.search(rf'<tr data-task-id="{other.pk}".*?</tr>', html, re.S)
    assert plain and "Why here" not in plain.group(0)


def test_the_undo_flash_and_toast_give_the_same_time_and_help_lists_u(
    client: Any, reviewer: Any, requester: Any, settings: Any
) -> None:
    """Issue 39: the flash after a decision says when it applies, as the toast does
    ("applies at HH:MM:SS"), never "in a moment"; the ? help lists u."""
    settings.DECISION_UNDO_SECONDS = 30
    task = make_reviewable_task(requester)
    client.force_login(reviewer)
    page = client.post(
        reverse("task_feedback", args=[task.pk]),
        {"action": "satisfied", "version": task.version},
        follow=True,
    ).content.decode()
    at = re.search(r"satisfied, applies at (\d\d:\d\d:\d\d) unless you undo it", page)
    assert at, "the flash gives the time"
    assert f"applies at {at.group(1)}, in " in page  # the toast, same time
    assert "in a moment" not in page
    assert "<dt><kbd>u</kbd></dt><dd>undo your last decision" in page


def test_validator_input_tabs_name_the_judge_and_its_model(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 39: with a second judge the tabs read "Attempt 1 · judge · offline:judge" and
    "Attempt 1 · second judge · offline:second", not "Attempt 1 Attempt 1" (issue 47: a
    separator between the judge and its model)."""
    task = make_reviewable_task(requester)
    first = task.validations.get()
    ValidationSnapshotFactory(
        task=task,
        attempt_index=1,
        kind="second",
        status="rejected",
        companion_of=first,
        model_name="offline:second",
    )
    client.force_login(reviewer)
    html = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    tabs = [
        re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", t))
        for t in re.findall(r'<a class="badge input-tab.*?</a>', html, re.S)
    ]
    assert tabs == [
        "Attempt 1 · judge · offline:judge",
        "Attempt 1 · second judge · offline:second",
    ]


def test_an_external_task_needing_revision_waits_for_its_agent_not_a_queue(
    client: Any, requester: Any
) -> None:
    """Issue 39: an external task sent back for revision says it waits for the external
    agent; an internal one says its next attempt is queued."""
    external = TaskFactory(owner=requester, status=S.NEEDS_REVISION, agent="external")
    internal = TaskFactory(owner=requester, status=S.NEEDS_REVISION)
    client.force_login(requester)
    html = client.get(reverse("task_detail", args=[external.pk])).content.decode()
    assert "Waiting for the external agent to send its next attempt" in html
    assert "The next attempt is queued" not in html
    html = client.get(reverse("task_detail", args=[internal.pk])).content.decode()
    assert "The next attempt is queued" in html


def test_your_turn_only_on_a_requesters_task_that_waits_for_the_requester(
    client: Any, requester: Any
) -> None:
    """Issue 39: "your turn" on a task awaiting the requester's feedback, not on one
    waiting in review (the reviewers' turn)."""
    waiting = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK, title="Mine to answer")
    review = TaskFactory(owner=requester, status=S.NEEDS_REVIEW, title="In review")
    client.force_login(requester)
    html = client.get(reverse("my_tasks")).content.decode()
    rows = {
        pk: re.search(rf"<tr[^>]*>(?:(?!</tr>).)*?/tasks/{pk}/.*?</tr>", html, re.S)
        for pk in (waiting.pk, review.pk)
    }
    assert rows[waiting.pk] and "your turn" in rows[waiting.pk].group(0)
    assert rows[review.pk] and "your turn" not in rows[review.pk].group(0)


def test_an_unknown_address_under_debug_gets_the_apps_404_page(client: Any, reviewer: Any) -> None:
    """Issue 39: with DEBUG on (make run) an unknown URL answers 404 with the app's page
    ("Page not found" and where to go), not Django's technical page of URL patterns."""
    import project.urls

    try:
        with override_settings(DEBUG=True):
            importlib.reload(project.urls)
            clear_url_caches()
            client.force_login(reviewer)
            response = client.get("/no/such/page/")
            assert response.status_code == 404
            html = response.content.decode()
            assert "Page not found" in html and "Review queue" in html
            assert "Using the URLconf" not in html
    finally:
        importlib.reload(project.urls)
        clear_url_caches()
