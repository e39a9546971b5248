"""Webhooks (issue 14): registration behind the SSRF guard, the outbox written by the
transition service, Standard Webhooks signatures, retry rules, per-task order and
"send again". Deliveries go to a real local HTTP server that verifies signatures with
the ``standardwebhooks`` library."""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest
from django.db import transaction
from django.test import Client
from django.utils import timezone

from project.errors import InvalidInput
from tasks_app.accounts.auth import api_token_create
from tasks_app.models import (
    WebhookDelivery,
    WebhookDeliveryAttempt,
    WebhookEndpoint,
)
from tasks_app.notifications.event_names import (
    WebhookEvent,
    listed_event_names,
    registered_event_names,
    webhook_event_names,
)
from tasks_app.notifications.webhooks import (
    retry_delay,
    webhook_delivery_resend,
    webhook_endpoint_create,
    webhook_events_for_operators,
    webhook_send_pending,
)
from tasks_app.workflow import transitions
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory
from tests.webhook_receiver import running_receiver

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9000/hooks",
        "http://localhost/hooks",
        "http://[::1]/hooks",
        "http://10.0.0.5/hooks",
        "http://169.254.169.254/latest/meta-data",
        "http://[::ffff:127.0.0.1]/hooks",
    ],
)
def test_private_webhook_urls_are_refused_without_the_setting(
    requester: Any, settings: Any, url: str
) -> None:
    """Issue 14: the fetch_url SSRF rule applies to webhook URLs."""
    settings.WEBHOOK_ALLOW_PRIVATE = False
    with pytest.raises(InvalidInput) as refused:
        webhook_endpoint_create(owner=requester, url=url)
    assert refused.value.message.startswith("url: the host")
    assert not WebhookEndpoint.objects.exists()


@pytest.mark.finding(34, 7)
def test_an_unresolvable_host_and_a_private_one_get_the_same_refusal(
    requester: Any, settings: Any
) -> None:
    """Issue 34 finding 7: before, registration said "cannot resolve" for an unknown host
    and "refused: not public" for one that resolves, which let anyone map internal host
    names. Now both get one message, the host named and nothing about its resolution."""
    settings.WEBHOOK_ALLOW_PRIVATE = False
    messages = []
    for host in ("localhost", "no-such-host.invalid"):
        with pytest.raises(InvalidInput) as refused:
            webhook_endpoint_create(owner=requester, url=f"http://{host}/hooks")
        messages.append(refused.value.message.replace(host, "HOST"))
    assert messages[0] == messages[1]
    assert "resolve" in messages[0] and "refused" not in messages[0]
    assert not WebhookEndpoint.objects.exists()


