"""A provider's finish reason (pydantic-ai's ModelResponse.finish_reason) of the agent's
model run is the run's finish reason, and a refusal is the task's failure reason."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.messages import ModelResponse, TextPart

from tasks_app.jobs import run_attempt_job
from tasks_app.models import Run, TaskEvent
from tasks_app.workflow.states import TaskStatus as S
from tests.api.conftest import bearer_client
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db


def test_a_content_filter_finish_is_stored_and_shown(
    scripted_model: Any, settings: Any, client: Any, operator: Any
) -> None:
    settings.AGENT_MODEL = scripted_model(
        lambda m, i: ModelResponse(parts=[TextPart("")], finish_reason="content_filter"),
        "test:refusing",
    )
    task = TaskFactory(owner=operator)
    assert run_attempt_job(task.pk) == S.FAILED
    run = Run.objects.get(task=task)
    assert run.finish_reason == "content_filter"
    assert run.error == "the model stopped: content_filter"
    reason = TaskEvent.objects.filter(task=task).last().reason
    assert "the model stopped: content_filter" in reason
    client.force_login(operator)
    page = client.get(f"/tasks/{task.pk}/").content.decode()
    assert "the model stopped: content_filter" in page
    runs = bearer_client(operator).get(f"/api/v1/tasks/{task.pk}/runs").json()["items"]
    assert [r["finish_reason"] for r in runs] == ["content_filter"]


def test_an_answer_cut_at_the_length_limit_keeps_the_reason(
    scripted_model: Any, settings: Any
) -> None:
    settings.AGENT_MODEL = scripted_model(
        lambda m, i: ModelResponse(parts=[TextPart("The budget is")], finish_reason="length"),
        "test:cut",
    )
    task = TaskFactory()
    assert run_attempt_job(task.pk) == S.VALIDATING
    run = Run.objects.get(task=task)
    assert run.finish_reason == "length"
    assert "the answer may be incomplete: the model stopped: length" in run.warnings
