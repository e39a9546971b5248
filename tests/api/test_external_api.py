"""External attempts and webhooks over HTTP (issue 14): status codes, field-naming
422s, idempotency, size limits and gzip, and the account page's delivery log."""

from __future__ import annotations

import gzip
import json
import logging
from typing import Any

import pytest
from django.test import Client

from tasks_app.models import (
    IdempotencyKey,
    Run,
    RunMessage,
    Task,
    TaskEvent,
    ToolEvidence,
    WebhookDelivery,
    WebhookEndpoint,
)
from tasks_app.workflow import services, transitions
from tasks_app.workflow.states import TaskStatus as S

pytestmark = pytest.mark.django_db

FACT = "The annual training budget per employee is 1,750 EUR."


def body(answer: str = "The annual training budget per employee is 1,750 EUR.") -> dict:
    return {
        "final_answer": answer,
        "runs": [
            {
                "model": "acme:agent-1",
                "messages": [{"role": "user", "content": "Budget?"}],
                "tool_results": [
                    {"tool_name": "lookup", "tool_call_id": "c1", "content": FACT, "title": "HB"}
                ],
            }
        ],
    }


@pytest.fixture
def task(requester: Any) -> Task:
    return services.task_create(owner=requester, request="Training budget?", agent="external")


def post(client: Client, url: str, data: Any, **headers: str) -> Any:
    return client.post(url, data=json.dumps(data), content_type="application/json", headers=headers)


def stored() -> tuple[int, int, int, int]:
    return (
        Run.objects.count(),
        RunMessage.objects.count(),
        ToolEvidence.objects.count(),
        TaskEvent.objects.count(),
    )


def test_submitting_an_attempt_returns_201_and_moves_to_validating(
    alice: Client, task: Task
) -> None:
    """Issue 14: the whole attempt in one body."""
    response = post(alice, f"/api/v1/tasks/{task.pk}/attempts", body())
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["attempt_index"] == 1 and data["task_status"] == "validating"
    assert data["runs"][0]["key"] == "main" and data["tool_result_count"] == 1


def test_same_submission_twice_with_one_idempotency_key_stores_one_attempt(
    alice: Client, task: Task
) -> None:
    """Issue 14: a retried submission is a no-op that returns the first result."""
    url = f"/api/v1/tasks/{task.pk}/attempts"
    first = post(alice, url, body(), **{"Idempotency-Key": "k-123"})
    second = post(alice, url, body(), **{"Idempotency-Key": "k-123"})
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert second.headers.get("Idempotent-Replayed") == "true"
    assert Run.objects.filter(task=task).count() == 1
    task.refresh_from_db()
    assert task.attempt_count == 1
    # The same key with another body is refused, not replayed.
    other = post(alice, url, body("Another answer."), **{"Idempotency-Key": "k-123"})
    assert other.status_code == 422 and other.json()["code"] == "idempotency_key_reused"
    assert IdempotencyKey.objects.count() == 1


def test_attempt_for_a_task_in_needs_review_gets_409_and_changes_nothing(
    alice: Client, task: Task
) -> None:
    """Issue 14: a submission for a task that is not waiting for an attempt gets 409."""
    assert post(alice, f"/api/v1/tasks/{task.pk}/attempts", body()).status_code == 201
    transitions.task_transition(
        transitions.Transition(task_id=task.pk, to_status=S.NEEDS_REVIEW, actor_kind="validator")
    )
    before = stored()
    response = post(alice, f"/api/v1/tasks/{task.pk}/attempts", body())
    assert response.status_code == 409
    assert response.json()["code"] == "attempt_not_expected"
    assert "needs_review" in response.json()["detail"]
    assert stored() == before
    task.refresh_from_db()
    assert task.status == S.NEEDS_REVIEW and task.attempt_count == 1


