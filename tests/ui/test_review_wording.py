"""The smaller findings of issue 26 in the verdict and queue pages: one column name per
meaning, a score only where it means something, one human wording for the citation
check, an attempt beyond the budget said as such, and no stale "Task #N created"."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from tasks_app.models import Task
from tests.factories import TaskFactory, ValidationSnapshotFactory
from tests.ui.test_claims_view import _reviewable

pytestmark = pytest.mark.django_db

HX_MAIN = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "main"}


def test_queue_names_the_lock_column_reviewer_beside_claims(
    client: Client, reviewer: Any, review_task: Any
) -> None:
    """Issue 26, smaller: the validator's "Claims" column no longer sits beside a
    "Claim" column (the reviewer holding the task)."""
    client.force_login(reviewer)

    html = client.get(reverse("review_queue")).content.decode()

    headers = re.findall(r"<th scope=\"col\"[^>]*>([^<]+)</th>", html)
    labels = re.findall(r'<label for="id_[a-z]+">([^<]+)</label>', html)
    assert headers == [
        "#", "Task", "Verdict", "Category", "Claims", "Assigned", "Reviewer", "Waiting"
    ]  # fmt: skip
    assert "Reviewer" in labels and "Claim" not in labels  # the filter of the same column


def test_score_is_shown_only_on_verdicts_it_means_something_for(
    client: Client, operator: Any, requester: Any
) -> None:
    """Issue 26, smaller: 1.00 on an insufficient-evidence verdict beside 0.00 on a
    rejection read as a ranking; an insufficient verdict shows no score."""
    doubtful = ValidationSnapshotFactory(
        task=TaskFactory(owner=requester), status="insufficient_evidence", score=1.0
    )
    rejected = ValidationSnapshotFactory(
        task=TaskFactory(owner=requester), status="rejected", score=0.0
    )
    client.force_login(operator)

    html = client.get(reverse("ops_index")).content.decode()
    card = client.get(reverse("ops_validation", args=[doubtful.pk])).content.decode()

    cells = dict(
        re.findall(
            r'<span class="badge v-([a-z_]+)">[^<]*</span></td><td class="num">([^<]*)</td>',
            html,
        )
    )
    assert cells == {"insufficient_evidence": "–", "rejected": "0.00"}
    assert "1.00" not in card and rejected.score == 0.0


def test_citation_check_is_said_in_one_human_wording(
    client: Client, reviewer: Any, requester: Any, settings: Any
) -> None:
    """Issue 26, smaller: never "Validator said insufficient_evidence; after the
    citation check: Insufficient evidence"; a status the check changed is named in words."""
    task, snapshot = _reviewable(settings, requester)
    client.force_login(reviewer)

    same = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    snapshot.model_status = "accepted"
    snapshot.save(update_fields=["model_status"])
    changed = client.get(reverse("task_detail", args=[task.pk])).content.decode()

    for html in (same, changed):
        assert "Validator said" not in html and "after the citation check:" not in html
        assert ">insufficient_evidence<" not in html and ">accepted<" not in html
    assert "Claims as the validator checked them" in same
    assert re.search(
        r"The validator said <span[^>]*>Accepted</span>; the application's citation check "
        r"made it <span[^>]*>Insufficient evidence</span>",
        changed,
    )


def test_attempt_beyond_the_budget_is_not_said_as_3_of_2(client: Client, requester: Any) -> None:
    """Issue 26, smaller: a revision past the automatic budget reads "attempt 3
    (budget 2, revision)" in the live progress, not "attempt 3 of 2"."""
    task = TaskFactory(
        owner=requester, status="running", attempt_count=3, max_attempts=2, version=5
    )
    client.force_login(requester)

    html = client.get(
        reverse("task_progress", args=[task.pk]),
        {"seen": 5},
        HTTP_HX_REQUEST="true",
        HTTP_HX_TARGET="progress",
    ).content.decode()

    assert "attempt 3 (budget 2, revision)" in html and "3 of 2" not in html


def test_created_banner_goes_when_the_task_view_is_fetched_again(
    client: Client, requester: Any
) -> None:
    """Issue 26, smaller: "Task #N created" is shown once; when the task view is
    re-fetched into #main (the progress poll after a status change) the banner is
    replaced, as a full page load would."""
    client.force_login(requester)
    client.post(
        reverse("task_new"),
        {"title": "", "request": "How many remote days?", "rules": "", "plan": "",
         "validation_policy": "always"},
    )  # fmt: skip
    task = Task.objects.get(owner=requester)
    url = reverse("task_detail", args=[task.pk])

    first = client.get(url, **HX_MAIN).content.decode()
    again = client.get(url, **HX_MAIN).content.decode()

    assert f"Task #{task.pk} created" in first
    oob = re.search(r'<div id="messages" class="messages-wrap" hx-swap-oob="true">(.*?)</div>',
                    again, re.S)  # fmt: skip
    assert oob, "the fetched view does not replace the old banner"
    assert oob.group(1).strip() == "" and "created" not in again
