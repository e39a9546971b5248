"""Issue 18: /health, /ready, manage.py check_health, /metrics and JSON logs."""

from __future__ import annotations

import io
import json
import logging
import socket
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from evidence_app.validation.services import validation_run
from project.logs import ContextFilter, JsonFormatter, bound
from tasks_app.models import ServiceHeartbeat
from tasks_app.runtime.runs import heartbeat_record
from tests.evidence_app.conftest import scripted_judge  # noqa: F401 - a fixture
from tests.evidence_app.validation_helpers import validating_task, verdict
from tests.factories import UserFactory
from tests.workers import redis_url

pytestmark = pytest.mark.django_db


def unused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def live_processes(settings: Any) -> None:
    """Heartbeats as a worker on every queue and beat would write them."""
    settings.WORKER_QUEUES = ["celery", "validation"]
    heartbeat_record(kind="worker", name="w1@host", queues=["celery"])
    heartbeat_record(kind="worker", name="w2@host", queues=["validation", "other"])
    heartbeat_record(kind="beat", name="beat", queues=[])


@pytest.fixture
def redis_broker(settings: Any) -> str:
    url = redis_url()
    if url is None:
        pytest.skip("needs a Redis broker (REDIS_URL or CELERY_BROKER_URL)")
    settings.CELERY_BROKER_URL = url
    return url


def ready(client: Client) -> tuple[int, dict[str, Any]]:
    """/ready as a staff user sees it (the checks and their details)."""
    staff, _ = get_user_model().objects.get_or_create(
        username="ready-staff", defaults={"is_staff": True}
    )
    client.force_login(staff)
    response = client.get("/ready")
    return response.status_code, json.loads(response.content)


def test_health_answers_without_touching_dependencies(client: Client, settings: Any) -> None:
    """Issue 18: liveness has no dependencies (a dead broker does not matter) and no
    host-name check (probes call with an IP)."""
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{unused_port()}/0"
    response = client.get("/health", HTTP_HOST="10.1.2.3")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


def test_ready_is_503_naming_the_broker_when_redis_is_unreachable_and_200_when_back(
    client: Client, settings: Any, live_processes: None, redis_broker: str
) -> None:
    """Issue 18: /ready names the failing check (broker) with 503, and is 200 again
    once the broker is reachable."""
    status, body = ready(client)
    assert status == 200, body
    assert [c["name"] for c in body["checks"]] == [
        "database",
        "migrations",
        "broker",
        "workers",
        "beat",
    ]
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{unused_port()}/0"
    status, body = ready(client)
    assert status == 503
    assert body["failing"] == ["broker"]
    broker = next(c for c in body["checks"] if c["name"] == "broker")
    assert "Connection refused" in broker["detail"] or "Error" in broker["detail"]
    settings.CELERY_BROKER_URL = redis_broker
    status, body = ready(client)
    assert status == 200 and body["failing"] == []


def test_ready_names_a_queue_without_a_live_worker_and_a_silent_beat(
    client: Client, settings: Any, live_processes: None
) -> None:
    """Issue 18: at least one worker per queue of WORKER_QUEUES seen recently; beat's
    last run recent."""
    settings.WORKER_QUEUES = ["celery", "validation", "webhooks"]
    old = timezone.now() - timedelta(seconds=settings.OPS_BEAT_MAX_AGE_SECONDS + 5)
    ServiceHeartbeat.objects.filter(kind="beat").update(seen_at=old)
    stale = timezone.now() - timedelta(seconds=settings.OPS_WORKER_MAX_AGE_SECONDS + 5)
    ServiceHeartbeat.objects.filter(name="w1@host").update(seen_at=stale)
    status, body = ready(client)
    assert status == 503
    assert body["failing"] == ["workers", "beat"]
    workers = next(c for c in body["checks"] if c["name"] == "workers")
    assert "celery, webhooks" in workers["detail"]
    settings.OPS_REQUIRE_BEAT = False
    settings.WORKER_QUEUES = ["validation"]
    assert ready(client)[0] == 200


def test_check_health_command_exits_1_and_names_the_failure(
    settings: Any, live_processes: None
) -> None:
    """Issue 18: the same checks for shell use; exit status 1 when one fails."""
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{unused_port()}/0"
    out, err = io.StringIO(), io.StringIO()
    with pytest.raises(SystemExit) as exit_info:
        call_command("check_health", stdout=out, stderr=err)
    assert exit_info.value.code == 1
    assert "FAIL broker" in out.getvalue() and "not ready: broker" in err.getvalue()
    settings.CELERY_BROKER_FOLDER.joinpath("queue").mkdir(parents=True, exist_ok=True)
    settings.CELERY_BROKER_URL = "filesystem://"
    out = io.StringIO()
    call_command("check_health", "--json", stdout=out)
    assert json.loads(out.getvalue())["status"] == "ok"


