"""The webhook events an endpoint can subscribe to: tasks_app's own (``WebhookEvent``: a
task's status changes, its validation, an unusable trace) and those another app
registers when Django starts (``register_webhook_events``: evidence_app's audit and
auto-accept events, ``evidence_app.trust.webhook_events``). tasks_app stores and sends a
registered event's deliveries (``webhooks.webhook_events_for_task``,
``webhooks.webhook_events_for_operators``) and knows nothing of what it means."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import models


class WebhookEvent(models.TextChoices):
    """tasks_app's own events."""

    TASK_NEEDS_REVIEW = "task.needs_review", "Task needs review"
    TASK_AWAITING_FEEDBACK = "task.awaiting_feedback", "Task awaits feedback"
    TASK_NEEDS_REVISION = "task.needs_revision", "Task needs a revision"
    TASK_CLOSED = "task.closed", "Task closed"
    TASK_FAILED = "task.failed", "Task failed"
    TASK_ABANDONED = "task.abandoned", "Task abandoned"
    VALIDATION_COMPLETED = "validation.completed", "Validation completed"
    # An OTLP trace of a task that could not become an attempt, with the reason.
    TRACE_UNUSABLE = "trace.unusable", "Trace unusable"


@dataclass(frozen=True)
class RegisteredEvent:
    """An event another app sends through tasks_app's webhooks."""

    name: str
    label: str
    # Named in the API's list of events an endpoint may ask for (``WebhookIn.events``);
    # every event is in the default subscription (all events) either way.
    listed: bool = True


_registered: list[RegisteredEvent] = []


def register_webhook_events(events: Iterable[RegisteredEvent]) -> None:
    """Offer ``events`` to endpoints from now on, after those already offered (once,
    however often registered)."""
    known = set(webhook_event_names())
    for event in events:
        if event.name not in known:
            _registered.append(event)
            known.add(event.name)


def registered_event_names() -> list[str]:
    """The events other apps registered, in the order they did."""
    return [event.name for event in _registered]


def webhook_event_choices() -> list[tuple[str, str]]:
    """Every event with its label: tasks_app's own, then the registered ones (the choices
    of ``WebhookDelivery.event_type`` and the account page's)."""
    return [*WebhookEvent.choices, *((event.name, event.label) for event in _registered)]


def webhook_event_names() -> list[str]:
    """Every event an endpoint may subscribe to (the default subscription)."""
    return [name for name, _ in webhook_event_choices()]


def listed_event_names() -> list[str]:
    """The events the API names (``WebhookIn.events``)."""
    return [*WebhookEvent.values, *(event.name for event in _registered if event.listed)]
