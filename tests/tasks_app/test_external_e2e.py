"""External agents end to end (issue 14): a live server, a real Celery worker process
and real HTTP receivers that verify webhook signatures with ``standardwebhooks``.

- the pydantic-ai client example in docs/examples runs as its own process: it streams
  its evidence, submits, is rejected by the validator against the evidence it submitted,
  receives the revision webhook, submits again and is accepted;
- a receiver answering 503 five times then 200 gets each event once, in order, and the
  delivery log shows six attempts for the first;
- the same submission twice with one Idempotency-Key stores and validates one attempt.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from django.conf import settings as django_settings

from evidence_app.models import ValidationSnapshot
from project.celery import app as celery_app
from project.celery import configure
from tasks_app.accounts.auth import api_token_create
from tasks_app.models import Run, Task, ToolEvidence, WebhookDelivery
from tests.factories import UserFactory
from tests.webhook_receiver import running_receiver
from tests.workers import Worker, broker_env, database_url, wait_for

pytestmark = [
    pytest.mark.celery_worker,
    pytest.mark.django_db(transaction=True),
]

EXAMPLE = Path(django_settings.BASE_DIR) / "docs" / "examples" / "external_agent.py"
FACT = "The annual training budget per employee is 1,750 EUR."


@dataclass
class Stack:
    base_url: str
    token: str
    worker: Worker

    def api(self) -> httpx.Client:
        return httpx.Client(
            base_url=f"{self.base_url}/api/v1",
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=30,
        )


@pytest.fixture
def stack(
    live_server: Any, settings: Any, tmp_path: Path, _isolated_broker: Path
) -> Iterator[Stack]:
    """The live server (in this process) and a worker process sharing the test database
    and the broker; jobs the live server sends go to the worker's own queue."""
    db_url = database_url()
    if db_url is None:
        pytest.skip("TEST_DATABASE_NAME names an in-memory SQLite database: no worker can share it")
    settings.WEBHOOK_ALLOW_PRIVATE = True
    queue = f"e2e-external-{uuid.uuid4().hex[:12]}"
    previous_queue = celery_app.conf.task_default_queue
    celery_app.conf.task_default_queue = queue
    # Jobs are routed to a queue per purpose (validation, webhooks, ...): route this
    # process's jobs to the worker's prefixed queues (tests.workers.worker_queues).
    settings.CELERY_QUEUE_PREFIX = f"{queue}."
    configure(celery_app)
    env = {
        "DATABASE_URL": db_url,
        "AGENT_MODEL": "offline:researcher",
        "VALIDATOR_MODEL": "offline:judge",
        "EVIDENTIA_VAR_DIR": str(tmp_path),
        # The live server in this process sends to the suite's throwaway filesystem
        # broker (tests/conftest.py); the worker reads the same folder.
        **broker_env(redis=None, folder=_isolated_broker),
        "WEBHOOK_ALLOW_PRIVATE": "1",
        "WEBHOOK_RETRY_BASE_SECONDS": "0.2",
        "WEBHOOK_RETRY_MAX_SECONDS": "1",
    }
    owner = UserFactory(username="agent-owner")
    _, raw = api_token_create(user=owner, name="external agent")
    worker = Worker(env=env, queue=queue, log_path=tmp_path / "worker.log")
    try:
        yield Stack(base_url=live_server.url, token=raw, worker=worker)
    finally:
        worker.stop()
        celery_app.conf.task_default_queue = previous_queue
        settings.CELERY_QUEUE_PREFIX = ""
        configure(celery_app)


def test_pydantic_ai_example_round_trip_through_a_revision_webhook(stack: Stack) -> None:
    """Issue 14: the docs example, as its own process: evidence streamed and stored,
    validated against it (the wrong figure is rejected with categorized feedback), the
    revision learned from a signed webhook, the second attempt accepted."""
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--base-url", stack.base_url, "--token", stack.token],
        capture_output=True,
        text=True,
        timeout=180,
    )
    elapsed = time.monotonic() - started
    assert result.returncode == 0, (
        f"example failed:\n{result.stdout}\n{result.stderr[-3000:]}\n"
        f"worker log:\n{stack.worker.output()[-4000:]}"
    )
    print(f"\nexample output ({elapsed:.1f} s):\n{result.stdout}")
    task = Task.objects.get(agent="external")
    assert task.status == "awaiting_feedback" and task.attempt_count == 2
    assert task.validation_outcome == "accepted"
    # Attempt 1: the streamed tool result is stored like an internal agent's evidence.
    first = ToolEvidence.objects.get(task=task, attempt_index=1)
    assert first.tool_name == "lookup_handbook" and FACT in first.content
    assert first.tool_call_id and first.arguments == {"topic": "training"}
    run1 = Run.objects.get(task=task, attempt_index=1)
    assert run1.status == "completed" and "1,570" in run1.output_text
    assert run1.messages.filter(role="tool").exists()
    # The validator checked the claims against the submitted tool results.
    verdicts = {
        s.attempt_index: s for s in ValidationSnapshot.objects.originals().filter(task=task)
    }
    assert verdicts[1].status == "rejected" and verdicts[1].failure_category == "unsupported_claim"
    assert "1,570" in verdicts[1].result["issues"][0] and "1,750" in verdicts[1].result["issues"][0]
    assert verdicts[1].tool_result_count == 1
    assert (
        verdicts[2].status == "accepted"
        and "is stated in the evidence" in (verdicts[2].result["reasoning"])
    )
    assert FACT in verdicts[2].rendered_input
    # The webhooks that carried the round trip were delivered, signed, in order.
    delivered = list(
        WebhookDelivery.objects.filter(task=task).order_by("id").values_list("event_type", "status")
    )
    assert delivered == [
        ("validation.completed", "delivered"),
        ("task.needs_revision", "delivered"),
        ("validation.completed", "delivered"),
        ("task.awaiting_feedback", "delivered"),
    ]
    assert "revision asked by the validator: rejected (unsupported_claim)" in result.stdout