def test_a_70_mb_body_gets_413_and_stores_nothing(alice: Client, task: Task) -> None:
    """Issue 14: EXTERNAL_ATTEMPT_MAX_BYTES (64 MB) applies; nothing is stored."""
    big = body()
    big["runs"][0]["tool_results"][0]["content"] = "x" * (70 * 1024 * 1024)
    response = post(alice, f"/api/v1/tasks/{task.pk}/attempts", big)
    assert response.status_code == 413
    assert response.json()["code"] == "request_too_large"
    assert stored() == (0, 0, 0, 0)
    task.refresh_from_db()
    assert task.status == S.OPEN and task.attempt_count == 0


def test_a_body_over_the_api_limit_but_under_the_attempt_limit_is_accepted(
    alice: Client, task: Task, settings: Any
) -> None:
    """Issue 14: attempts have their own limit, above the API's general one."""
    large = body()
    large["runs"][0]["tool_results"][0]["content"] = (
        FACT + " " + "y" * (settings.API_MAX_BODY_BYTES + 1000)
    )
    response = post(alice, f"/api/v1/tasks/{task.pk}/attempts", large)
    assert response.status_code == 201, response.content[:300]
    assert ToolEvidence.objects.get().content_chars > settings.API_MAX_BODY_BYTES


def test_gzip_bodies_are_accepted_and_a_gzip_bomb_is_refused(
    alice: Client, task: Task, settings: Any
) -> None:
    """Issue 14: Content-Encoding gzip; the limit applies to the decompressed body."""
    url = f"/api/v1/tasks/{task.pk}/attempts"
    settings.EXTERNAL_ATTEMPT_MAX_BYTES = 1024 * 1024
    bomb = body()
    bomb["runs"][0]["tool_results"][0]["content"] = "z" * (2 * 1024 * 1024)
    compressed = gzip.compress(json.dumps(bomb).encode())
    assert len(compressed) < 20_000
    response = alice.post(
        url, data=compressed, content_type="application/json", headers={"Content-Encoding": "gzip"}
    )
    assert response.status_code == 413 and stored() == (0, 0, 0, 0)
    broken = alice.post(
        url, data=b"not gzip", content_type="application/json", headers={"Content-Encoding": "gzip"}
    )
    assert broken.status_code == 400 and stored() == (0, 0, 0, 0)
    response = alice.post(
        url,
        data=gzip.compress(json.dumps(body()).encode()),
        content_type="application/json",
        headers={"Content-Encoding": "gzip"},
    )
    assert response.status_code == 201, response.content
    assert ToolEvidence.objects.get().content == FACT


@pytest.mark.parametrize(
    ("runs", "field"),
    [
        ([{"model": "m"}, {"kind": "boss", "model": "m"}], "runs.1.kind"),
        ([{"kind": "main"}], "runs.0.model"),
        ([{"model": "m", "tool_results": [{"content": "no tool name"}]}], "runs.0.tool_results.0"),
        ([{"model": "m", "messages": [{"role": "robot"}]}], "runs.0.messages.0.role"),
        ([{"model": "m", "usage": {"input_tokens": -1}}], "runs.0.usage.input_tokens"),
        ("not a list", "runs"),
        ([], "runs"),
    ],
)
def test_a_malformed_run_list_gets_422_naming_the_field(
    alice: Client, task: Task, runs: Any, field: str
) -> None:
    """Issue 14 / A3: every field is validated, the error names it, nothing stored."""
    response = post(alice, f"/api/v1/tasks/{task.pk}/attempts", {"final_answer": "x", "runs": runs})
    assert response.status_code == 422
    fields = [e["field"] for e in response.json()["errors"]]
    assert any(f.startswith(field) for f in fields), fields
    assert stored() == (0, 0, 0, 0)


def test_a_rule_broken_after_schema_validation_names_the_field_too(
    alice: Client, task: Task
) -> None:
    bad = body()
    bad["runs"][0]["output_text"] = "A different answer."
    response = post(alice, f"/api/v1/tasks/{task.pk}/attempts", bad)
    assert response.status_code == 422
    assert [e["field"] for e in response.json()["errors"]] == ["final_answer"]
    assert stored() == (0, 0, 0, 0)


