"""Issue 17: the transactional outbox. A request whose work committed never answers 500
because the broker is down; the job waits in the outbox and the relay publishes it, in
order and once, when the broker is back. And ``Idempotency-Key`` on ``POST /tasks``."""

from __future__ import annotations

import json
import logging
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from evidence_app.models import ReplayRequest
from project.broker import held_job_ids
from project.celery import app as celery_app
from project.celery import configure
from tasks_app.accounts.auth import api_token_create
from tasks_app.models import (
    Feedback,
    OtlpSpan,
    OtlpTrace,
    OutboxJob,
    Task,
    TaskEvent,
    WebhookDelivery,
)
from tasks_app.notifications.webhooks import webhook_endpoint_create
from tasks_app.runtime.reaper import attempt_reap
from tasks_app.workflow.outbox import outbox_relay
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import KnowledgeDocumentFactory, TaskFactory, ValidationSnapshotFactory
from tests.tasks_app import otlp_client
from tests.workers import Worker, database_url, wait_for

JSON = "application/json"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def project_broker(url: str) -> Iterator[None]:
    """Point the project's Celery app (what the outbox publishes through) at ``url``;
    Celery caches its connection pools, so they are dropped on the way in and out."""
    saved = celery_app.conf.broker_write_url
    celery_app.conf.broker_write_url = url
    celery_app._after_fork()  # forgets the cached connection and producer pools
    try:
        yield
    finally:
        celery_app.conf.broker_write_url = saved
        celery_app._after_fork()


@contextmanager
def own_redis(port: int) -> Iterator[None]:
    """A Redis server of this test's own on ``port`` (never the shared one)."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("needs redis-server on PATH")
    process = subprocess.Popen(
        [server, "--port", str(port), "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def answers() -> bool:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    return True
            except OSError:
                return False

        assert wait_for(answers, timeout=10), "redis-server did not start"
        yield
    finally:
        process.terminate()
        process.wait(timeout=10)


def _client(user: Any) -> Client:
    _, raw = api_token_create(user=user, name="test")
    return Client(headers={"Authorization": f"Bearer {raw}"})


def _create(client: Client, body: dict[str, Any], **headers: str) -> Any:
    return client.post("/api/v1/tasks", body, content_type=JSON, headers=headers)


@pytest.mark.django_db
def test_broker_down_during_create_answers_201_and_the_relay_publishes_once(
    requester: Any,
    django_capture_on_commit_callbacks: Any,
    caplog: pytest.LogCaptureFixture,
    _isolated_broker: Path,
) -> None:
    """Issue 17: with the broker unreachable, POST /tasks answers 201, the task exists
    once and its job waits in the outbox (one WARNING line naming the task, no
    traceback); the reaper does not re-send it meanwhile. When the broker is back the
    relay publishes it under the task's job id and marks the row; a second relay run
    publishes nothing more."""
    client = _client(requester)
    dead = f"redis://127.0.0.1:{_free_port()}/0"
    with (
        project_broker(dead),
        caplog.at_level(logging.WARNING, logger="tasks_app.workflow.outbox"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = _create(client, {"request": "Created while the broker is down"})
    assert response.status_code == 201, response.content
    task = Task.objects.get(request="Created while the broker is down")
    assert task.pk == response.json()["id"] and task.job_id
    row = OutboxJob.objects.get(job_id=task.job_id)
    assert row.published_at is None and row.attempts == 1 and row.last_error
    assert (row.name, row.args, row.task_ref) == ("tasks_app.run_attempt", [task.pk], task.pk)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and f"task {task.pk} " in warnings[0].getMessage()
    assert warnings[0].exc_info is None

    # Waiting in the outbox counts as held: the reaper sends no second copy.
    Task.objects.filter(pk=task.pk).update(updated_at=task.updated_at.replace(year=2000))
    with django_capture_on_commit_callbacks(execute=True):
        assert attempt_reap().reenqueued == []

    # The broker is back (the test's filesystem broker): the relay publishes the row.
    assert task.job_id not in (held_job_ids() or set())
    assert outbox_relay() == 1
    row.refresh_from_db()
    assert row.published_at is not None and row.attempts == 2
    assert task.job_id in (held_job_ids() or set())
    assert outbox_relay() == 0
    queued = [p for p in (_isolated_broker / "queue").iterdir() if task.job_id in p.read_text()]
    assert len(queued) == 1
    assert Task.objects.filter(request="Created while the broker is down").count() == 1


@pytest.mark.django_db
def test_relay_publishes_oldest_first_and_stops_while_the_broker_is_down(
    requester: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Issue 17: the relay sends waiting rows in the order they were written; while the
    broker is down it records the error on the oldest row and leaves them all waiting."""
    client = _client(requester)
    with project_broker(f"redis://127.0.0.1:{_free_port()}/0"):
        with django_capture_on_commit_callbacks(execute=False):
            for n in range(3):
                assert _create(client, {"request": f"Queued {n}"}).status_code == 201
        assert outbox_relay() == 0
    rows = list(OutboxJob.objects.order_by("pk"))
    assert [r.published_at for r in rows] == [None, None, None]
    assert [r.attempts for r in rows] == [1, 0, 0] and rows[0].last_error

    assert outbox_relay() == 3
    rows = list(OutboxJob.objects.order_by("pk"))
    published = [r.published_at for r in rows]
    assert None not in published and published == sorted(published)  # type: ignore[type-var]


