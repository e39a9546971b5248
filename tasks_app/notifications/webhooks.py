"""Signed webhooks back to external agents and other programs.

Events come from the one place every status change goes through:
``tasks_app.workflow.transitions.task_transition`` calls ``webhook_events_for_transition`` in its
transaction, which writes one ``WebhookDelivery`` row (the outbox) per subscribed
endpoint and sends the delivery job once the transaction commits. A rolled-back change
sends nothing; a committed one cannot skip its events.

Delivery (``webhook_send_pending``, run by ``tasks_app.deliver_webhooks``) follows the
Standard Webhooks specification: ``webhook-id`` (the delivery's ``msg_id``, the same on
every attempt), ``webhook-timestamp`` and ``webhook-signature`` (``v1,`` + HMAC-SHA256),
made with the ``standardwebhooks`` library. Events for one task reach one endpoint in
order: the job always sends the oldest pending delivery of the (endpoint, task) pair
first and stops at one that must wait for a retry. Timeouts, connection errors, 429 and
5xx are retried with exponential backoff and jitter until an attempt fails after
``WEBHOOK_RETRY_WINDOW_SECONDS`` (24 h) from the event; any other answer is final. Every
attempt is stored as a ``WebhookDeliveryAttempt``.
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import random
import secrets
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from standardwebhooks.webhooks import Webhook

from project.celery import app
from project.db import MARKER_ID, Prepared
from project.errors import InvalidInput
from project.netguard import UnsafeAddress, resolve_public_address
from project.roles import OPERATORS
from tasks_app.intake.external import revision_feedback, validation_summary
from tasks_app.notifications.event_names import registered_event_names, webhook_event_names
from tasks_app.notifications.models import (
    DeliveryStatus,
    WebhookDelivery,
    WebhookDeliveryAttempt,
    WebhookEndpoint,
    WebhookEvent,
)
from tasks_app.workflow.models import Task
from tasks_app.workflow.selectors import last_decision_on
from tasks_app.workflow.states import TaskStatus

log = logging.getLogger(__name__)

EVENT_FOR_STATUS: dict[str, str] = {
    TaskStatus.NEEDS_REVIEW: WebhookEvent.TASK_NEEDS_REVIEW,
    TaskStatus.AWAITING_FEEDBACK: WebhookEvent.TASK_AWAITING_FEEDBACK,
    TaskStatus.NEEDS_REVISION: WebhookEvent.TASK_NEEDS_REVISION,
    TaskStatus.CLOSED: WebhookEvent.TASK_CLOSED,
    TaskStatus.FAILED: WebhookEvent.TASK_FAILED,
    TaskStatus.ABANDONED: WebhookEvent.TASK_ABANDONED,
}
USER_AGENT = "Evidentia-webhooks/1.0"
RESPONSE_EXCERPT_CHARS = 500
SWEEP_BATCH = 1000


class WebhookRefused(Exception):
    """The endpoint's address may not be called (SSRF guard): a final failure."""


# --- Registration ---------------------------------------------------------------------------


def resolve_webhook_address(host: str, port: int) -> str:
    """An address of ``host`` to connect to; raises WebhookRefused when it cannot be
    resolved, or when any address is not public and WEBHOOK_ALLOW_PRIVATE is off (the
    SSRF guard of fetch_url, ``project.netguard``)."""
    try:
        return resolve_public_address(host, port, allow_private=settings.WEBHOOK_ALLOW_PRIVATE)
    except UnsafeAddress as exc:
        raise WebhookRefused(str(exc)) from None


UNUSABLE_HOST = (
    "url: the host '{host}' cannot receive webhooks: it must resolve, and to public "
    "addresses only (an operator can allow private ones with WEBHOOK_ALLOW_PRIVATE=1)"
)


