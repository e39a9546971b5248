"""Replay and agreement over the API (V9, V10, A1, A2)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from evidence_app.models import ReplayRequest, ValidationSnapshot
from project.celery import app as celery_app
from tasks_app.workflow import services
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import RunFactory, TaskFactory, ToolEvidenceFactory, ValidationSnapshotFactory

pytestmark = pytest.mark.django_db

JSON = "application/json"


@pytest.fixture
def eager_jobs() -> Iterator[None]:
    """Jobs run in-process when sent, so the replay's effect is observable here."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        yield
    finally:
        celery_app.conf.task_always_eager = previous


def _validated_task(owner: Any) -> ValidationSnapshot:
    task = TaskFactory(
        owner=owner,
        status=S.AWAITING_FEEDBACK,
        attempt_count=1,
        final_answer="The annual training budget per employee is 1,800 EUR.",
    )
    run = RunFactory(task=task, attempt_index=1, output_text=task.final_answer)
    ToolEvidenceFactory(run=run)
    return ValidationSnapshotFactory(
        task=task,
        attempt_index=1,
        status="accepted",
        template_name="default",
        model_name="offline:judge",
    )


def test_operator_replays_a_validation_without_changing_the_task(
    otto: Client, requester: Any, eager_jobs: None, django_capture_on_commit_callbacks: Any
) -> None:
    """V9: POST /validations/{id}/replay answers 202 at once, queues the replay job after
    commit, and the job stores a replay snapshot linked to the original; the task's
    status and version stay as they were."""
    original = _validated_task(requester)
    task = original.task
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        response = otto.post(
            f"/api/v1/validations/{original.pk}/replay",
            {"template": "default", "model": "offline:judge"},
            content_type=JSON,
        )
    assert response.status_code == 202, response.content
    queued = ReplayRequest.objects.get()
    assert response.json() == {
        "status": "queued",
        "replay_id": queued.pk,
        "validation_id": original.pk,
        "task_id": task.pk,
        "template": "default",
        "model": "offline:judge",
    }
    assert len(callbacks) == 1
    replay = ValidationSnapshot.objects.get(replay_of=original)
    assert replay.kind == "replay"
    assert replay.model_name == "offline:judge"
    assert replay.requested_by.username == "otto"
    followed = otto.get(f"/api/v1/replays/{queued.pk}").json()
    assert followed["state"] == "succeeded" and followed["replay_validation_id"] == replay.pk
    assert followed["validation_id"] == original.pk and followed["error"] == ""
    before = (task.status, task.version)
    task.refresh_from_db()
    assert (task.status, task.version) == before

    listing = otto.get(f"/api/v1/tasks/{task.pk}/validations").json()
    assert [i["kind"] for i in listing["items"]] == ["validation", "replay"]
    # The task's verdict is still the original's, never the replay's.
    assert otto.get(f"/api/v1/tasks/{task.pk}").json()["latest_validation"]["id"] == original.pk


def test_replay_queues_nothing_when_refused(
    otto: Client,
    rita: Client,
    alice: Client,
    requester: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """V9, A2, A3: only operators replay (403); unknown snapshots are 404; an unknown
    template or model is a 422 naming the field; none of these queues a job."""
    original = _validated_task(requester)
    url = f"/api/v1/validations/{original.pk}/replay"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        for client in (alice, rita):
            response = client.post(url, {}, content_type=JSON)
            assert response.status_code == 403
            assert response.json()["code"] == "permission_denied"
        response = otto.post("/api/v1/validations/999999/replay", {}, content_type=JSON)
        assert response.status_code == 404
        response = otto.post(url, {"template": "no-such-template"}, content_type=JSON)
        assert response.status_code == 422
        assert response.json()["errors"][0]["field"] == "template"
        response = otto.post(url, {"model": "nonsense-without-provider"}, content_type=JSON)
        assert response.status_code == 422
        assert response.json()["errors"][0]["field"] == "model"
    assert callbacks == []
    assert not ValidationSnapshot.objects.filter(kind="replay").exists()


def test_agreement_stats_compare_validator_and_people(
    otto: Client, rita: Client, requester: Any
) -> None:
    """V10: GET /stats/agreement groups decisions by template version and model with
    rate, kappa and the confusion table; operators only."""
    agreed = _validated_task(requester)
    services.task_apply_feedback(task_id=agreed.task_id, actor=requester, action="satisfied")
    disagreed = _validated_task(requester)
    services.task_apply_feedback(
        task_id=disagreed.task_id, actor=requester, action="revise", comment="Wrong."
    )

    response = otto.get("/api/v1/stats/agreement")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["count"] == 1
    group = body["items"][0]
    assert group["model_name"] == "offline:judge"
    assert group["count"] == 2
    assert group["agreement_rate"] == 0.5
    assert group["confusion"]["accepted"] == {"satisfied": 1, "revise": 1, "abandon": 0}
    assert rita.get("/api/v1/stats/agreement").status_code == 403
