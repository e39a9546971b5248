"""A long evidence list loads its tail on request (U2: big sections load lazily)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from evidence_app.review.task_detail import EVIDENCE_INLINE_ITEMS
from tasks_app.models import ToolEvidence
from tests.ui.conftest import make_reviewable_task

pytestmark = pytest.mark.django_db


def test_detail_lists_the_first_results_and_loads_the_rest_on_request(
    client: Any, reviewer: Any, requester: Any, other_requester: Any
) -> None:
    """U2: the first EVIDENCE_INLINE_ITEMS results inline, a button for the rest; the
    section returns every remaining result with its size; other requesters get 404."""
    task = make_reviewable_task(requester)
    run = task.runs.get()
    for i in range(EVIDENCE_INLINE_ITEMS + 8):
        ToolEvidence.objects.create(
            run=run,
            task=task,
            attempt_index=1,
            sequence=100 + i,
            tool_name="read_document",
            content=f"result {i} " * 10,
        )
    total = task.tool_evidence.count()
    ordered = list(task.tool_evidence.order_by("attempt_index", "run_id", "sequence"))
    client.force_login(reviewer)
    page = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert page.count('<details id="ev-') == EVIDENCE_INLINE_ITEMS
    assert f"{total} tool results" in page
    assert f"Show the other {total - EVIDENCE_INLINE_ITEMS} results" in page
    assert f'id="ev-{ordered[EVIDENCE_INLINE_ITEMS].pk}"' not in page

    url = reverse("task_section", args=[task.pk, "evidence"])
    rest = client.get(url, HTTP_HX_REQUEST="true").content.decode()
    assert rest.count('<details id="ev-') == total - EVIDENCE_INLINE_ITEMS
    assert f'id="ev-{ordered[EVIDENCE_INLINE_ITEMS].pk}"' in rest
    assert f'id="ev-{ordered[-1].pk}"' in rest
    assert reverse("evidence_content", args=[task.pk, ordered[-1].pk]) in rest

    client.force_login(other_requester)
    assert client.get(url).status_code == 404
