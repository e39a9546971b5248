"""Issue 18 through a real Celery worker: /metrics counters move when a task runs, the
worker's heartbeat makes its queue ready, and JSON log lines carry the task id (and the
web request's id) from the API request into the jobs."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from project.celery import app as celery_app
from project.celery import configure
from tasks_app.accounts.auth import api_token_create
from tasks_app.knowledge.importer import import_folder
from tasks_app.models import Task
from tests.factories import UserFactory
from tests.workers import Worker, broker_env, database_url, wait_for

pytestmark = [pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]

QUEUE = f"ops-e2e-{uuid.uuid4().hex[:12]}"
SETTLED = {"awaiting_feedback", "needs_review", "failed"}


def samples(client: Client) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = client.get("/metrics")
    assert response.status_code == 200
    found = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


@pytest.fixture
def jobs_to_test_queue(settings: Any) -> Iterator[None]:
    """Jobs this test's web request sends go to the worker's own queues (its default
    queue and its prefixed purpose queues, tests/workers.py). ``configure`` re-applies
    the routes through ``conf.update``, which also refreshes Celery's cached router
    (assigning ``conf.task_routes`` alone does not)."""
    previous_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = QUEUE
    settings.CELERY_QUEUE_PREFIX = f"{QUEUE}."
    configure(celery_app)
    yield
    celery_app.conf.task_default_queue = previous_queue
    settings.CELERY_QUEUE_PREFIX = ""
    configure(celery_app)


def test_task_through_a_real_worker_moves_counters_and_logs_carry_its_ids(
    tmp_path: Path, settings: Any, jobs_to_test_queue: None, _isolated_broker: Path
) -> None:
    """Issue 18: counters move (transitions, verdicts, agent requests) as a task runs
    through a real worker; /ready's worker check passes for the worker's queue; the
    worker's JSON log lines name the task and the request id of the API call."""
    db_url = database_url()
    if db_url is None:
        pytest.skip("TEST_DATABASE_NAME names an in-memory SQLite database: no worker can share it")
    settings.WORKER_QUEUES = [QUEUE]
    settings.METRICS_SETTLE_SECONDS = 0
    settings.OPS_REQUIRE_BEAT = False
    import_folder(settings.BASE_DIR / "demo" / "handbook")
    user = UserFactory(username="ops-e2e")
    _, raw = api_token_create(user=user, name="ops")
    api = Client(headers={"Authorization": f"Bearer {raw}"})
    web = Client()
    # /ready's checks are shown to staff only (anonymous callers get ready / not ready).
    web.force_login(UserFactory(username="ops-e2e-staff", is_staff=True))
    before = samples(web)

    env = {
        "DATABASE_URL": db_url,
        "AGENT_MODEL": "offline:researcher",
        "VALIDATOR_MODEL": "offline:judge",
        "EVIDENTIA_VAR_DIR": str(tmp_path),
        "LOG_FORMAT": "json",
        "WORKER_QUEUES": QUEUE,
        "OPS_HEARTBEAT_SECONDS": "1",
        # The broker the app under test sends to (tests/conftest.py): the API request's
        # job must reach the worker from inside the request, carrying its request id.
        **broker_env(redis=None, folder=_isolated_broker),
    }
    worker = Worker(env=env, queue=QUEUE, log_path=tmp_path / "worker.log")
    try:
        assert wait_for(
            lambda: web.get("/ready").json()["checks"][3]["ok"] or not worker.alive, timeout=60
        ), worker.output()[-3000:]
        response = api.post(
            "/api/v1/tasks",
            data=json.dumps({"request": "What is the annual training budget per employee?"}),
            content_type="application/json",
            headers={"X-Request-ID": "req-ops-e2e"},
        )
        assert response.status_code == 201, response.content
        task_id = response.json()["id"]
        assert wait_for(
            lambda: Task.objects.get(pk=task_id).status in SETTLED or not worker.alive,
            timeout=90,
            interval=0.3,
        )
        after = samples(web)
    finally:
        worker.stop()
    output = worker.output()
    task = Task.objects.get(pk=task_id)
    assert task.status == "awaiting_feedback", output[-3000:]

    def delta(name: str, **labels: str) -> float:
        key = (name, tuple(sorted(labels.items())))
        return after.get(key, 0) - before.get(key, 0)

    assert delta("evidentia_task_transitions_total", from_status="open", to_status="running") >= 1
    assert (
        delta(
            "evidentia_task_transitions_total",
            from_status="validating",
            to_status="awaiting_feedback",
        )
        >= 1
    )
    assert (
        delta(
            "evidentia_validations_total",
            kind="validation",
            status="accepted",
            model="offline:judge",
        )
        >= 1
    )
    assert (
        delta(
            "evidentia_model_request_latency_seconds_count",
            role="agent",
            model="offline:researcher",
        )
        >= 1
    )
    assert delta("evidentia_model_unpriced_total", role="agent", model="offline:researcher") >= 1
    assert after[("evidentia_queue_consumers", (("queue", QUEUE),))] == 1

    lines = []
    for line in output.splitlines():
        if line.startswith("{"):
            lines.append(json.loads(line))  # every JSON-looking line parses
    mine = [line for line in lines if line.get("task_id") == task_id]
    jobs = {line.get("job") for line in mine}
    assert {"tasks_app.run_attempt", "evidence_app.validate_attempt"} <= jobs, jobs
    assert all(line["request_id"] == "req-ops-e2e" for line in mine if "job" in line), mine
    assert any(line.get("attempt") == 1 for line in mine)
    assert any(line.get("event") == "transition" for line in mine)