def test_private_webhook_url_is_allowed_with_the_setting(requester: Any, settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE = True
    endpoint = webhook_endpoint_create(owner=requester, url="http://127.0.0.1:9000/hooks")
    assert endpoint.secret.startswith("whsec_") and set(endpoint.events) >= {
        "task.needs_revision",
        "validation.completed",
    }


def test_unknown_events_and_bad_schemes_are_refused(requester: Any, settings: Any) -> None:
    settings.WEBHOOK_ALLOW_PRIVATE = True
    with pytest.raises(InvalidInput, match="events"):
        webhook_endpoint_create(owner=requester, url="http://127.0.0.1/h", events=["task.done"])
    with pytest.raises(InvalidInput, match="url"):
        webhook_endpoint_create(owner=requester, url="file:///etc/passwd")


def endpoint_for(owner: Any, url: str, events: list[str] | None = None) -> WebhookEndpoint:
    return webhook_endpoint_create(owner=owner, url=url, events=events)


def test_a_status_change_writes_deliveries_in_its_own_transaction(
    requester: Any, other_requester: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """Issue 14: task_transition writes one delivery per subscribed endpoint of the
    task's owner (none for others, none for unsubscribed events), validation.completed
    before the status event; a rolled-back change writes none."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    mine = endpoint_for(requester, "http://127.0.0.1:1/a")
    only_closed = endpoint_for(requester, "http://127.0.0.1:1/b", events=["task.closed"])
    theirs = endpoint_for(other_requester, "http://127.0.0.1:1/c")
    task = TaskFactory(owner=requester, status=S.VALIDATING, attempt_count=1)
    from evidence_app.models import ValidationSnapshot

    ValidationSnapshot.objects.create(
        task=task, attempt_index=1, status="insufficient_evidence", result={"issues": ["gap"]}
    )
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        transitions.task_transition(
            transitions.Transition(
                task_id=task.pk, to_status=S.NEEDS_REVIEW, actor_kind="validator"
            )
        )
    assert len(callbacks) == 1
    rows = list(WebhookDelivery.objects.order_by("id"))
    assert [(d.endpoint_id, d.event_type) for d in rows] == [
        (mine.pk, "validation.completed"),
        (mine.pk, "task.needs_review"),
    ]
    assert not WebhookDelivery.objects.filter(endpoint__in=[only_closed, theirs]).exists()

    with pytest.raises(RuntimeError), transaction.atomic():
        transitions.task_transition(
            transitions.Transition(task_id=task.pk, to_status=S.CLOSED, actor_kind="user")
        )
        raise RuntimeError("the request failed after the change")
    assert WebhookDelivery.objects.count() == 2


def test_delivery_is_signed_and_verifies_with_standardwebhooks(
    requester: Any, settings: Any
) -> None:
    """Issue 14: webhook-id / webhook-timestamp / webhook-signature per Standard
    Webhooks; the receiver verifies with the library; one stored attempt."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    with running_receiver() as receiver:
        endpoint = endpoint_for(requester, receiver.url)
        receiver.secret = endpoint.secret
        task = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
        transitions.task_transition(
            transitions.Transition(task_id=task.pk, to_status=S.CLOSED, actor_kind="user")
        )
        outcome = webhook_send_pending(endpoint_id=endpoint.pk, task_id=task.pk)
    assert outcome.startswith("idle")
    [got] = receiver.requests
    delivery = WebhookDelivery.objects.get()
    assert got.verified and got.msg_id == delivery.msg_id and got.event_type == "task.closed"
    assert got.payload["data"]["task"]["id"] == task.pk
    assert got.payload["data"]["task"]["status"] == "closed"
    assert delivery.status == "delivered" and delivery.attempt_count == 1
    attempt = WebhookDeliveryAttempt.objects.get()
    assert (attempt.status_code, attempt.outcome) == (200, "delivered")


@pytest.mark.parametrize("code", [400, 401, 404, 410, 422])
def test_other_4xx_is_never_retried(requester: Any, settings: Any, code: int) -> None:
    """Issue 14: 4xx other than 429 is final: one attempt, delivery failed."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    with running_receiver() as receiver:
        endpoint = endpoint_for(requester, receiver.url)
        receiver.secret = endpoint.secret
        receiver.script = [code]
        task = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
        transitions.task_transition(
            transitions.Transition(task_id=task.pk, to_status=S.CLOSED, actor_kind="user")
        )
        webhook_send_pending(endpoint_id=endpoint.pk, task_id=task.pk)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "failed" and delivery.attempt_count == 1
    assert WebhookDeliveryAttempt.objects.get().outcome == "gave_up"


@pytest.mark.parametrize("code", [429, 500, 503])
def test_429_and_5xx_are_retried_later_and_hold_back_later_events(
    requester: Any, settings: Any, code: int
) -> None:
    """Issue 14: a retryable answer schedules a retry with backoff; the task's next event
    waits behind it (per-task order); after the window an attempt gives up."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    settings.WEBHOOK_RETRY_BASE_SECONDS = 600
    with running_receiver() as receiver:
        endpoint = endpoint_for(requester, receiver.url)
        receiver.secret = endpoint.secret
        receiver.script = [code]
        task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
        transitions.task_transition(
            transitions.Transition(task_id=task.pk, to_status=S.NEEDS_REVISION, actor_kind="user")
        )
        transitions.task_transition(
            transitions.Transition(task_id=task.pk, to_status=S.ABANDONED, actor_kind="user")
        )
        outcome = webhook_send_pending(endpoint_id=endpoint.pk, task_id=task.pk)
        assert outcome.startswith("retry in")
        first, second = WebhookDelivery.objects.order_by("id")
        assert first.status == "pending" and first.next_attempt_at > timezone.now()
        assert second.attempt_count == 0, "the later event waits for the earlier one"
        assert len(receiver.requests) == 1
        # Past the 24 h window, a failing attempt gives up and the next event goes out.
        WebhookDelivery.objects.filter(pk=first.pk).update(
            next_attempt_at=timezone.now(),
            created_at=timezone.now() - timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_SECONDS),
        )
        receiver.script = [code]
        webhook_send_pending(endpoint_id=endpoint.pk, task_id=task.pk)
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, first.attempt_count) == ("failed", 2)
    assert second.status == "delivered"
    assert [r.event_type for r in receiver.requests] == [
        "task.needs_revision",
        "task.needs_revision",
        "task.abandoned",
    ]


