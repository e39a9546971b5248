"""An external agent's own run times, however odd, never break its submission (found by
schemathesis: a start in the year 91 overflowed the duration column on PostgreSQL)."""

from __future__ import annotations

from typing import Any

import pytest

from tasks_app.intake.external import AttemptIn, external_attempt_submit
from tasks_app.models import Run
from tasks_app.workflow import services

pytestmark = pytest.mark.django_db


def test_a_run_that_started_centuries_ago_is_stored_with_the_largest_duration(
    requester: Any,
) -> None:
    task = services.task_create(owner=requester, request="What is it?", agent="external")
    attempt = AttemptIn.model_validate(
        {
            "final_answer": "It is this.",
            "runs": [
                {
                    "kind": "main",
                    "model": "acme:agent-1",
                    "started_at": "0091-04-21T13:15:50Z",
                    "finished_at": "2026-01-01T00:00:00Z",
                    "output_text": "It is this.",
                }
            ],
        }
    )
    result = external_attempt_submit(task_id=task.pk, attempt=attempt)
    assert result["task_status"] == "validating"
    assert Run.objects.get(task=task).duration_ms == 2**31 - 1