def webhook_url_check(url: str) -> str:
    """The URL, stripped, if it may receive webhooks; InvalidInput naming ``url`` if not."""
    url = (url or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput("url: must be an http or https URL with a host")
    if parts.username or parts.password:
        raise InvalidInput("url: must not contain credentials")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise InvalidInput("url: the port is not a number between 0 and 65535") from None
    try:
        resolve_webhook_address(parts.hostname, port)
    except WebhookRefused as exc:
        # One answer whether the host does not resolve or resolves to a private address:
        # telling them apart would let anyone map internal host names. The log says which.
        log.info("webhook URL refused: %s", exc)
        raise InvalidInput(UNUSABLE_HOST.format(host=parts.hostname)) from None
    return url


def _new_secret() -> str:
    # Standard Webhooks secrets: "whsec_" + base64 of 24 to 64 random bytes.
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


@transaction.atomic
def webhook_endpoint_create(
    *,
    owner: Any,
    url: str,
    events: list[str] | None = None,
    description: str = "",
    api_token: Any = None,
) -> WebhookEndpoint:
    """Register an endpoint for ``owner``'s tasks. The returned row carries the secret,
    which the caller shows once."""
    url = webhook_url_check(url)
    known = webhook_event_names()
    chosen = list(dict.fromkeys(events or known))
    unknown = [e for e in chosen if e not in known]
    if unknown:
        raise InvalidInput(f"events: unknown event(s) {unknown}; known: {known}")
    if len(description) > 200:
        raise InvalidInput("description: at most 200 characters")
    return WebhookEndpoint.objects.create(
        owner=owner,
        api_token=api_token,
        url=url,
        description=description.strip(),
        events=chosen,
        secret=_new_secret(),
    )


@transaction.atomic
def webhook_endpoint_disable(*, endpoint_id: int, owner: Any) -> WebhookEndpoint:
    """Stop deliveries to one of ``owner``'s endpoints; pending ones stay stored."""
    endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint_id, owner=owner)
    if endpoint.is_active:
        endpoint.is_active = False
        endpoint.disabled_at = timezone.now()
        endpoint.save(update_fields=["is_active", "disabled_at"])
    return endpoint


# --- Events (the outbox) --------------------------------------------------------------------


def task_summary(task: Task) -> dict[str, Any]:
    """What every event says about its task (no big columns but the answer)."""
    return {
        "id": task.pk,
        "title": task.title,
        "agent": task.agent,
        "status": task.status,
        "is_open": task.is_open,
        "requires_user_action": task.requires_user_action,
        "validation_outcome": task.validation_outcome or None,
        "attempt_count": task.attempt_count,
        "max_attempts": task.max_attempts,
        "version": task.version,
        "final_answer": task.final_answer,
        "url": f"/api/v1/tasks/{task.pk}",
    }


@functools.cache
def _live_endpoints() -> Prepared:
    """(id, events) of an owner's active endpoints whose token (if any) is not revoked;
    compiled once (this runs in every transition)."""
    return Prepared(
        WebhookEndpoint.objects.filter(owner_id=MARKER_ID, is_active=True)
        .filter(Q(api_token__isnull=True) | Q(api_token__revoked_at__isnull=True))
        .values_list("id", "events"),
        owner_id=MARKER_ID,
    )


def _subscribed(task: Task, event_types: list[str]) -> list[WebhookEndpoint]:
    ids = [
        pk
        for pk, events in _live_endpoints().rows(owner_id=task.owner_id)
        if any(t in (events or []) for t in event_types)
    ]
    if not ids:
        return []
    return list(WebhookEndpoint.objects.filter(pk__in=ids))