def metric_samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_metrics_are_refused_outside_the_allowed_networks_without_the_token(
    client: Client, settings: Any
) -> None:
    """Issue 18: /metrics is protected by a token or a network setting."""
    settings.METRICS_TOKEN = "s3cret-token"
    outside = client.get("/metrics", REMOTE_ADDR="203.0.113.9")
    assert outside.status_code == 403
    wrong = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer nope")
    assert wrong.status_code == 403
    ok = client.get("/metrics", REMOTE_ADDR="203.0.113.9", HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert ok.status_code == 200
    settings.METRICS_TOKEN = ""
    assert client.get("/metrics", REMOTE_ADDR="127.0.0.1").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="203.0.113.9").status_code == 403


@pytest.mark.finding(24, 10)
def test_metrics_with_a_token_set_refuse_loopback_without_the_token(
    client: Client, settings: Any
) -> None:
    """Issue item 10: with METRICS_TOKEN set only the token opens /metrics; a proxy on the
    same host (a loopback peer) does not make it public."""
    settings.METRICS_TOKEN = "s3cret-token"
    for peer in ("127.0.0.1", "::1"):
        response = client.get("/metrics", REMOTE_ADDR=peer)
        assert response.status_code in {401, 403}, peer
        wrong = client.get("/metrics", REMOTE_ADDR=peer, HTTP_AUTHORIZATION="Bearer nope")
        assert wrong.status_code in {401, 403}, peer
    ok = client.get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert ok.status_code == 200


@pytest.mark.finding(24, 10)
def test_ready_tells_an_anonymous_caller_only_ready_or_not(
    client: Client, settings: Any, live_processes: None
) -> None:
    """Issue item 10: no broker path, worker or queue counts or error lines for a caller
    without credentials; only the status (200/503)."""
    settings.METRICS_TOKEN = "s3cret-token"
    response = client.get("/ready")
    assert response.status_code == 200
    assert json.loads(response.content) == {"status": "ready"}
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{unused_port()}/0"
    response = client.get("/ready")
    assert response.status_code == 503
    assert json.loads(response.content) == {"status": "not ready"}
    # A logged-in user who is not staff sees no more; nor does a wrong token.
    client.force_login(UserFactory(username="plain-requester"))
    assert json.loads(client.get("/ready").content) == {"status": "not ready"}
    wrong = client.get("/ready", HTTP_AUTHORIZATION="Bearer nope")
    assert json.loads(wrong.content) == {"status": "not ready"}


@pytest.mark.finding(24, 10)
def test_ready_shows_the_checks_to_a_staff_user_and_to_the_metrics_token(
    client: Client, settings: Any, live_processes: None
) -> None:
    """Issue item 10: the details stay for a staff user's session and the metrics token."""
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{unused_port()}/0"
    client.force_login(UserFactory(username="staff-reader", is_staff=True))
    response = client.get("/ready")
    assert response.status_code == 503
    body = json.loads(response.content)
    assert body["failing"] == ["broker"]
    assert [c["name"] for c in body["checks"]][:3] == ["database", "migrations", "broker"]
    settings.METRICS_TOKEN = "s3cret-token"
    token = Client().get("/ready", HTTP_AUTHORIZATION="Bearer s3cret-token")
    assert token.status_code == 503 and json.loads(token.content)["failing"] == ["broker"]


def test_metrics_parse_and_count_verdicts_retries_tokens_and_cost(
    client: Client,
    settings: Any,
    scripted_judge: Any,  # noqa: F811
) -> None:
    """Issue 18: the exposition parses with prometheus_client.parser; verdicts, schema
    retries and unpriced requests are counted from the stored rows."""
    settings.METRICS_SETTLE_SECONDS = 0
    before = metric_samples(client.get("/metrics").content.decode())
    scripted_judge.replies = ["not json", verdict("accepted")]
    task = validating_task()
    validation_run(task_id=task.pk, attempt_index=1)
    after = metric_samples(client.get("/metrics").content.decode())
    model = (("model", "test:judge"),)

    def delta(name: str, labels: tuple[tuple[str, str], ...]) -> float:
        return after.get((name, labels), 0) - before.get((name, labels), 0)

    verdict_labels = (("kind", "validation"), ("model", "test:judge"), ("status", "accepted"))
    assert delta("evidentia_validations_total", verdict_labels) == 1
    assert delta("evidentia_validation_schema_retries_total", model) == 1
    assert delta("evidentia_validation_latency_seconds_count", model) == 1
    assert (
        delta("evidentia_model_unpriced_total", (("model", "test:judge"), ("role", "validator")))
        == 1
    )
    edge = (("from_status", "validating"), ("to_status", "awaiting_feedback"))
    assert delta("evidentia_task_transitions_total", edge) == 1
    assert after[("evidentia_tasks", (("status", "awaiting_feedback"),))] >= 1


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield stream
    finally:
        root.removeHandler(handler)


