"""X1, S3, issue 16: two deliveries of the same validation job at once write one
verdict and call the validator model once."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from evidence_app.models import ValidationSnapshot
from evidence_app.validation.services import validation_run
from project.llm.registry import register_model, unregister_model
from tasks_app.models import TaskEvent
from tests.evidence_app.validation_helpers import JUDGE, validating_task, verdict


@pytest.mark.django_db(transaction=True)
def test_concurrent_validation_of_one_attempt_calls_the_model_once(settings: Any) -> None:
    """Issue 16: the first delivery claims the validation and is held inside its model
    call while a second delivery runs from start to end: the second finds the claim,
    does not call the model and writes nothing; the first writes the one verdict."""
    in_call = threading.Event()
    release = threading.Event()
    calls: list[int] = []

    def judge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(1)
        in_call.set()
        release.wait(timeout=20)
        return ModelResponse(parts=[TextPart(verdict("accepted"))])

    register_model(JUDGE, lambda: FunctionModel(judge, model_name=JUDGE))
    settings.VALIDATOR_MODEL = JUDGE
    results: dict[str, Any] = {}
    try:
        task = validating_task()

        def deliver(name: str) -> None:
            try:
                results[name] = validation_run(task_id=task.pk, attempt_index=1)
            finally:
                connection.close()

        first = threading.Thread(target=deliver, args=("first",))
        first.start()
        assert in_call.wait(timeout=20)
        second = threading.Thread(target=deliver, args=("second",))
        second.start()
        second.join(timeout=20)
        assert not second.is_alive()
        # The duplicate finished while the first was still in its model call.
        assert results["second"] is None and len(calls) == 1
        assert ValidationSnapshot.objects.filter(task=task).count() == 0
        release.set()
        first.join(timeout=20)
    finally:
        release.set()
        unregister_model(JUDGE)

    assert len(calls) == 1
    snapshot = ValidationSnapshot.objects.get(task=task)
    assert results["first"].pk == snapshot.pk
    assert TaskEvent.objects.filter(task=task, actor_kind="validator").count() == 1
    task.refresh_from_db()
    assert task.status == "awaiting_feedback" and task.validation_claimed_at is None


@pytest.mark.django_db(transaction=True)
def test_claim_keeper_refreshes_the_claim_and_stops_once_it_is_taken_over(
    settings: Any,
) -> None:
    """Issue 17: while the validator is called the claim stays fresh (a job killed
    mid-call leaves a claim that goes stale); once another job takes the claim over, the
    keeper's fenced refresh finds nothing and its thread ends without writing."""
    import time
    from datetime import timedelta

    from django.utils import timezone

    from tasks_app.models import Task
    from tasks_app.workflow.validation_claims import ClaimKeeper, validation_claim

    settings.ATTEMPT_LEASE_SECONDS = 3  # a refresh every second
    task = validating_task()
    stamp = validation_claim(task_id=task.pk, attempt_index=1)
    assert stamp is not None
    with ClaimKeeper(task_id=task.pk, attempt_index=1, stamp=stamp) as keeper:
        deadline = time.monotonic() + 10
        while Task.objects.get(pk=task.pk).validation_claimed_at == stamp:
            assert time.monotonic() < deadline, "the claim was never refreshed"
            time.sleep(0.05)
        other = timezone.now() + timedelta(hours=1)
        Task.objects.filter(pk=task.pk).update(validation_claimed_at=other)
        keeper._thread.join(timeout=10)
        assert not keeper._thread.is_alive(), "the keeper kept running after a takeover"
    assert Task.objects.get(pk=task.pk).validation_claimed_at == other