def webhook_events_for_transition(
    *, task: Task, from_status: str, to_status: str, actor_kind: str, reason: str
) -> list[WebhookDelivery]:
    """Write the deliveries a status change causes, in the caller's transaction, and send
    their jobs after commit. Connected to ``task_transitioned`` (tasks_app.registrations)."""
    verdict = from_status == TaskStatus.VALIDATING and actor_kind == "validator"
    event_types = _event_types(to_status, verdict=verdict)
    if not event_types:
        return []
    endpoints = _subscribed(task, event_types)
    validation = None
    # The verdict is read only when some endpoint listens (the common case,
    # no endpoint, costs one query, not two).
    if verdict and endpoints:
        validation = validation_summary(task, task.attempt_count)
        if validation is None:  # no verdict stored (validation skipped): no such event
            event_types.remove(WebhookEvent.VALIDATION_COMPLETED)
            endpoints = [e for e in endpoints if any(t in (e.events or []) for t in event_types)]
    if not endpoints or not event_types:
        return []
    now = timezone.now()
    base: dict[str, Any] = {
        "task": task_summary(task),
        "from_status": from_status,
        "to_status": to_status,
        "reason": reason,
        "actor_kind": actor_kind,
    }
    if actor_kind == "user":
        # A person's decision, with its comment: a remark on satisfied, a reason to
        # abandon, what to revise.
        base["decision"] = _decision(task)
    payloads = {
        event_type: _payload(event_type, base, now=now, validation=validation, task=task)
        for event_type in event_types
    }
    deliveries = [
        _delivery(endpoint, task, event_type, payloads[event_type], now)
        for event_type in event_types  # validation.completed before the status event
        for endpoint in endpoints
        if event_type in (endpoint.events or [])
    ]
    _store_and_send(deliveries)
    return deliveries


def _delivery(
    endpoint: WebhookEndpoint, task: Task | None, event_type: str, payload: str, now: datetime
) -> WebhookDelivery:
    """One delivery of ``payload`` to ``endpoint``, due now, with a fresh message id."""
    return WebhookDelivery(
        endpoint=endpoint,
        task=task,
        event_type=event_type,
        msg_id=f"msg_{secrets.token_hex(16)}",
        payload=payload,
        next_attempt_at=now,
        created_at=now,
    )


def _registered_event(event_type: str) -> None:
    """Refuse an event no other app registered (tasks_app's own have their writers)."""
    if event_type not in registered_event_names():
        raise ValueError(f"not an event another app registered: {event_type}")


def webhook_events_for_task(
    *, task: Task, event_type: str, data: dict[str, Any]
) -> list[WebhookDelivery]:
    """Write the deliveries of an event another app registered about ``task`` (e.g.
    evidence_app's ``audit.opened``) to the endpoints of the task's owner subscribed to
    it, in the caller's transaction, and send them after commit. The event's data is the
    task's summary, then ``data`` as it is (``{"audit": ...}``)."""
    _registered_event(event_type)
    endpoints = _subscribed(task, [event_type])
    if not endpoints:
        return []
    now = timezone.now()
    body = {
        "type": event_type,
        "timestamp": now.isoformat(),
        "data": {"task": task_summary(task), **data},
    }
    payload = json.dumps(body, cls=DjangoJSONEncoder, separators=(",", ":"))
    deliveries = [_delivery(endpoint, task, event_type, payload, now) for endpoint in endpoints]
    _store_and_send(deliveries)
    return deliveries


def _operator_endpoints(event_type: str) -> list[WebhookEndpoint]:
    """Operators' live endpoints subscribed to ``event_type``."""
    operators = Q(owner__is_superuser=True) | Q(owner__groups__name=OPERATORS)
    live = (
        WebhookEndpoint.objects.filter(operators, is_active=True)
        .filter(Q(api_token__isnull=True) | Q(api_token__revoked_at__isnull=True))
        .distinct()
        .order_by("id")
    )
    return [endpoint for endpoint in live if event_type in (endpoint.events or [])]


def webhook_events_for_operators(*, event_type: str, data: dict[str, Any]) -> list[WebhookDelivery]:
    """Write the deliveries of an event another app registered that names no task (e.g.
    evidence_app's ``auto_accept.approved``, about a judge) to the operators' endpoints
    subscribed to it, in the caller's transaction, and send them after commit. Its
    deliveries have no task; ``data`` is the event's data as it is (``{"judge": ...}``)."""
    _registered_event(event_type)
    endpoints = _operator_endpoints(event_type)
    if not endpoints:
        return []
    now = timezone.now()
    body = {"type": event_type, "timestamp": now.isoformat(), "data": data}
    payload = json.dumps(body, cls=DjangoJSONEncoder, separators=(",", ":"))
    deliveries = [_delivery(endpoint, None, event_type, payload, now) for endpoint in endpoints]
    _store_and_send(deliveries)
    return deliveries