def test_json_log_lines_carry_request_and_task_ids(
    json_log: io.StringIO, client: Client, operator: Any
) -> None:
    """Issue 18: LOG_FORMAT=json lines parse; a task page request's lines carry the
    request id (echoed in X-Request-ID) and the task id from the URL."""
    task = validating_task()
    client.force_login(operator)
    response = client.get(f"/tasks/{task.pk}/", HTTP_X_REQUEST_ID="req-abc-123")
    assert response["X-Request-ID"] == "req-abc-123"
    lines = [json.loads(line) for line in json_log.getvalue().splitlines() if line.strip()]
    request_lines = [line for line in lines if line.get("request_id") == "req-abc-123"]
    assert request_lines, lines
    access = request_lines[-1]
    assert access["task_id"] == task.pk and access["status"] == response.status_code
    assert access["logger"] == "evidentia.request" and "time" in access
    # A hostile request id is replaced, never logged verbatim.
    response = client.get("/", HTTP_X_REQUEST_ID='x"\n{"forged": 1}')
    assert response["X-Request-ID"] != 'x"\n{"forged": 1}'


def test_bound_ids_are_restored_after_the_block() -> None:
    """Issue 18: context binding does not leak from one job into the next."""
    stream = io.StringIO()
    logger = logging.getLogger("tests.ops.bound")
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter())
    handler.setFormatter(JsonFormatter())
    logger.addHandler(handler)
    try:
        with bound(request_id="outer"):
            with bound(task_id=7, job_id="j1"):
                logger.warning("inside")
            logger.warning("outside")
    finally:
        logger.removeHandler(handler)
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    assert inside["task_id"] == 7 and inside["job_id"] == "j1"
    assert "task_id" not in outside and "job_id" not in outside
    assert outside["request_id"] == "outer" and "request_id" not in inside


@pytest.mark.django_db
def test_no_task_id_outlives_the_job_or_request_that_bound_it(
    json_log: io.StringIO, client: Client, requester: Any, settings: Any
) -> None:
    """Issue 18 (and 17): every binding of log ids is scoped. A line logged in the same
    thread after an attempt job finished (called as a plain function, or applied
    through Celery with its prerun/postrun signals), after ``task_create`` outside any
    request or job, and after a request carries no task id or attempt; the lines
    inside them do."""
    from tasks_app.accounts.auth import api_token_create
    from tasks_app.jobs import run_attempt_job
    from tasks_app.workflow.services import task_create
    from tests.factories import KnowledgeDocumentFactory, TaskFactory

    settings.AGENT_MODEL = "offline:researcher"
    KnowledgeDocumentFactory(title="Training Budget", body="The training budget is 1,750 EUR.")
    logger = logging.getLogger("tests.ops.leak")
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.INFO)
    _, raw = api_token_create(user=requester, name="logs")
    try:
        direct = TaskFactory(owner=requester, request="What is the training budget?")
        run_attempt_job(direct.pk)
        logger.warning("after the job function")
        applied = TaskFactory(owner=requester, request="What is the training budget?")
        run_attempt_job.apply(args=[applied.pk])
        logger.warning("after the applied job")
        created = task_create(owner=requester, request="Created by a script", enqueue=False)
        logger.warning("after task_create")
        response = client.post(
            "/api/v1/tasks",
            {"request": "Created by a request"},
            content_type="application/json",
            headers={"Authorization": f"Bearer {raw}"},
        )
        assert response.status_code == 201
        logger.warning("after the request")
    finally:
        root.setLevel(level)
    lines = [json.loads(line) for line in json_log.getvalue().splitlines() if line.strip()]
    by_message = {line["message"]: line for line in lines}
    for message in (
        "after the job function",
        "after the applied job",
        "after task_create",
        "after the request",
    ):
        line = by_message[message]
        assert "task_id" not in line and "attempt" not in line, line
    # Inside, the ids were there.
    for task in (direct, applied):
        moved = by_message[f"task {task.pk}: running -> validating"]
        assert (moved["task_id"], moved["attempt"]) == (task.pk, 1), moved
    assert by_message[f"task {created.pk} created"]["task_id"] == created.pk
    made = response.json()["id"]
    assert by_message[f"task {made} created"]["task_id"] == made


