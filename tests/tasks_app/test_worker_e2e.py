"""End to end with a real Celery worker process and a real broker (SPEC X1, X7).

The broker is Redis at ``REDIS_URL`` (or ``CELERY_BROKER_URL`` when it is a redis URL)
when set, as in CI; otherwise kombu's filesystem broker in a temporary folder. The
worker runs against the pytest test database.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
from celery import Celery
from django.conf import settings
from django.db import connection

from tasks_app.models import Run, Task, TaskEvent
from tasks_app.states import TaskStatus as S
from tests.factories import KnowledgeDocumentFactory, TaskFactory

pytestmark = [pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]

# A queue of its own: in CI the broker is shared with the rest of the suite, whose
# committed transactions may have queued jobs this worker must not pick up.
QUEUE = f"e2e-{uuid.uuid4().hex[:12]}"


def database_url() -> str | None:
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = quote(db["USER"] or "")
        if db.get("PASSWORD"):
            auth += ":" + quote(db["PASSWORD"])
        return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    name = str(db["NAME"])
    if connection.vendor == "sqlite" and "memory" not in name and name != ":memory:":
        return f"sqlite:///{name}"
    return None


def broker_url() -> str | None:
    for var in ("REDIS_URL", "CELERY_BROKER_URL"):
        value = os.environ.get(var, "")
        if value.startswith(("redis://", "rediss://")):
            return value
    return None


def test_real_worker_runs_a_task_to_validating(tmp_path: Path) -> None:
    """X1/X7: a job sent through a real broker is executed by a separate worker process
    on the offline researcher; the task reaches validating with a cited answer."""
    db_url = database_url()
    if db_url is None:
        pytest.skip("the test database is in-memory SQLite; a worker process cannot share it")
    KnowledgeDocumentFactory(
        title="Training Budget",
        body="Everyone can learn. The annual training budget per employee is 1,750 EUR.",
    )
    task = TaskFactory(request="What is the annual training budget per employee?")

    redis = broker_url()
    folder = tmp_path / "broker"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": db_url,
        "AGENT_MODEL": "offline:researcher",
        "VALIDATOR_MODEL": "offline:judge",
        "EVIDENTIA_VAR_DIR": str(tmp_path),
        "CELERY_BROKER_URL": redis or "filesystem://",
        "CELERY_BROKER_FOLDER": str(folder),
        "PYTHONUNBUFFERED": "1",
    }
    sender = Celery("e2e-sender", broker=redis or "filesystem://")
    if redis is None:
        for sub in ("queue", "processed"):
            (folder / sub).mkdir(parents=True, exist_ok=True)
        sender.conf.broker_transport_options = {
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "processed_folder": str(folder / "processed"),
            "store_processed": False,
        }
    log_path = tmp_path / "worker.log"
    celery_bin = Path(sys.executable).with_name("celery")
    started = time.monotonic()
    with log_path.open("w") as log:
        worker = subprocess.Popen(
            [
                str(celery_bin),
                "-A",
                "project",
                "worker",
                "--pool=solo",
                "-Q",
                QUEUE,
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
            ],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            sender.send_task("tasks_app.run_attempt", args=[task.pk], queue=QUEUE)
            deadline = time.monotonic() + 25
            reached = False
            while time.monotonic() < deadline:
                if TaskEvent.objects.filter(task_id=task.pk, to_status=S.VALIDATING).exists():
                    reached = True
                    break
                if worker.poll() is not None:
                    break
                time.sleep(0.2)
            elapsed = time.monotonic() - started
        finally:
            worker.terminate()
            try:
                worker.wait(timeout=10)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait(timeout=5)
            sender.close()
    output = log_path.read_text()
    assert reached, f"task did not reach validating within 25 s; worker log:\n{output[-4000:]}"
    task = Task.objects.get(pk=task.pk)
    assert task.attempt_count == 1
    assert "1,750 EUR" in task.final_answer and "Training Budget" in task.final_answer
    run = Run.objects.get(task=task)
    assert run.model_name == "offline:researcher" and run.tool_evidence.count() >= 2
    broker = redis or "filesystem"
    print(f"\ne2e: worker ran the attempt to validating in {elapsed:.1f}s (broker: {broker})")
