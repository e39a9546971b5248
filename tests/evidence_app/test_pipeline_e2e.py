"""The whole pipeline through a real Celery worker process (SPEC X1, X7, V2, V7).

The demo handbook and the demo tasks (``demo/tasks.json``) run on the offline models:
the worker runs each attempt (``tasks_app.run_attempt``), which sends the validation
job (``evidence_app.validate_attempt``) on commit, which applies the V2 transition and
may queue a retry. Tasks whose facts the handbook states land in ``awaiting_feedback``;
tasks whose facts are missing or contradicted land in ``needs_review``.

Broker: Redis at ``REDIS_URL`` when set (as in CI), else kombu's filesystem broker in a
temporary folder. The worker consumes a queue of its own (``CELERY_TASK_DEFAULT_QUEUE``)
so it never takes jobs other tests left on a shared broker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import pytest
from celery import Celery
from django.conf import settings
from django.db import connection

from evidence_app.models import ValidationSnapshot
from tasks_app.knowledge import import_folder
from tasks_app.models import Task
from tests.factories import TaskFactory, UserFactory

pytestmark = [pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]

QUEUE = f"e2e-validator-{uuid.uuid4().hex[:12]}"
SETTLED = {"awaiting_feedback", "needs_review", "failed", "closed", "abandoned"}
EXPECTED = {
    "supported": "awaiting_feedback",
    "deep_fact": "awaiting_feedback",
    "missing": "needs_review",
    "contradiction": "needs_review",
    # The plan names a hosted model and no API key is configured: no usable answer.
    "failed": "failed",
}


def _database_url() -> str | None:
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        auth = quote(db["USER"] or "")
        if db.get("PASSWORD"):
            auth += ":" + quote(db["PASSWORD"])
        return f"postgres://{auth}@{db['HOST'] or '127.0.0.1'}:{db['PORT'] or 5432}/{db['NAME']}"
    name = str(db["NAME"])
    if connection.vendor == "sqlite" and "memory" not in name:
        return f"sqlite:///{name}"
    return None


def _redis_url() -> str | None:
    for var in ("REDIS_URL", "CELERY_BROKER_URL"):
        value = os.environ.get(var, "")
        if value.startswith(("redis://", "rediss://")):
            return value
    return None


def test_demo_tasks_reach_the_status_their_evidence_warrants(tmp_path: Path) -> None:
    """X1, X7, V2: through a real worker, supported/deep facts → awaiting_feedback
    (accepted), missing/contradicted facts → needs_review; every verdict is stored."""
    db_url = _database_url()
    if db_url is None:
        pytest.skip("the test database is in-memory SQLite; a worker process cannot share it")
    import_folder(settings.BASE_DIR / "demo" / "handbook")
    specs = json.loads((settings.BASE_DIR / "demo" / "tasks.json").read_text(encoding="utf-8"))
    owner = UserFactory(username="e2e-requester")
    tasks = [
        (
            TaskFactory(
                owner=owner,
                title=spec["title"],
                request=spec["request"],
                rules=spec.get("rules", ""),
                plan=spec.get("plan") or {},
                max_attempts=2,
            ),
            spec,
        )
        for spec in specs
    ]

    redis = _redis_url()
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
        "CELERY_TASK_DEFAULT_QUEUE": QUEUE,
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("OPENAI_API_KEY", None)
    sender = Celery("e2e-validator-sender", broker=redis or "filesystem://")
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
    started = time.monotonic()
    with log_path.open("w") as log:
        worker = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("celery")),
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
            for task, _ in tasks:
                sender.send_task("tasks_app.run_attempt", args=[task.pk], queue=QUEUE)
            ids = [task.pk for task, _ in tasks]
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                statuses = list(Task.objects.filter(pk__in=ids).values_list("status", flat=True))
                if all(s in SETTLED for s in statuses) or worker.poll() is not None:
                    break
                time.sleep(0.3)
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

    report = []
    for task, spec in tasks:
        task.refresh_from_db()
        last = ValidationSnapshot.objects.originals().filter(task=task).order_by("-id").first()
        report.append(
            f"{spec['expect']:<13} {task.status:<18} attempts {task.attempt_count} "
            f"verdict {last.status if last else '-':<22} {spec['title']}"
        )
    summary = "\n".join(report)
    assert all(task.status in SETTLED for task, _ in tasks), (
        f"not settled in 90 s:\n{summary}\nworker log:\n{output[-4000:]}"
    )
    for task, spec in tasks:
        expected = EXPECTED[spec["expect"]]
        assert task.status == expected, (
            f"{spec['title']}: {task.status}\n{summary}\nanswer:\n{task.final_answer}"
        )
        snapshots = ValidationSnapshot.objects.originals().filter(task=task).order_by("id")
        if expected == "failed":
            # No answer, so no validator call (V6); the reason is on the timeline.
            assert not snapshots.exists() and not task.final_answer
            assert "OPENAI_API_KEY" in task.events.order_by("-id").first().reason
            continue
        assert snapshots.count() == task.attempt_count  # one verdict per attempt, no duplicates
        last = snapshots.last()
        assert last is not None and last.model_name == "offline:judge"
        assert last.rendered_input and last.raw_responses and last.template_version
        if expected == "awaiting_feedback":
            assert last.status == "accepted" and task.validation_outcome == "accepted"
            if spec.get("answer_fact") and spec["expect"] == "supported":
                figure = [w for w in spec["answer_fact"].split() if any(c.isdigit() for c in w)]
                assert all(f.rstrip(".") in task.final_answer for f in figure)
        else:
            assert last.status in {"insufficient_evidence", "rejected", "validator_error"}
            assert task.validation_outcome is None
    counts = Counter(task.status for task, _ in tasks)
    broker = "redis" if redis else "filesystem"
    print(f"\ne2e pipeline ({broker} broker, {elapsed:.1f}s): {dict(counts)}\n{summary}")
