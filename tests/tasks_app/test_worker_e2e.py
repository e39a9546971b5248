"""End to end with a real Celery worker process and a real broker (X1, X7).

The broker is Redis at ``REDIS_URL`` (or ``CELERY_BROKER_URL`` when it is a redis URL)
when set, as in CI; otherwise kombu's filesystem broker in a temporary folder. The
worker runs against the pytest test database.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tasks_app.models import Run, Task, TaskEvent
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import KnowledgeDocumentFactory, TaskFactory
from tests.workers import Worker, broker_env, database_url, redis_url, sender_app, wait_for

pytestmark = [pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]

# A queue of its own: in CI the broker is shared with the rest of the suite, whose
# committed transactions may have queued jobs this worker must not pick up.
QUEUE = f"e2e-{uuid.uuid4().hex[:12]}"


def test_real_worker_runs_a_task_to_validating(tmp_path: Path) -> None:
    """X1/X7: a job sent through a real broker is executed by a separate worker process
    on the offline researcher; the task reaches validating with a cited answer."""
    db_url = database_url()
    if db_url is None:
        pytest.skip("TEST_DATABASE_NAME names an in-memory SQLite database: no worker can share it")
    KnowledgeDocumentFactory(
        title="Training Budget",
        body="Everyone can learn. The annual training budget per employee is 1,750 EUR.",
    )
    task = TaskFactory(request="What is the annual training budget per employee?")

    redis = redis_url()
    folder = tmp_path / "broker"
    env = {
        "DATABASE_URL": db_url,
        "AGENT_MODEL": "offline:researcher",
        "VALIDATOR_MODEL": "offline:judge",
        "EVIDENTIA_VAR_DIR": str(tmp_path),
        **broker_env(redis=redis, folder=folder),
    }
    sender = sender_app(name="e2e-sender", redis=redis, folder=folder)
    log_path = tmp_path / "worker.log"
    started = time.monotonic()
    worker = Worker(env=env, queue=QUEUE, log_path=log_path)
    try:
        sender.send_task("tasks_app.run_attempt", args=[task.pk], queue=QUEUE)

        def validating_or_died() -> str | None:
            if TaskEvent.objects.filter(task_id=task.pk, to_status=S.VALIDATING).exists():
                return "validating"
            return None if worker.alive else "worker exited"

        reached = wait_for(validating_or_died, timeout=25, interval=0.2) == "validating"
        elapsed = time.monotonic() - started
    finally:
        worker.stop()
        sender.close()
    output = worker.output()
    assert reached, f"task did not reach validating within 25 s; worker log:\n{output[-4000:]}"
    task = Task.objects.get(pk=task.pk)
    assert task.attempt_count == 1
    assert "1,750 EUR" in task.final_answer and "Training Budget" in task.final_answer
    run = Run.objects.get(task=task)
    assert run.model_name == "offline:researcher" and run.tool_evidence.count() >= 2
    broker = redis or "filesystem"
    print(f"\ne2e: worker ran the attempt to validating in {elapsed:.1f}s (broker: {broker})")
