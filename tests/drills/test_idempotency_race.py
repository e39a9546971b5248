"""Drill: one ``Idempotency-Key`` sent by 20 clients at once (issue "Guarantees that
hold under concurrency and attack", finding 1). A real threaded server (pytest-django's
``live_server``), 20 client threads released together by a barrier, one requester, one
key, one body.

Stripe's contract: one effect per key. Exactly one call does the work (201); every other
call either waited for it and got its stored response (marked ``Idempotent-Replayed``)
or was told the same key is still in flight (409 ``idempotency_key_in_use``).
"""

from __future__ import annotations

import threading
from collections import Counter
from datetime import timedelta
from typing import Any

import httpx
import pytest
from django.db import connection
from django.utils import timezone

from tasks_app.accounts.auth import api_token_create
from tasks_app.api.idempotency import IdempotencyKeyInUse, idempotent_call
from tasks_app.models import IdempotencyKey, OutboxJob, Run, Task
from tests.drills.support import report
from tests.factories import UserFactory
from tests.tasks_app.test_external_attempts import external_task, whole_attempt

pytestmark = [
    pytest.mark.drill,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
]

CALLERS = 20
ROUNDS = 3


def same_call_at_once(base_url: str, token: str, path: str, body: Any, key: str) -> list[Any]:
    """Send one call 20 times at once; returns (status, body, replayed) per call."""
    barrier = threading.Barrier(CALLERS)
    results: list[Any] = [None] * CALLERS
    headers = {"Authorization": f"Bearer {token}", "Idempotency-Key": key}

    def send(index: int) -> None:
        with httpx.Client(base_url=base_url, headers=headers, timeout=60) as client:
            barrier.wait(timeout=20)
            response = client.post(path, json=body)
            replayed = response.headers.get("Idempotent-Replayed") == "true"
            results[index] = (response.status_code, response.json(), replayed)

    threads = [threading.Thread(target=send, args=(i,)) for i in range(CALLERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert all(r is not None for r in results), "a call did not finish"
    return results


def assert_one_effect(results: list[Any]) -> tuple[Any, Counter[str]]:
    """One fresh 201; every other answer the same body replayed, or 409 in flight."""
    fresh = [body for code, body, replayed in results if code == 201 and not replayed]
    assert len(fresh) == 1, [(c, r) for c, _, r in results]
    tally: Counter[str] = Counter()
    for code, body, replayed in results:
        if code == 201 and replayed:
            assert body == fresh[0]
            tally["replayed"] += 1
        elif code == 409:
            assert body["code"] == "idempotency_key_in_use", body
            tally["in_flight"] += 1
        else:
            assert code == 201 and not replayed, (code, body)
    return fresh[0], tally


def test_twenty_task_creations_with_one_key_create_one_task(live_server: Any) -> None:
    owner = UserFactory(username="alice")
    token = api_token_create(user=owner, name="race")[1]
    body = {"request": "What is the annual training budget per employee?"}
    totals: Counter[str] = Counter()
    for round_ in range(ROUNDS):
        results = same_call_at_once(live_server.url, token, "/api/v1/tasks", body, f"k-{round_}")
        created, tally = assert_one_effect(results)
        totals.update(tally)
        assert Task.objects.filter(owner=owner).count() == round_ + 1
        assert OutboxJob.objects.filter(task_ref=created["id"]).count() == 1
    assert Task.objects.filter(owner=owner).count() == ROUNDS
    assert OutboxJob.objects.count() == ROUNDS
    assert IdempotencyKey.objects.filter(user=owner).count() == ROUNDS
    report(
        "idempotency race",
        f"{ROUNDS} rounds x {CALLERS} creations with one key: {ROUNDS} tasks, {ROUNDS} "
        f"outbox jobs; {totals['replayed']} replayed, {totals['in_flight']} x 409 in flight",
    )


def test_twenty_attempt_submissions_with_one_key_store_one_attempt(live_server: Any) -> None:
    owner = UserFactory(username="alice")
    token = api_token_create(user=owner, name="race")[1]
    task = external_task(owner)
    body = whole_attempt().model_dump(mode="json")
    results = same_call_at_once(
        live_server.url, token, f"/api/v1/tasks/{task.pk}/attempts", body, "attempt-1"
    )
    assert_one_effect(results)
    task.refresh_from_db()
    assert task.attempt_count == 1
    assert Run.objects.filter(task=task).count() == 1


@pytest.mark.postgres(
    reason="a writer held open: SQLite locks the whole database for the first request's "
    "transaction, so the duplicate fails on that lock before it can wait on the key row"
)
def test_a_duplicate_that_waits_too_long_gets_409_in_flight(settings: Any) -> None:
    """The first request holds its key (its work is still running): a duplicate waits
    IDEMPOTENCY_IN_FLIGHT_WAIT_SECONDS, then answers 409 idempotency_key_in_use and does
    no work; once the first one commits, a retry gets its stored response."""
    settings.IDEMPOTENCY_IN_FLIGHT_WAIT_SECONDS = 1
    owner = UserFactory(username="alice")
    started, release = threading.Event(), threading.Event()
    runs: list[str] = []

    def slow() -> tuple[int, Any]:
        runs.append("first")
        started.set()
        release.wait(timeout=30)
        return 201, {"id": 1}

    def first() -> None:
        try:
            idempotent_call(user=owner, endpoint="POST /x", key="k", body=b"{}", produce=slow)
        finally:
            connection.close()

    thread = threading.Thread(target=first)
    thread.start()
    assert started.wait(timeout=20)
    with pytest.raises(IdempotencyKeyInUse):
        idempotent_call(
            user=owner,
            endpoint="POST /x",
            key="k",
            body=b"{}",
            produce=lambda: (runs.append("second"), (201, {"id": 2}))[1],
        )
    release.set()
    thread.join(timeout=30)
    again = idempotent_call(
        user=owner, endpoint="POST /x", key="k", body=b"{}", produce=lambda: (201, {"id": 3})
    )
    assert again == (201, {"id": 1}, True) and runs == ["first"]


def test_only_an_expired_key_is_replaced(settings: Any) -> None:
    owner = UserFactory(username="alice")
    call = {"user": owner, "endpoint": "POST /x", "key": "k", "body": b"{}"}
    assert idempotent_call(**call, produce=lambda: (201, {"n": 1})) == (201, {"n": 1}, False)
    assert idempotent_call(**call, produce=lambda: (201, {"n": 2})) == (201, {"n": 1}, True)
    old = timezone.now() - timedelta(seconds=settings.IDEMPOTENCY_KEY_TTL_SECONDS + 1)
    IdempotencyKey.objects.update(created_at=old)
    assert idempotent_call(**call, produce=lambda: (201, {"n": 3})) == (201, {"n": 3}, False)
    assert IdempotencyKey.objects.get().response_body == {"n": 3}