def webhook_events_for_trace(*, trace: Any, reason: str, **_: Any) -> list[WebhookDelivery]:
    """``trace.unusable`` for an OTLP trace that names one of its owner's tasks and could
    not become an attempt, with the reason, in the caller's transaction (connected to
    ``tasks_app.intake.signals.trace_unusable``). A trace that names no task is listed by
    ``GET /otlp/traces`` only: a delivery belongs to a task."""
    task = trace.task
    if task is None:
        return []
    endpoints = _subscribed(task, [WebhookEvent.TRACE_UNUSABLE])
    if not endpoints:
        return []
    now = timezone.now()
    body = {
        "type": WebhookEvent.TRACE_UNUSABLE.value,
        "timestamp": now.isoformat(),
        "data": {
            "task": task_summary(task),
            "trace": {"trace_id": trace.trace_id, "state": "unusable", "error": reason},
        },
    }
    payload = json.dumps(body, cls=DjangoJSONEncoder, separators=(",", ":"))
    deliveries = [
        _delivery(endpoint, task, WebhookEvent.TRACE_UNUSABLE, payload, now)
        for endpoint in endpoints
    ]
    _store_and_send(deliveries)
    return deliveries


def _decision(task: Task) -> dict[str, Any] | None:
    decision = last_decision_on(task.pk)
    if decision is None:
        return None
    return {
        "id": decision.pk,
        "action": decision.action,
        "comment": decision.comment,
        "author": decision.author.get_username() if decision.author else None,
    }


def _event_types(to_status: str, *, verdict: bool) -> list[str]:
    """The events a change causes, in delivery order: the verdict, then the status."""
    event_types: list[str] = []
    if verdict:
        event_types.append(WebhookEvent.VALIDATION_COMPLETED)
    if to_status in EVENT_FOR_STATUS:
        event_types.append(EVENT_FOR_STATUS[to_status])
    return event_types


def _payload(
    event_type: str,
    base: dict[str, Any],
    *,
    now: datetime,
    validation: dict[str, Any] | None,
    task: Task,
) -> str:
    data: dict[str, Any] = dict(base)
    if event_type == WebhookEvent.VALIDATION_COMPLETED:
        data["validation"] = validation
    if event_type == WebhookEvent.TASK_NEEDS_REVISION:
        data["revision"] = revision_feedback(task, actor_kind=base["actor_kind"])
    body = {"type": event_type, "timestamp": now.isoformat(), "data": data}
    return json.dumps(body, cls=DjangoJSONEncoder, separators=(",", ":"))


def _store_and_send(deliveries: list[WebhookDelivery]) -> None:
    """Insert the deliveries one by one, in order (ids follow the event order, which is
    the delivery order), and send one job per (endpoint, task) pair after the commit."""
    for delivery in deliveries:
        delivery.save()
    pairs = sorted({(d.endpoint_id, d.task_id) for d in deliveries})

    def send() -> None:
        for endpoint_id, task_id in pairs:
            deliver_later(endpoint_id=endpoint_id, task_id=task_id)

    transaction.on_commit(send)


# The delivery job's name (tasks_app.jobs registers it; sent by name, so this module does
# not import the jobs that import it).
DELIVER_WEBHOOKS_JOB = "tasks_app.deliver_webhooks"


def deliver_later(*, endpoint_id: int, task_id: int | None, countdown: float = 0) -> None:
    """Send the delivery job of one (endpoint, task) pair (task None: the endpoint's
    events about no task, e.g. a judge's)."""
    try:
        app.tasks[DELIVER_WEBHOOKS_JOB].apply_async(
            (endpoint_id, task_id), countdown=countdown or None
        )
    except Exception:
        # The broker is down: the rows are stored and the sweeper sends them later.
        log.warning("could not queue webhook job for endpoint %s", endpoint_id, exc_info=True)