@pytest.mark.django_db
def test_same_idempotency_key_twice_creates_one_task(
    requester: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Issue 17: POST /tasks with the same Idempotency-Key twice creates one task; the
    retry gets the first response with Idempotent-Replayed: true; the same key with
    another body is refused (422); a request without a key is not affected."""
    client = _client(requester)
    key = str(uuid.uuid4())
    body = {"request": "Only once, please"}
    with django_capture_on_commit_callbacks(execute=True):
        first = _create(client, body, **{"Idempotency-Key": key})
        second = _create(client, body, **{"Idempotency-Key": key})
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert second.headers.get("Idempotent-Replayed") == "true"
    assert "Idempotent-Replayed" not in first.headers
    assert Task.objects.filter(request="Only once, please").count() == 1
    assert OutboxJob.objects.count() == 1

    other = _create(client, {"request": "Something else"}, **{"Idempotency-Key": key})
    assert other.status_code == 422
    assert not Task.objects.filter(request="Something else").exists()


@pytest.mark.django_db
def test_idempotency_key_stores_nothing_when_the_request_fails(requester: Any) -> None:
    """Issue 17: an invalid request with a key stores no response: fixed and sent again
    with the same key, it runs."""
    client = _client(requester)
    key = str(uuid.uuid4())
    bad = _create(
        client, {"request": "x", "validation_policy": "sometimes"}, **{"Idempotency-Key": key}
    )
    assert bad.status_code == 422
    good = _create(client, {"request": "Fixed"}, **{"Idempotency-Key": key})
    assert good.status_code == 201 and "Idempotent-Replayed" not in good.headers
    assert Task.objects.filter(request="Fixed").count() == 1


def _worker_once_broker_is_back(
    *,
    port: int,
    queue: str,
    tmp_path: Path,
    env: dict[str, str],
    settled: Callable[[], str | None],
) -> tuple[str | None, str]:
    """The broker comes back (Redis started on ``port``) and a worker starts against it
    on ``queue`` (the offline judge; ``env`` adds the rest): wait up to 60 s until
    ``settled()`` names an outcome ("worker exited" if the worker dies first); returns
    the outcome and the worker's output."""
    with own_redis(port):
        worker = Worker(
            env={"EVIDENTIA_VAR_DIR": str(tmp_path), "VALIDATOR_MODEL": "offline:judge", **env},
            queue=queue,
            log_path=tmp_path / "worker.log",
        )
        try:
            outcome = wait_for(
                lambda: settled() or (None if worker.alive else "worker exited"),
                timeout=60,
                interval=0.3,
            )
        finally:
            worker.stop()
    return outcome, worker.output()


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_task_created_while_the_broker_is_down_settles_once_it_is_back(
    requester: Any, tmp_path: Path, settings: Any
) -> None:
    """Issue 17 end to end: POST /tasks while the broker is down answers 201; when the
    broker comes back, a worker starting against it publishes the waiting job (the relay
    at worker start), runs the attempt and the validation, and the task settles."""
    db_url = database_url()
    if db_url is None:
        pytest.skip("TEST_DATABASE_NAME names an in-memory SQLite database: no worker can share it")
    KnowledgeDocumentFactory(
        title="Training Budget",
        body="Everyone can learn. The annual training budget per employee is 1,750 EUR.",
    )
    queue = f"outbox-{uuid.uuid4().hex[:12]}"
    port = _free_port()
    broker = f"redis://127.0.0.1:{port}/0"
    # The jobs this process publishes go to the worker's own queues.
    settings.CELERY_QUEUE_PREFIX = f"{queue}."
    configure(celery_app)
    try:
        with project_broker(broker):
            response = _create(
                _client(requester),
                {"request": "What is the annual training budget per employee?"},
            )
        assert response.status_code == 201, response.content
        task_id = response.json()["id"]
        assert OutboxJob.objects.get(task_ref=task_id).published_at is None

        def settled() -> str | None:
            status = Task.objects.get(pk=task_id).status
            return status if status not in (S.OPEN, S.RUNNING, S.VALIDATING) else None

        started = time.monotonic()
        outcome, output = _worker_once_broker_is_back(
            port=port,
            queue=queue,
            tmp_path=tmp_path,
            env={
                "DATABASE_URL": db_url,
                "CELERY_BROKER_URL": broker,
                "AGENT_MODEL": "offline:researcher",
            },
            settled=settled,
        )
    finally:
        settings.CELERY_QUEUE_PREFIX = ""
        configure(celery_app)
    assert outcome and outcome != "worker exited", output[-4000:]
    assert Task.objects.get(pk=task_id).attempt_count == 1
    assert OutboxJob.objects.get(task_ref=task_id, name="tasks_app.run_attempt").published_at
    print(f"\noutbox e2e: settled as {outcome} {time.monotonic() - started:.1f}s after restart")


@pytest.mark.django_db
def test_same_idempotency_key_on_feedback_records_one_revision(
    requester: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Issue 17: a revise sent twice with one Idempotency-Key stores one feedback, moves
    the task once and queues one attempt job; the retry gets the first response."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    client = _client(requester)
    key = str(uuid.uuid4())
    url = f"/api/v1/tasks/{task.pk}/feedback"
    body = {"action": "revise", "comment": "Cite the handbook."}
    with django_capture_on_commit_callbacks(execute=True):
        responses = [
            client.post(url, body, content_type=JSON, headers={"Idempotency-Key": key})
            for _ in range(2)
        ]
    assert [r.status_code for r in responses] == [200, 200]
    assert responses[1].json() == responses[0].json()
    assert responses[1].headers.get("Idempotent-Replayed") == "true"
    assert Feedback.objects.filter(task=task).count() == 1
    assert TaskEvent.objects.filter(task=task, to_status=S.NEEDS_REVISION).count() == 1
    assert OutboxJob.objects.filter(task_ref=task.pk).count() == 1


@pytest.mark.django_db
def test_same_idempotency_key_on_replay_queues_one_job(
    operator: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Issue 17: a replay sent twice with one Idempotency-Key queues one job (202 both
    times, the second marked as replayed)."""
    snapshot = ValidationSnapshotFactory(task=TaskFactory(status=S.NEEDS_REVIEW))
    client = _client(operator)
    key = str(uuid.uuid4())
    url = f"/api/v1/validations/{snapshot.pk}/replay"
    with django_capture_on_commit_callbacks(execute=False):
        responses = [
            client.post(url, {}, content_type=JSON, headers={"Idempotency-Key": key})
            for _ in range(2)
        ]
    assert [r.status_code for r in responses] == [202, 202], responses[0].content
    assert responses[1].json() == responses[0].json()
    assert responses[1].headers.get("Idempotent-Replayed") == "true"
    rows = list(OutboxJob.objects.all())
    queued = ReplayRequest.objects.get()
    assert queued.original_id == snapshot.pk
    assert [(r.name, r.args) for r in rows] == [("evidence_app.replay_validation", [queued.pk])]


OTLP_ENDPOINT = "/api/v1/otlp/v1/traces"
PROTOBUF = "application/x-protobuf"


@pytest.mark.django_db
def test_otlp_export_while_the_broker_is_down_answers_200_and_its_job_waits(
    requester: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
    _isolated_broker: Path,
) -> None:
    """Issue 17: an OTLP export whose spans committed answers 200 with the broker
    unreachable (no 500 after the commit); the spans are stored once and the trace's
    assembly job waits in the outbox with its quiet period as a not-before time. When
    the broker is back the relay publishes it with that time as the job's ETA."""
    settings.OTLP_TRACE_QUIET_SECONDS = 30
    spans = list(otlp_client.finished_spans())
    client = _client(requester)
    with (
        project_broker(f"redis://127.0.0.1:{_free_port()}/0"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = client.post(
            OTLP_ENDPOINT, otlp_client.protobuf_body(spans), content_type=PROTOBUF
        )
    assert response.status_code == 200, response.content
    assert OtlpSpan.objects.count() == len(spans)
    trace = OtlpTrace.objects.get()
    assert trace.state == "collecting"
    row = OutboxJob.objects.get()
    assert (row.name, row.args) == ("tasks_app.otlp_assemble_traces", [[trace.pk]])
    assert row.published_at is None and row.attempts == 1 and row.last_error
    assert row.not_before is not None
    assert 25 < (row.not_before - row.created_at).total_seconds() <= 30

    assert outbox_relay() == 1
    row.refresh_from_db()
    assert row.published_at is not None
    (message,) = [
        json.loads(p.read_text())
        for p in (_isolated_broker / "queue").iterdir()
        if row.job_id in p.read_text()
    ]
    assert message["headers"]["eta"] == row.not_before.isoformat()


@pytest.mark.django_db
def test_a_status_change_with_webhooks_while_the_broker_is_down_answers_200(
    requester: Any,
    settings: Any,
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Issue 17: a request whose transition writes webhook deliveries answers normally
    with the broker unreachable: the deliveries are stored pending (the sweeper sends
    them) and the attempt job waits in the outbox; nothing escapes after the commit."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    webhook_endpoint_create(owner=requester, url="http://127.0.0.1:9/hooks")
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    client = _client(requester)
    with (
        project_broker(f"redis://127.0.0.1:{_free_port()}/0"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        response = client.post(
            f"/api/v1/tasks/{task.pk}/feedback",
            {"action": "revise", "comment": "Cite the handbook."},
            content_type=JSON,
        )
    assert response.status_code == 200, response.content
    assert Task.objects.get(pk=task.pk).status == S.NEEDS_REVISION
    assert list(WebhookDelivery.objects.values_list("event_type", "status")) == [
        ("task.needs_revision", "pending")
    ]
    assert OutboxJob.objects.get(task_ref=task.pk).published_at is None


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_otlp_trace_exported_while_the_broker_is_down_is_assembled_once_it_is_back(
    requester: Any, tmp_path: Path, settings: Any
) -> None:
    """Issue 17 end to end for OTLP: an export while the broker is down answers 200;
    when the broker comes back a worker starting against it publishes the waiting
    assembly job (the relay at worker start), which turns the trace into an attempt
    after its quiet period and gets it validated."""
    db_url = database_url()
    if db_url is None:
        pytest.skip("TEST_DATABASE_NAME names an in-memory SQLite database: no worker can share it")
    settings.OTLP_TRACE_QUIET_SECONDS = 1
    spans = list(otlp_client.finished_spans())
    queue = f"outbox-{uuid.uuid4().hex[:12]}"
    port = _free_port()
    broker = f"redis://127.0.0.1:{port}/0"
    settings.CELERY_QUEUE_PREFIX = f"{queue}."
    configure(celery_app)
    try:
        with project_broker(broker):
            response = _client(requester).post(
                OTLP_ENDPOINT, otlp_client.protobuf_body(spans), content_type=PROTOBUF
            )
        assert response.status_code == 200, response.content
        row = OutboxJob.objects.get(name="tasks_app.otlp_assemble_traces")
        assert row.published_at is None and row.not_before is not None

        def settled() -> str | None:
            task = Task.objects.filter(otlp_traces__isnull=False).first()
            if task is not None and task.status not in (S.OPEN, S.VALIDATING):
                return str(task.status)
            return None

        outcome, output = _worker_once_broker_is_back(
            port=port,
            queue=queue,
            tmp_path=tmp_path,
            env={
                "DATABASE_URL": db_url,
                "CELERY_BROKER_URL": broker,
                "OTLP_TRACE_QUIET_SECONDS": "1",
            },
            settled=settled,
        )
    finally:
        settings.CELERY_QUEUE_PREFIX = ""
        configure(celery_app)
    assert outcome == S.AWAITING_FEEDBACK, output[-4000:]
    assert OtlpTrace.objects.get().state == "submitted"
    assert OtlpSpan.objects.count() == len(spans)
    row.refresh_from_db()
    assert row.published_at is not None
