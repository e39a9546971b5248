"""Bounded queries and small first responses whatever the size of the data (U1, U2)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from evidence_app.models import ValidationSnapshot
from tasks_app.models import Run, RunMessage, Task, ToolEvidence
from tasks_app.workflow.states import TaskStatus as S
from tests.ui.conftest import make_reviewable_task

pytestmark = pytest.mark.django_db


def test_queue_with_500_tasks_makes_a_bounded_number_of_queries(
    client: Any, reviewer: Any, requester: Any, django_assert_max_num_queries: Any
) -> None:
    """U1: the queue page costs the same few queries for 500 tasks with verdicts."""
    tasks = Task.objects.bulk_create(
        [
            Task(
                owner=requester,
                title=f"Question {i}",
                request="r" * 1000,
                status=S.NEEDS_REVIEW,
                claimed_by=reviewer if i % 7 == 0 else None,
            )
            for i in range(500)
        ]
    )
    ValidationSnapshot.objects.bulk_create(
        [
            ValidationSnapshot(
                task=t,
                attempt_index=1,
                status="insufficient_evidence",
                failure_category="incomplete",
                score=0.5,
                rendered_input="x" * 2000,
            )
            for t in tasks
        ]
    )
    client.force_login(reviewer)
    client.get(reverse("review_queue"))  # warm the session
    # session, user, groups, counts per status, paginator count, page rows, the day's
    # progress (issue 13), the user's and groups' permissions (the admin link), the open
    # audits (issue 27: the page's head only, not the list's refresh), the open audits of
    # the listed tasks (issue 36: a listed task's audits are no longer blind for the reader).
    with django_assert_max_num_queries(12):
        response = client.get(reverse("review_queue"), {"vstatus": "insufficient_evidence"})
    assert response.status_code == 200 and response.context["page"].paginator.count == 500
    with django_assert_max_num_queries(11):
        response = client.get(
            reverse("review_queue"),
            {"page": 10},
            HTTP_HX_REQUEST="true",
            HTTP_HX_TARGET="queue-list",
        )
    assert len(response.context["tasks"]) == 50


def test_detail_with_200_evidence_items_makes_a_bounded_number_of_queries(
    client: Any, reviewer: Any, requester: Any, django_assert_max_num_queries: Any
) -> None:
    """U2: evidence list, runs, snapshots and timeline in a fixed number of queries."""
    task = make_reviewable_task(requester)
    runs = Run.objects.bulk_create(
        [
            Run(task=task, attempt_index=1, kind="team_node", node_id=f"n{i}", model_name="m")
            for i in range(10)
        ]
    )
    ToolEvidence.objects.bulk_create(
        [
            ToolEvidence(
                run=runs[i % 10],
                task=task,
                attempt_index=1,
                sequence=i,
                tool_name="read_document",
                arguments={"document_id": i},
                content=f"content {i} " * 50,
            )
            for i in range(200)
        ]
    )
    RunMessage.objects.bulk_create(
        [RunMessage(run=runs[i % 10], index=i, role="tool", content="m") for i in range(300)]
    )
    client.force_login(reviewer)
    client.get(reverse("home"))
    # session, user, groups, task, snapshots, small snapshot bodies, evidence, runs,
    # events, claim events (issue 11), feedback, the queue position, the reviewers to
    # assign to, permissions (the admin link), the cost figures, the trace tree's
    # attempts and their first runs, the person's decision in its undo window (the toast,
    # issue 26), a reviewer's first view of the attempt (one INSERT that skips an existing
    # row, issue 27; 18 statements in all), the status's reason (issue 47) and the open
    # audits a reader's view exposes (issue 43): the same for 2 or 2,000 evidence items.
    with django_assert_max_num_queries(22):
        response = client.get(reverse("task_detail", args=[task.pk]))
    assert response.status_code == 200
    assert response.context["evidence_count"] == 202
    assert len(response.context["evidence_page"].items) == 50


def test_first_response_stays_small_for_a_10_mb_task(
    client: Any, reviewer: Any, requester: Any, settings: Any
) -> None:
    """U2: 10 MB of evidence, a 10 MB rendered input and a 1 MB answer: the page is small,
    the big sections are lazy placeholders, and each lazy URL returns everything."""
    settings.UI_LAZY_SECTION_CHARS = 20_000
    task = make_reviewable_task(requester)
    deep_fact = "DEEP FACT: the Lisbon office closes at 17:45 on Fridays."
    big = ("filler line of evidence text\n" * 350_000) + deep_fact
    run = task.runs.get()
    ToolEvidence.objects.create(
        run=run, task=task, attempt_index=1, sequence=5, tool_name="read_document", content=big
    )
    snap = task.validations.get()
    ValidationSnapshot.objects.filter(pk=snap.pk).update(
        rendered_input=big, rendered_input_chars=len(big)
    )
    Task.objects.filter(pk=task.pk).update(final_answer="answer " * 150_000)
    client.force_login(reviewer)
    response = client.get(reverse("task_detail", args=[task.pk]))
    assert response.status_code == 200
    assert len(response.content) < 200_000, len(response.content)
    page = response.content.decode()
    assert deep_fact not in page
    input_url = reverse("snapshot_section", args=[task.pk, snap.pk, "input"])
    answer_url = reverse("task_section", args=[task.pk, "answer"])
    assert f'hx-get="{input_url}" hx-trigger="click"' in page  # multi-megabyte: on click
    assert f'hx-get="{answer_url}" hx-trigger="revealed"' in page
    lazy = client.get(input_url, HTTP_HX_REQUEST="true").content.decode()
    assert deep_fact in lazy  # no truncation in the viewer (E5, U2)
    assert 'id="validator-input-search"' in lazy  # the same searchable viewer
    download = client.get(reverse("snapshot_download", args=[task.pk, snap.pk]))
    assert download.content.decode() == big
    item = ToolEvidence.objects.get(task=task, sequence=5)
    assert (
        deep_fact
        in client.get(reverse("evidence_content", args=[task.pk, item.pk])).content.decode()
    )