def test_connection_errors_are_retried(requester: Any, settings: Any) -> None:
    """Issue 14: nothing listening is a connection error: retried, error stored."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    with running_receiver() as receiver:
        url = receiver.url
    endpoint = endpoint_for(requester, url)  # the receiver is gone: connection refused
    task = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
    transitions.task_transition(
        transitions.Transition(task_id=task.pk, to_status=S.CLOSED, actor_kind="user")
    )
    webhook_send_pending(endpoint_id=endpoint.pk, task_id=task.pk)
    delivery = WebhookDelivery.objects.get()
    assert delivery.status == "pending" and "connection error" in delivery.last_error
    assert WebhookDeliveryAttempt.objects.get().outcome == "retry"


def test_backoff_grows_exponentially_with_jitter_and_is_capped(settings: Any) -> None:
    settings.WEBHOOK_RETRY_BASE_SECONDS = 10
    settings.WEBHOOK_RETRY_MAX_SECONDS = 3600
    for attempt, full in [(1, 10), (2, 20), (5, 160), (30, 3600)]:
        delays = {retry_delay(attempt) for _ in range(20)}
        assert all(full / 2 <= d <= full for d in delays)
        assert len(delays) > 1, "jitter"


def test_send_again_requeues_a_failed_delivery_with_the_same_id(
    requester: Any, other_requester: Any, settings: Any
) -> None:
    """Issue 14: "send again" on the account page re-sends the stored event (same
    webhook-id, so receivers can de-duplicate); only the owner may do it."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    with running_receiver() as receiver:
        endpoint = endpoint_for(requester, receiver.url)
        receiver.secret = endpoint.secret
        receiver.script = [404]
        task = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
        transitions.task_transition(
            transitions.Transition(task_id=task.pk, to_status=S.CLOSED, actor_kind="user")
        )
        webhook_send_pending(endpoint_id=endpoint.pk, task_id=task.pk)
        delivery = WebhookDelivery.objects.get()
        assert delivery.status == "failed"
        with pytest.raises(WebhookDelivery.DoesNotExist):
            webhook_delivery_resend(delivery_id=delivery.pk, owner=other_requester)
        webhook_delivery_resend(delivery_id=delivery.pk, owner=requester)
        webhook_send_pending(endpoint_id=endpoint.pk, task_id=task.pk)
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempt_count == 2
    assert [r.msg_id for r in receiver.requests] == [delivery.msg_id, delivery.msg_id]