def test_only_the_owner_submits(
    bob: Client, rita: Client, alice: Client, task: Task, requester: Any
) -> None:
    """A2: someone else's task is a 404; a reviewer sees it but may not submit (403);
    an internal task refuses external attempts (409)."""
    assert post(bob, f"/api/v1/tasks/{task.pk}/attempts", body()).status_code == 404
    assert post(rita, f"/api/v1/tasks/{task.pk}/attempts", body()).status_code == 403
    internal = services.task_create(owner=requester, request="Internal?", enqueue=False)
    assert post(alice, f"/api/v1/tasks/{internal.pk}/attempts", body()).status_code == 409
    assert stored() == (0, 0, 0, 0)


def test_streaming_through_the_api(alice: Client, task: Task) -> None:
    """Issue 14: start, append events (each batch stored at once), finish."""
    url = f"/api/v1/tasks/{task.pk}/attempts"
    started = post(alice, url, {"stream": True, "runs": [{"key": "main", "model": "m"}]})
    assert started.status_code == 201 and started.json()["task_status"] == "running"
    n = started.json()["attempt_index"]
    event = {"type": "tool_result", "run": "main", "tool_name": "lookup", "content": FACT}
    assert post(alice, f"{url}/{n}/events", {"events": [event]}).status_code == 200
    assert ToolEvidence.objects.filter(task=task).count() == 1
    unknown = post(alice, f"{url}/{n}/events", {"events": [{**event, "run": "nope"}]})
    assert unknown.status_code == 422
    assert unknown.json()["errors"][0]["field"] == "events.0.run"
    finished = post(alice, f"{url}/{n}/finish", {"final_answer": FACT})
    assert finished.status_code == 200 and finished.json()["task_status"] == "validating"
    late = post(alice, f"{url}/{n}/events", {"events": [event]})
    assert late.status_code == 409
    assert ToolEvidence.objects.filter(task=task).count() == 1