@transaction.atomic
def webhook_delivery_resend(*, delivery_id: int, owner: Any) -> WebhookDelivery:
    """ "Send again": put a delivery back in the queue now, whatever became of it."""
    delivery = WebhookDelivery.objects.select_for_update().get(
        pk=delivery_id, endpoint__owner=owner
    )
    delivery.status = DeliveryStatus.PENDING
    delivery.next_attempt_at = timezone.now()
    delivery.locked_until = None
    delivery.save(update_fields=["status", "next_attempt_at", "locked_until"])
    transaction.on_commit(
        lambda: deliver_later(endpoint_id=delivery.endpoint_id, task_id=delivery.task_id)
    )
    return delivery


# --- Sending --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PostResult:
    status_code: int | None
    latency_ms: int
    error: str = ""
    excerpt: str = ""
    refused: bool = False

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300

    @property
    def retryable(self) -> bool:
        """Timeouts, connection errors, 429 and 5xx; never other 4xx, nor a refused URL."""
        if self.refused:
            return False
        if self.status_code is None:
            return True
        return self.status_code == 429 or self.status_code >= 500


def sign_headers(*, secret: str, msg_id: str, payload: str, now: Any = None) -> dict[str, str]:
    """The Standard Webhooks headers for one attempt."""
    now = now or timezone.now()
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(msg_id, now, payload),
    }


def post_delivery(delivery: WebhookDelivery, *, transport: Any = None) -> PostResult:
    """POST the signed payload to the endpoint, to the address checked by the SSRF guard
    (the connection goes to that address: no DNS rebinding between check and connect)."""
    endpoint = delivery.endpoint
    parts = urlsplit(endpoint.url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    started = time.monotonic()
    try:
        address = resolve_webhook_address(host, port)
    except WebhookRefused as exc:
        # An unresolvable host may come back (a connection error: retried); a
        # non-public address is refused for good.
        return PostResult(None, 0, error=str(exc), refused=str(exc).startswith("refused"))
    pinned_host = f"[{address}]" if ":" in address else address
    pinned = urlunsplit((parts.scheme, f"{pinned_host}:{port}", parts.path or "/", parts.query, ""))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Host": host if parts.port is None else f"{host}:{parts.port}",
        **sign_headers(secret=endpoint.secret, msg_id=delivery.msg_id, payload=delivery.payload),
    }
    try:
        with httpx.Client(
            transport=transport, timeout=settings.WEBHOOK_TIMEOUT_SECONDS, follow_redirects=False
        ) as client:
            response = client.post(
                pinned,
                content=delivery.payload.encode(),
                headers=headers,
                extensions={"sni_hostname": host},
            )
            excerpt = response.text[:RESPONSE_EXCERPT_CHARS]
    except httpx.TimeoutException as exc:
        latency = int((time.monotonic() - started) * 1000)
        return PostResult(None, latency, error=f"timeout: {type(exc).__name__}")
    except httpx.HTTPError as exc:
        latency = int((time.monotonic() - started) * 1000)
        return PostResult(None, latency, error=f"connection error: {type(exc).__name__}: {exc}")
    latency = int((time.monotonic() - started) * 1000)
    return PostResult(response.status_code, latency, excerpt=excerpt)


def retry_delay(attempt_count: int) -> float:
    """Exponential backoff with jitter: half the capped delay fixed, half random."""
    base = settings.WEBHOOK_RETRY_BASE_SECONDS * (2 ** max(attempt_count - 1, 0))
    capped = min(base, settings.WEBHOOK_RETRY_MAX_SECONDS)
    return capped / 2 + random.uniform(0, capped / 2)  # noqa: S311 (jitter, not security)