# --- A console worth reading: periodic jobs are quiet at INFO unless they did something ---

_JOB_LOGGERS = ("evidentia.job", "celery.app.trace", "celery.worker.strategy", "celery.beat")


def _job_lines(caplog: pytest.LogCaptureFixture, level: int = logging.INFO) -> list[str]:
    return [
        f"{r.levelname} {r.name}: {r.getMessage()}"
        for r in caplog.records
        if r.levelno >= level and r.name.startswith(_JOB_LOGGERS)
    ]


def _celery_announces(name: str) -> None:
    """What beat and the worker log around one job: "Sending due task", "received"."""
    from celery.app import trace

    context = {"id": "job-1", "name": name, "args": "()", "kwargs": "{}", "eta": None}
    logging.getLogger("celery.beat").info("Scheduler: Sending due task %s (%s)", "entry", name)
    logging.getLogger("celery.worker.strategy").info(
        trace.LOG_RECEIVED, context, extra={"data": context}
    )


def test_periodic_jobs_that_found_nothing_to_do_log_nothing_at_info(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every job of the beat schedule, run with nothing to do: no INFO line from our job
    logging nor Celery's ("Sending due task", "received", "succeeded"); at DEBUG they
    are all still there."""
    import project.heartbeats  # noqa: F401 - registers the jobs (autodiscovery is lazy)
    import tasks_app.jobs  # noqa: F401
    from project.celery import app

    schedule = app.conf.beat_schedule
    with caplog.at_level(logging.INFO):
        for entry in schedule.values():
            _celery_announces(entry["task"])
            app.tasks[entry["task"]].apply(args=entry.get("args", ()))
    assert _job_lines(caplog) == []
    caplog.clear()
    with caplog.at_level(logging.DEBUG):
        _celery_announces("tasks_app.relay_outbox")
        app.tasks["tasks_app.relay_outbox"].apply()
    debug = "\n".join(_job_lines(caplog, logging.DEBUG))
    assert _job_lines(caplog) == []
    for line in (
        "DEBUG celery.beat: Scheduler: Sending due task entry (tasks_app.relay_outbox)",
        "DEBUG celery.worker.strategy: Task tasks_app.relay_outbox[job-1] received",
        "DEBUG evidentia.job: job started",
        "succeeded in",
        "DEBUG evidentia.job: job finished (SUCCESS): nothing to do",
    ):
        assert line in debug, debug


def test_a_periodic_job_that_did_something_logs_one_info_line_saying_what(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import types

    from tasks_app import jobs

    monkeypatch.setattr(jobs, "outbox_relay", lambda: 3)
    monkeypatch.setattr(
        jobs,
        "attempt_reap",
        lambda: types.SimpleNamespace(requeued=[7], failed=[], reenqueued=[], revalidated=[8]),
    )
    with caplog.at_level(logging.INFO):
        _celery_announces("tasks_app.relay_outbox")
        jobs.relay_outbox_job.apply()
        jobs.reap_attempts_job.apply()
    assert _job_lines(caplog) == [
        "INFO evidentia.job: job finished (SUCCESS): 3",
        "INFO evidentia.job: job finished (SUCCESS): requeued=[7] revalidated=[8]",
    ]


def test_a_failing_periodic_job_keeps_its_error_and_other_jobs_keep_their_info_lines(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tasks_app import jobs

    def broken() -> int:
        raise RuntimeError("outbox table is gone")

    monkeypatch.setattr(jobs, "outbox_relay", broken)
    with caplog.at_level(logging.INFO):
        jobs.relay_outbox_job.apply()
        _celery_announces("tasks_app.run_attempt")
        jobs.run_attempt_job.apply(args=[987654])  # no such task: "duplicate"
    lines = _job_lines(caplog)
    assert any(
        line.startswith("ERROR celery.app.trace: Task tasks_app.relay_outbox[")
        and "raised unexpected: RuntimeError('outbox table is gone')" in line
        for line in lines
    ), lines
    assert "INFO evidentia.job: job finished (FAILURE)" in lines
    assert "INFO celery.beat: Scheduler: Sending due task entry (tasks_app.run_attempt)" in lines
    assert "INFO celery.worker.strategy: Task tasks_app.run_attempt[job-1] received" in lines
    assert lines.count("INFO evidentia.job: job started") == 1  # the attempt job's
    assert any(
        line.startswith("INFO celery.app.trace: Task tasks_app.run_attempt[")
        and "succeeded in" in line
        for line in lines
    ), lines
    assert "INFO evidentia.job: job finished (SUCCESS)" in lines