def test_webhook_on_loopback_is_refused_without_the_setting(alice: Client, settings: Any) -> None:
    """Issue 14: the SSRF guard of fetch_url applies to webhook URLs."""
    settings.WEBHOOK_ALLOW_PRIVATE = False
    response = post(alice, "/api/v1/webhooks", {"url": "http://127.0.0.1:8001/hook"})
    assert response.status_code == 422
    assert response.json()["errors"][0]["field"] == "url"
    assert "cannot receive webhooks" in response.json()["detail"]
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.finding(24, 11)
def test_webhook_refusal_does_not_name_the_resolved_address(
    alice: Client, settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The 422 says the URL is not allowed without the address its host resolves to (no
    mapping of internal DNS through the error); operators get the detail in the log."""
    settings.WEBHOOK_ALLOW_PRIVATE = False
    with caplog.at_level(logging.INFO, logger="project.netguard"):
        response = post(alice, "/api/v1/webhooks", {"url": "http://localhost:8001/hook"})
    assert response.status_code == 422
    body = response.content.decode()
    assert "cannot receive webhooks" in response.json()["detail"]
    assert "127.0.0.1" not in body and "::1" not in body
    assert any(
        "localhost" in r.getMessage() and ("127.0.0.1" in r.getMessage() or "::1" in r.getMessage())
        for r in caplog.records
    )
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.finding(24, 13)
def test_webhook_creation_response_with_the_secret_is_not_stored(
    alice: Client, settings: Any
) -> None:
    """The API response that carries a new webhook's secret says Cache-Control: no-store."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    created = post(alice, "/api/v1/webhooks", {"url": "http://127.0.0.1:8001/hook"})
    assert created.status_code == 201 and created.json()["secret"].startswith("whsec_")
    assert "no-store" in created["Cache-Control"]


def test_webhook_secret_is_shown_once(alice: Client, bob: Client, settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE = True
    created = post(
        alice,
        "/api/v1/webhooks",
        {"url": "http://127.0.0.1:8001/hook", "events": ["task.needs_revision"]},
    )
    assert created.status_code == 201
    secret = created.json()["secret"]
    assert secret.startswith("whsec_")
    hook_id = created.json()["id"]
    listed = alice.get("/api/v1/webhooks").json()
    assert listed["count"] == 1 and secret not in json.dumps(listed)
    assert secret not in alice.get(f"/api/v1/webhooks/{hook_id}").content.decode()
    assert bob.get(f"/api/v1/webhooks/{hook_id}").status_code == 404
    unknown = post(alice, "/api/v1/webhooks", {"url": "http://127.0.0.1/h", "events": ["x"]})
    assert unknown.status_code == 422
    assert bob.post(f"/api/v1/webhooks/{hook_id}/disable").status_code == 404
    assert alice.get(f"/api/v1/webhooks/{hook_id}").json()["is_active"] is True
    assert alice.post(f"/api/v1/webhooks/{hook_id}/disable").json()["is_active"] is False
    # Disabled, not gone: the endpoint and its delivery log stay readable.
    assert alice.get(f"/api/v1/webhooks/{hook_id}").json()["is_active"] is False
    assert alice.get(f"/api/v1/webhooks/{hook_id}/deliveries").status_code == 200


def test_account_page_shows_the_delivery_log_and_sends_again(
    requester: Any, other_requester: Any, settings: Any
) -> None:
    """Issue 14: every delivery attempt is visible on the account page, with a "send
    again" button that queues the delivery once more."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    client = Client()
    client.force_login(requester)
    response = client.post(
        "/account/webhooks/", {"url": "http://127.0.0.1:9/hook", "events": ["task.closed"]}
    )
    assert response.status_code == 302
    page = client.get("/account/").content.decode()
    endpoint = WebhookEndpoint.objects.get()
    assert endpoint.secret in page  # once
    assert endpoint.secret not in client.get("/account/").content.decode()
    task = services.task_create(owner=requester, request="Q?", agent="external")
    transitions.task_transition(
        transitions.Transition(task_id=task.pk, to_status=S.ABANDONED, actor_kind="user")
    )
    assert not WebhookDelivery.objects.exists(), "not subscribed to task.abandoned"
    other = services.task_create(owner=requester, request="Q2?", agent="external")
    Task.objects.filter(pk=other.pk).update(status=S.AWAITING_FEEDBACK)
    transitions.task_transition(
        transitions.Transition(task_id=other.pk, to_status=S.CLOSED, actor_kind="user")
    )
    delivery = WebhookDelivery.objects.get()
    from tasks_app.notifications.webhooks import webhook_send_pending

    webhook_send_pending(endpoint_id=endpoint.pk, task_id=other.pk)  # nothing listens on :9
    page = client.get("/account/").content.decode()
    assert "task.closed" in page and "no response" in page and "connection error" in page
    assert "Send again" in page
    resent = client.post(f"/account/webhooks/deliveries/{delivery.pk}/resend/")
    assert resent.status_code == 302
    delivery.refresh_from_db()
    assert delivery.status == "pending" and delivery.locked_until is None
    intruder = Client()
    intruder.force_login(other_requester)
    assert intruder.post(f"/account/webhooks/deliveries/{delivery.pk}/resend/").status_code == 404


@pytest.mark.finding(24, 1)
def test_every_endpoint_taking_an_idempotency_key_documents_409_in_flight() -> None:
    """A concurrent duplicate may get 409 idempotency_key_in_use: the document says so
    wherever the header is taken."""
    document = Client().get("/api/v1/openapi.json").json()
    taking = [
        (path, method, operation)
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if any(p.get("name") == "Idempotency-Key" for p in operation.get("parameters", []))
    ]
    assert len(taking) >= 6
    assert [(p, m) for p, m, op in taking if "409" not in op["responses"]] == []
