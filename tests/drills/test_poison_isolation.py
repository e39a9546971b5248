"""Drill: one account's poison cannot delay another's work (issue 34 item 1, A5).

Account A exports poisoned OTLP traces (three of each kind: a string attribute holding
JSON nested 5,000 levels deep, NaN inside such a string, a lone surrogate escape inside
one, and a token count over the attempt schema's bound, the one found while writing this
drill, which no bound turns into an attempt), first, so they are the oldest due work.
Account B meanwhile exports a complete trace, a root-less trace (its root never arrives:
taken after ``OTLP_TRACE_MAX_WAIT_SECONDS``) and submits an attempt through the attempts
API. Every OTLP assembly job is then deleted from the outbox, as if the broker lost them:
only the maintenance sweep can assemble the traces, the case that stalled before.

A real Celery worker with beat (the sweep every 5 s, the outbox relay, validation on the
offline judge) does the work. B's three pieces of work must finish (the traces become
attempts, every task leaves ``validating``) within their deadlines; A's bounded
poisons become attempts with the poisoned strings kept as text, and the failing ones are
tried ``OTLP_TRACE_ASSEMBLY_ATTEMPTS`` times and marked unusable with the reason; no
sweep raises.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tasks_app.accounts.auth import api_token_create
from tasks_app.intake.otlp.ingest import OTLP_ASSEMBLE_JOB
from tasks_app.models import OtlpTrace, Task
from tasks_app.workflow import services
from tasks_app.workflow.models import OutboxJob
from tasks_app.workflow.states import TaskStatus as S
from tests.drills.support import report
from tests.tasks_app.otlp_poison import (
    ENDPOINT,
    FAILS_ASSEMBLY,
    POISON,
    agent_trace,
    new_trace_id,
    poison_trace,
)
from tests.workers import Worker, broker_env, database_url, redis_url, wait_for

pytestmark = [
    pytest.mark.drill,
    pytest.mark.celery_worker,
    pytest.mark.finding(34, 1),
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(240),
]

QUEUE = f"poison-{uuid.uuid4().hex[:12]}"
MAX_WAIT_SECONDS = 8
# B's deadlines from the moment the worker is up: two sweeps for the complete trace and
# the attempt, the root-less trace's wait plus two sweeps, each with its validation.
COMPLETE_DEADLINE = 25
ROOTLESS_DEADLINE = MAX_WAIT_SECONDS + 25
POISON_COPIES = 3


def _client(user: Any) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=user, name='drill')[1]}")


def _export(client: Client, body: dict[str, Any]) -> None:
    response = client.post(ENDPOINT, json.dumps(body), content_type="application/json")
    assert response.status_code == 200, response.content


def _settled(task_id: int | None) -> bool:
    if task_id is None:
        return False
    return Task.objects.filter(pk=task_id).exclude(status__in=[S.OPEN, S.VALIDATING]).exists()


def test_poison_from_one_account_never_delays_another(
    requester: Any, other_requester: Any, tmp_path: Path
) -> None:
    db_url = database_url()
    if db_url is None:
        pytest.skip("TEST_DATABASE_NAME names an in-memory SQLite database: no worker can share it")
    alice, bob = _client(requester), _client(other_requester)
    poisoned = {(kind, n): new_trace_id() for kind in POISON for n in range(POISON_COPIES)}
    for (kind, _), trace_id in poisoned.items():
        _export(alice, poison_trace(kind, trace_id))
    complete, rootless = new_trace_id(), new_trace_id()
    _export(bob, agent_trace(complete))
    _export(bob, agent_trace(rootless, with_root=False))
    task = services.task_create(owner=other_requester, request="Leave days?", agent="external")
    attempt = bob.post(
        f"/api/v1/tasks/{task.pk}/attempts",
        json.dumps({"final_answer": "25 days.", "runs": [{"model": "acme:agent"}]}),
        content_type="application/json",
    )
    assert attempt.status_code in (200, 201, 202), attempt.content
    # The broker lost every assembly job: only the sweep can assemble the traces. The
    # other jobs (the attempt's validation) went to this process's own test broker: they
    # are handed to the worker's relay as if the broker had been down when they were sent.
    lost = OutboxJob.objects.filter(name=OTLP_ASSEMBLE_JOB).delete()[0]
    OutboxJob.objects.update(published_at=None)

    redis = redis_url()
    env = {
        "DATABASE_URL": db_url,
        "VALIDATOR_MODEL": "offline:judge",
        "EVIDENTIA_VAR_DIR": str(tmp_path),
        "OTLP_TRACE_QUIET_SECONDS": "1",
        "OTLP_TRACE_MAX_WAIT_SECONDS": str(MAX_WAIT_SECONDS),
        "OTLP_TRACE_RETRY_SECONDS": "1",
        "OTLP_TRACE_ASSEMBLY_ATTEMPTS": "3",
        "OUTBOX_RELAY_INTERVAL_SECONDS": "1",
        **broker_env(redis=redis, folder=tmp_path / "broker"),
    }
    worker = Worker(env=env, queue=QUEUE, log_path=tmp_path / "worker.log", beat=True)
    try:
        up = wait_for(lambda: "ready" in worker.output() or not worker.alive, timeout=60)
        assert up and worker.alive, worker.output()[-4000:]
        started = time.monotonic()
        timings: dict[str, float] = {}

        def bobs_work() -> bool:
            traces = {t.trace_id: t for t in OtlpTrace.objects.filter(owner=other_requester)}
            for name, done in (
                ("complete", _settled(traces[complete].task_id)),
                ("rootless", _settled(traces[rootless].task_id)),
                ("attempt", _settled(task.pk)),
            ):
                if done and name not in timings:
                    timings[name] = time.monotonic() - started
            return len(timings) == 3

        wait_for(bobs_work, timeout=ROOTLESS_DEADLINE + 5, interval=0.5)

        def poison_settled() -> bool:
            return not OtlpTrace.objects.filter(owner=requester, state="collecting").exists()

        wait_for(poison_settled, timeout=30, interval=0.5)
    finally:
        worker.stop()
    output = worker.output()

    assert timings.get("complete", 1e9) <= COMPLETE_DEADLINE, (timings, output[-6000:])
    assert timings.get("attempt", 1e9) <= COMPLETE_DEADLINE, (timings, output[-6000:])
    assert timings.get("rootless", 1e9) <= ROOTLESS_DEADLINE, (timings, output[-6000:])
    states = {
        key: OtlpTrace.objects.get(owner=requester, trace_id=trace_id)
        for key, trace_id in poisoned.items()
    }
    unusable = [t for (kind, _), t in states.items() if kind == FAILS_ASSEMBLY]
    bounded = [t for (kind, _), t in states.items() if kind != FAILS_ASSEMBLY]
    assert {t.state for t in bounded} == {"submitted"}, [(t.state, t.error) for t in bounded]
    assert {(t.state, t.assembly_failures) for t in unusable} == {("unusable", 3)}
    assert all("input_tokens" in t.error for t in unusable)
    assert "tasks_app.otlp_sweep" in output and "succeeded" in output
    assert "otlp_sweep" not in "".join(
        line for line in output.splitlines() if "raised unexpected" in line
    )
    report(
        "Poison isolation",
        f"{len(poisoned)} poisoned traces from A, {lost} assembly jobs lost; B's complete "
        f"trace settled in {timings['complete']:.1f}s, its attempt in "
        f"{timings['attempt']:.1f}s, its root-less trace in {timings['rootless']:.1f}s "
        f"(wait {MAX_WAIT_SECONDS}s); A: {len(bounded)} kept as text, {len(unusable)} "
        "unusable after 3 tries; no sweep raised",
    )
