"""Jobs are sent through their task objects, so Celery's own settings apply to them
(issue 11: one way to send jobs; X1)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client
from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo

from project.celery import app as celery_app
from tasks_app.models import Task
from tasks_app.workflow.states import TaskStatus as S
from tests import factories


def _broker_files(folder: Path) -> set[str]:
    queue = folder / "queue"
    return {p.name for p in queue.iterdir()} if queue.exists() else set()


@pytest.fixture
def eager(settings: Any) -> Any:
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    settings.CELERY_TASK_ALWAYS_EAGER = True
    yield
    celery_app.conf.task_always_eager = previous


@pytest.mark.django_db(transaction=True)
def test_eager_mode_runs_a_task_created_through_the_api_to_awaiting_feedback(
    eager: Any, scripted_model: Any, settings: Any, requester: Any
) -> None:
    """With CELERY_TASK_ALWAYS_EAGER the attempt and then its validation run in-process:
    the task does not stay in 'validating' (issue 11)."""

    def agent(messages: list[Any], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1 and info.function_tools:
            return ModelResponse(
                parts=[ToolCallPart("search_knowledge", {"query": "training budget"}, "c1")]
            )
        return ModelResponse(parts=[TextPart("The annual training budget is 1,750 EUR.")])

    settings.AGENT_MODEL = scripted_model(agent, "test:eager-agent")
    settings.VALIDATOR_MODEL = "offline:judge"
    factories.KnowledgeDocumentFactory(
        title="Training Budget", body="The annual training budget is 1,750 EUR per employee."
    )
    client = Client()
    client.force_login(requester)
    response = client.post(
        "/api/v1/tasks",
        {"request": "What is the annual training budget?"},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    task = Task.objects.get(pk=response.json()["id"])
    assert task.status == S.AWAITING_FEEDBACK
    assert list(task.events.values_list("to_status", flat=True)) == [
        S.RUNNING,
        S.VALIDATING,
        S.AWAITING_FEEDBACK,
    ]


@pytest.mark.django_db(transaction=True)
def test_jobs_enqueued_by_tests_go_to_the_throwaway_broker_not_var_broker(
    _isolated_broker: Path, requester: Any
) -> None:
    """The broker-isolation fixture really isolates: a committed task's job lands in the
    session's temporary folder and the developer's var/broker is left as it was."""
    developer_queue = Path(django_settings.BASE_DIR) / "var" / "broker"
    before_dev = _broker_files(developer_queue)
    before_tmp = _broker_files(_isolated_broker)
    client = Client()
    client.force_login(requester)
    response = client.post(
        "/api/v1/tasks", {"request": "Anything at all"}, content_type="application/json"
    )
    assert response.status_code == 201
    assert _broker_files(developer_queue) == before_dev
    assert len(_broker_files(_isolated_broker) - before_tmp) == 1
