"""SPEC X1, S3: two deliveries of the same validation job at once write one verdict."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from evidence_app.models import ValidationSnapshot
from evidence_app.services import validation_run
from tasks_app.agents.models import register_model, unregister_model
from tasks_app.models import TaskEvent
from tests.evidence_app.validation_helpers import JUDGE, validating_task, verdict


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_validation_of_one_attempt_stores_one_snapshot(settings: Any) -> None:
    """Both workers judge (the barrier makes them overlap); the row lock and re-check let
    exactly one write its snapshot and transition; the other writes nothing."""
    barrier = threading.Barrier(2)

    def judge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        barrier.wait(timeout=10)
        return ModelResponse(parts=[TextPart(verdict("accepted"))])

    register_model(JUDGE, lambda: FunctionModel(judge, model_name=JUDGE))
    settings.VALIDATOR_MODEL = JUDGE
    try:
        task = validating_task()
        results: list[Any] = []
        lock = threading.Lock()

        def deliver() -> None:
            try:
                snapshot = validation_run(task_id=task.pk, attempt_index=1)
            finally:
                connection.close()
            with lock:
                results.append(snapshot)

        threads = [threading.Thread(target=deliver) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    finally:
        unregister_model(JUDGE)

    assert ValidationSnapshot.objects.filter(task=task).count() == 1
    snapshot = ValidationSnapshot.objects.get(task=task)
    assert [s.pk for s in results] == [snapshot.pk, snapshot.pk]
    assert TaskEvent.objects.filter(task=task, actor_kind="validator").count() == 1
    task.refresh_from_db()
    assert task.status == "awaiting_feedback"