def _record(delivery: WebhookDelivery, result: PostResult, *, now: Any) -> str:
    """Store the attempt and the delivery's new state; returns the outcome."""
    window_end = delivery.created_at + timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_SECONDS)
    if result.delivered:
        outcome = "delivered"
    elif result.retryable and now < window_end:
        outcome = "retry"
    else:
        outcome = "gave_up"
    attempt_count = delivery.attempt_count + 1
    fields: dict[str, Any] = {
        "attempt_count": attempt_count,
        "locked_until": None,
        "last_status_code": result.status_code,
        "last_error": result.error,
    }
    if outcome == "delivered":
        fields.update(status=DeliveryStatus.DELIVERED, delivered_at=now)
    elif outcome == "retry":
        fields["next_attempt_at"] = now + timedelta(seconds=retry_delay(attempt_count))
    else:
        fields["status"] = DeliveryStatus.FAILED
    with transaction.atomic():
        WebhookDeliveryAttempt.objects.create(
            delivery=delivery,
            attempted_at=now,
            status_code=result.status_code,
            latency_ms=result.latency_ms,
            error=result.error,
            response_excerpt=result.excerpt,
            outcome=outcome,
        )
        WebhookDelivery.objects.filter(pk=delivery.pk).update(**fields)
    for name, value in fields.items():
        setattr(delivery, name, value)
    return outcome


def webhook_send_pending(*, endpoint_id: int, task_id: int | None, transport: Any = None) -> str:
    """Send the pending deliveries of one (endpoint, task) pair, oldest first, stopping
    at one that must wait for a retry (per-task order). Safe to run twice at once: each
    delivery is claimed before it is sent. Returns what stopped it."""
    sent = 0
    while True:
        head = (
            WebhookDelivery.objects.select_related("endpoint")
            .filter(
                Q(task_id=task_id) if task_id is not None else Q(task__isnull=True),
                endpoint_id=endpoint_id,
                status=DeliveryStatus.PENDING,
            )
            .order_by("id")
            .first()
        )
        if head is None:
            return f"idle after {sent}"
        if not head.endpoint.is_active:
            return "endpoint disabled"
        now = timezone.now()
        if head.next_attempt_at > now:
            return "waiting for retry"
        # Claim with a conditional UPDATE: a retry job, the sweeper and a redelivered job
        # may all arrive for the same pair; only one of them posts this delivery, and
        # the next delivery is not posted before this one is settled (order).
        lease = now + timedelta(seconds=settings.WEBHOOK_TIMEOUT_SECONDS * 3 + 30)
        claimed = (
            WebhookDelivery.objects.filter(
                pk=head.pk, status=DeliveryStatus.PENDING, next_attempt_at__lte=now
            )
            .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
            .update(locked_until=lease)
        )
        if not claimed:
            return "busy"
        result = post_delivery(head, transport=transport)
        outcome = _record(head, result, now=timezone.now())
        sent += 1
        if outcome == "retry":
            delay = max((head.next_attempt_at - timezone.now()).total_seconds(), 0)
            deliver_later(endpoint_id=endpoint_id, task_id=task_id, countdown=delay)
            return f"retry in {delay:.2f}s"


def webhook_sweep(*, now: Any = None) -> list[tuple[int, int | None]]:
    """Send the job again for every (endpoint, task) pair with a due, unclaimed pending
    delivery: a job lost with the broker, or a worker killed mid-send, delays an event
    but never loses it."""
    now = now or timezone.now()
    pairs: list[tuple[int, int | None]] = list(
        WebhookDelivery.objects.filter(
            status=DeliveryStatus.PENDING, next_attempt_at__lte=now, endpoint__is_active=True
        )
        .filter(Q(locked_until__isnull=True) | Q(locked_until__lt=now))
        .values_list("endpoint_id", "task_id")
        .distinct()
        .order_by("endpoint_id", "task_id")[:SWEEP_BATCH]
    )
    for endpoint_id, task_id in pairs:
        deliver_later(endpoint_id=endpoint_id, task_id=task_id)
    return pairs
