"""The whole pipeline through a real Celery worker process (X1, X7, V2, V7).

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
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from django.conf import settings

from evidence_app.models import ValidationSnapshot
from tasks_app.knowledge.importer import import_folder
from tasks_app.models import Task
from tests.factories import TaskFactory, UserFactory
from tests.workers import Worker, broker_env, database_url, redis_url, sender_app, wait_for

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


def test_demo_tasks_reach_the_status_their_evidence_warrants(tmp_path: Path) -> None:
    """X1, X7, V2: through a real worker, supported/deep facts → awaiting_feedback
    (accepted), missing/contradicted facts → needs_review; every verdict is stored."""
    db_url = database_url()
    if db_url is None:
        pytest.skip("TEST_DATABASE_NAME names an in-memory SQLite database: no worker can share it")
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

    redis = redis_url()
    folder = tmp_path / "broker"
    env = {
        "DATABASE_URL": db_url,
        "AGENT_MODEL": "offline:researcher",
        "VALIDATOR_MODEL": "offline:judge",
        "EVIDENTIA_VAR_DIR": str(tmp_path),
        # The failed demo task names a hosted model: it must find no key.
        "OPENAI_API_KEY": "",
        **broker_env(redis=redis, folder=folder),
    }
    sender = sender_app(name="e2e-validator-sender", redis=redis, folder=folder)
    ids = [task.pk for task, _ in tasks]

    def settled_or_died() -> bool:
        statuses = Task.objects.filter(pk__in=ids).values_list("status", flat=True)
        return all(s in SETTLED for s in statuses) or not worker.alive

    started = time.monotonic()
    worker = Worker(env=env, queue=QUEUE, log_path=tmp_path / "worker.log")
    try:
        for task, _ in tasks:
            sender.send_task("tasks_app.run_attempt", args=[task.pk], queue=QUEUE)
        wait_for(settled_or_died, timeout=90, interval=0.3)
        elapsed = time.monotonic() - started
    finally:
        worker.stop()
        sender.close()
    output = worker.output()

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