def test_receiver_answering_503_five_times_then_200_gets_each_event_once_in_order(
    stack: Stack,
) -> None:
    """Issue 14: retries with backoff on 5xx; the event arrives once; the task's later
    events wait behind it (order); the delivery log shows six attempts."""
    with running_receiver() as receiver, stack.api() as api:
        hook = api.post("/webhooks", json={"url": receiver.url}).json()
        receiver.secret = hook["secret"]
        receiver.script = [503] * 5
        task = api.post("/tasks", json={"request": "Training budget?", "agent": "external"}).json()
        submitted = api.post(
            f"/tasks/{task['id']}/attempts",
            json={
                "final_answer": FACT,
                "runs": [
                    {
                        "model": "acme:agent-1",
                        "tool_results": [{"tool_name": "lookup", "content": FACT}],
                    }
                ],
            },
        )
        assert submitted.status_code == 201, submitted.text
        reached = wait_for(
            lambda: Task.objects.filter(pk=task["id"], status="awaiting_feedback").exists(),
            timeout=60,
            interval=0.1,
        )
        assert reached, stack.worker.output()[-4000:]
        # While the first event is still being retried, the person closes the task.
        closed = api.post(f"/tasks/{task['id']}/feedback", json={"action": "satisfied"})
        assert closed.status_code == 200, closed.text
        # Five retries with backoff, then the later events behind them: under a loaded
        # CI machine this has taken over a minute.
        done = wait_for(lambda: len(receiver.accepted()) >= 3, timeout=150, interval=0.1)
        assert done, (receiver.requests, stack.worker.output()[-4000:])
        time.sleep(0.5)  # nothing more may arrive
        log = api.get(f"/webhooks/{hook['id']}/deliveries").json()
    accepted = receiver.accepted()
    assert [r.event_type for r in accepted] == [
        "validation.completed",
        "task.awaiting_feedback",
        "task.closed",
    ]
    assert len({r.msg_id for r in accepted}) == 3, "each event accepted once"
    assert all(r.verified for r in receiver.requests)
    first = log["items"][-1]
    assert first["event_type"] == "validation.completed" and first["status"] == "delivered"
    codes = [a["status_code"] for a in first["attempts"]]
    assert codes == [503, 503, 503, 503, 503, 200]
    assert [a["outcome"] for a in first["attempts"]] == ["retry"] * 5 + ["delivered"]
    gaps = [
        (b - a)
        for a, b in zip(
            [r.at for r in receiver.requests[:6]],
            [r.at for r in receiver.requests[1:6]],
            strict=False,
        )
    ]
    assert gaps[-1] > gaps[0], "the delay grows (exponential backoff)"
    print("\ndelivery log of the first event (503 x5, then 200):")
    for attempt in first["attempts"]:
        print(
            f"  {attempt['attempted_at']}  HTTP {attempt['status_code']}  "
            f"{attempt['latency_ms']:>4} ms  {attempt['outcome']}"
        )
    for item in reversed(log["items"]):
        print(f"  {item['event_type']:<24} {item['status']:<10} attempts {item['attempt_count']}")


def test_same_submission_twice_with_one_key_stores_and_validates_one_attempt(
    stack: Stack,
) -> None:
    """Issue 14: Idempotency-Key through the live server and the worker."""
    body = {
        "final_answer": FACT,
        "runs": [{"model": "acme:agent-1", "tool_results": [{"tool_name": "t", "content": FACT}]}],
    }
    with stack.api() as api:
        task = api.post("/tasks", json={"request": "Training budget?", "agent": "external"}).json()
        url = f"/tasks/{task['id']}/attempts"
        first = api.post(url, json=body, headers={"Idempotency-Key": "same-key"})
        second = api.post(url, json=body, headers={"Idempotency-Key": "same-key"})
        assert first.status_code == second.status_code == 201
        assert second.json() == first.json()
        assert second.headers["Idempotent-Replayed"] == "true"
        settled = wait_for(
            lambda: Task.objects.filter(pk=task["id"], status="awaiting_feedback").exists(),
            timeout=60,
        )
        assert settled, stack.worker.output()[-4000:]
        polled = api.get("/tasks", params={"agent": "external"}).json()
    assert [t["id"] for t in polled["items"]] == [task["id"]]
    assert Run.objects.filter(task_id=task["id"]).count() == 1
    assert ValidationSnapshot.objects.filter(task_id=task["id"]).count() == 1