def test_a_receiver_down_for_an_hour_loses_nothing(requester: Any, settings: Any) -> None:
    """Issue 14: an hour of failures is well inside the 24 h window: still pending."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    with running_receiver() as receiver:
        endpoint = endpoint_for(requester, receiver.url)
        receiver.secret = endpoint.secret
        receiver.script = [503]
        task = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
        transitions.task_transition(
            transitions.Transition(task_id=task.pk, to_status=S.CLOSED, actor_kind="user")
        )
        WebhookDelivery.objects.update(created_at=timezone.now() - timedelta(hours=1))
        webhook_send_pending(endpoint_id=endpoint.pk, task_id=task.pk)
        delivery = WebhookDelivery.objects.get()
        assert delivery.status == "pending" and delivery.attempt_count == 1
        WebhookDelivery.objects.update(next_attempt_at=timezone.now())
        webhook_send_pending(endpoint_id=endpoint.pk, task_id=task.pk)
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and len(receiver.accepted()) == 1


def test_sweeper_resends_only_due_unclaimed_deliveries(requester: Any, settings: Any) -> None:
    """Issue 14: a delivery whose job was lost is found by the periodic sweep; one held
    by a sender, not yet due, or for a disabled endpoint is left alone."""
    from tasks_app.notifications.webhooks import webhook_endpoint_disable, webhook_sweep

    settings.WEBHOOK_ALLOW_PRIVATE = True
    endpoint = endpoint_for(requester, "http://127.0.0.1:9/a")
    disabled = endpoint_for(requester, "http://127.0.0.1:9/b")
    tasks = [TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK) for _ in range(3)]
    for task in tasks:
        transitions.task_transition(
            transitions.Transition(task_id=task.pk, to_status=S.CLOSED, actor_kind="user")
        )
    webhook_endpoint_disable(endpoint_id=disabled.pk, owner=requester)
    soon = timezone.now() + timedelta(minutes=5)
    WebhookDelivery.objects.filter(endpoint=endpoint, task=tasks[1]).update(locked_until=soon)
    WebhookDelivery.objects.filter(endpoint=endpoint, task=tasks[2]).update(next_attempt_at=soon)
    assert webhook_sweep() == [(endpoint.pk, tasks[0].pk)]


def test_revoking_the_registering_token_stops_its_webhooks(requester: Any, settings: Any) -> None:
    """Issue 14: endpoints registered with an API token stop with it."""
    from tasks_app.accounts.auth import api_token_create, api_token_revoke

    settings.WEBHOOK_ALLOW_PRIVATE = True
    token, _ = api_token_create(user=requester)
    webhook_endpoint_create(owner=requester, url="http://127.0.0.1:9/a", api_token=token)
    api_token_revoke(token_id=token.pk, user=requester)
    task = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
    transitions.task_transition(
        transitions.Transition(task_id=task.pk, to_status=S.CLOSED, actor_kind="user")
    )
    assert not WebhookDelivery.objects.exists()


def test_metrics_count_delivery_attempts_by_outcome_and_deliveries_by_status(
    requester: Any, settings: Any, client: Any
) -> None:
    """Issue 18: /metrics counts webhook delivery attempts by outcome and deliveries by
    status, from the delivery tables."""
    from prometheus_client.parser import text_string_to_metric_families

    settings.WEBHOOK_ALLOW_PRIVATE = True
    settings.WEBHOOK_RETRY_BASE_SECONDS = 600
    settings.METRICS_SETTLE_SECONDS = 0
    with running_receiver() as receiver:
        endpoint = endpoint_for(requester, receiver.url)
        receiver.secret = endpoint.secret
        receiver.script = [503, 200]
        first = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
        transitions.task_transition(
            transitions.Transition(task_id=first.pk, to_status=S.CLOSED, actor_kind="user")
        )
        webhook_send_pending(endpoint_id=endpoint.pk, task_id=first.pk)  # 503: retry
        second = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
        transitions.task_transition(
            transitions.Transition(task_id=second.pk, to_status=S.CLOSED, actor_kind="user")
        )
        webhook_send_pending(endpoint_id=endpoint.pk, task_id=second.pk)  # 200: delivered
    text = client.get("/metrics").content.decode()
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    attempts = "evidentia_webhook_delivery_attempts_total"
    assert samples[(attempts, (("outcome", "retry"),))] == 1
    assert samples[(attempts, (("outcome", "delivered"),))] == 1
    deliveries = "evidentia_webhook_deliveries"
    assert samples[(deliveries, (("status", "pending"),))] == 1
    assert samples[(deliveries, (("status", "delivered"),))] == 1
    assert samples[(deliveries, (("status", "failed"),))] == 0


@pytest.mark.finding(24, 13)
@pytest.mark.parametrize("answer", [200, 500, None], ids=["delivered", "5xx", "refused"])
def test_no_log_line_holds_the_webhook_urls_query_string(
    requester: Any, settings: Any, caplog: Any, answer: int | None
) -> None:
    """Issue 24 item 13: httpx logged every request line ("HTTP Request: POST
    http://...?token=secret") at INFO, so a secret in a receiver's URL reached the logs.
    Delivered, answered 5xx or refused (the receiver gone), no record at INFO or above
    holds the query string."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    caplog.set_level(logging.INFO)
    with running_receiver() as receiver:
        url = f"{receiver.url}?token=secret-in-the-query"
        endpoint = endpoint_for(requester, url)
        receiver.secret = endpoint.secret
        receiver.script = [answer or 200]
        task = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
        transitions.task_transition(
            transitions.Transition(task_id=task.pk, to_status=S.CLOSED, actor_kind="user")
        )
        if answer is not None:
            webhook_send_pending(endpoint_id=endpoint.pk, task_id=task.pk)
    if answer is None:  # the receiver is gone: connection refused
        webhook_send_pending(endpoint_id=endpoint.pk, task_id=task.pk)
    assert WebhookDeliveryAttempt.objects.count() == 1
    assert caplog.records, "nothing was logged at all: the check would prove nothing"
    leaked = [r for r in caplog.records if "secret-in-the-query" in r.getMessage()]
    assert not leaked, [f"{r.name} {r.levelname}: {r.getMessage()}" for r in leaked]


def test_an_event_about_a_judge_reaches_operators_endpoints_only_and_is_delivered(
    requester: Any, operator: Any, settings: Any
) -> None:
    """Issue 46, item 2: ``auto_accept.approved`` names a judge, not a task: it goes to
    the operators' endpoints subscribed to it, never a requester's, and its delivery
    (task none) is signed and sent like any other."""
    settings.WEBHOOK_ALLOW_PRIVATE = True
    with running_receiver() as receiver:
        ours = endpoint_for(operator, receiver.url)
        theirs = endpoint_for(requester, receiver.url)
        WebhookEndpoint.objects.filter(pk__in=[ours.pk, theirs.pk]).update(
            events=["auto_accept.approved"]
        )
        receiver.secret = ours.secret
        [delivery] = webhook_events_for_operators(
            event_type="auto_accept.approved", data={"judge": {"threshold_id": 7, "threshold": 0.9}}
        )
        assert delivery.endpoint_id == ours.pk and delivery.task_id is None
        outcome = webhook_send_pending(endpoint_id=ours.pk, task_id=None)
    assert outcome.startswith("idle")
    [got] = receiver.requests
    assert got.verified and got.event_type == "auto_accept.approved"
    assert got.payload["data"]["judge"] == {"threshold_id": 7, "threshold": 0.9}
    delivery.refresh_from_db()
    assert delivery.status == "delivered"
    with pytest.raises(ValueError):
        webhook_events_for_operators(event_type="task.closed", data={})


def test_tasks_app_names_no_event_of_evidence_app_and_sends_the_ones_it_registered() -> None:
    """Issue 45, item 2: the audit and auto-accept events are evidence_app's, registered
    into tasks_app's event names when Django starts: tasks_app's own choices name none of
    them, and every one is offered to endpoints after tasks_app's own, in the order the
    API document lists them."""
    own = set(WebhookEvent.values)
    theirs = ["audit.opened", "audit.judged", "auto_accept.stopped", "auto_accept.approved"]
    assert own.isdisjoint(theirs)
    assert not any(name.startswith(("audit", "auto_accept")) for name in own)
    assert registered_event_names() == theirs
    assert webhook_event_names() == [*WebhookEvent.values, *theirs]
    assert listed_event_names() == [*WebhookEvent.values, "audit.opened", "audit.judged"]
    delivery_choices = WebhookDelivery._meta.get_field("event_type").choices
    assert [name for name, _ in delivery_choices] == webhook_event_names()


def test_an_unknown_event_is_refused_as_before(requester: Any) -> None:
    """Issue 45: a name no app offers is a 422 naming the events the API lists, as the
    ``Literal`` it was said."""
    api = Client(headers={"Authorization": f"Bearer {api_token_create(user=requester)[1]}"})
    refused = api.post(
        "/api/v1/webhooks",
        {"url": "https://example.com/hook", "events": ["audit.opened", "nope"]},
        content_type="application/json",
    )
    assert refused.status_code == 422
    body = refused.json()
    assert body["code"] == "validation_error"
    [error] = body["errors"]
    assert error["field"] == "events.1"
    assert error["message"] == (
        "Input should be 'task.needs_review', 'task.awaiting_feedback', "
        "'task.needs_revision', 'task.closed', 'task.failed', 'task.abandoned', "
        "'validation.completed', 'trace.unusable', 'audit.opened' or 'audit.judged'"
    )
