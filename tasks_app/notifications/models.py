"""Webhook endpoints and deliveries, and the transactional outbox of jobs."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from tasks_app.notifications.event_names import WebhookEvent, webhook_event_choices
from tasks_app.workflow.models import Task

__all__ = [
    "DeliveryStatus",
    "WebhookDelivery",
    "WebhookDeliveryAttempt",
    "WebhookEndpoint",
    "WebhookEvent",
]


class WebhookEndpoint(models.Model):
    """A URL that receives signed event deliveries for its owner's tasks.

    The secret is kept in clear: signing needs it. It is shown to its owner once, when
    the endpoint is registered, and never again by the API or the UI."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhook_endpoints"
    )
    # The token it was registered with, if any: revoking the token stops its deliveries.
    api_token = models.ForeignKey(
        "tasks_app.ApiToken",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="webhooks",
    )
    url = models.CharField(max_length=2000)
    description = models.CharField(max_length=200, blank=True, default="")
    events = models.JSONField(default=list)
    secret = models.CharField(max_length=100)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    disabled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "is_active"], name="webhook_owner_active")]

    def __str__(self) -> str:
        return f"webhook {self.pk} -> {self.url}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DELIVERED = "delivered", "Delivered"
    FAILED = "failed", "Failed"


class WebhookDelivery(models.Model):
    """One event for one endpoint: the outbox row, written in the transaction of the
    status change that caused it, and sent by a job after commit. Its
    ``msg_id`` is the ``webhook-id`` of every attempt, so receivers can de-duplicate."""

    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    # Null for an event about a judge rather than a task (``auto_accept.approved``).
    task = models.ForeignKey(
        Task,
        on_delete=models.CASCADE,
        related_name="webhook_deliveries",
        null=True,
        blank=True,
    )
    # tasks_app's own events and those other apps register (``event_names``).
    event_type = models.CharField(max_length=40, choices=webhook_event_choices)
    msg_id = models.CharField(max_length=64, unique=True)
    # The exact JSON text that is signed and sent (the same bytes on every attempt).
    payload = models.TextField()
    status = models.CharField(
        max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempt_count = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    # A sender holds the delivery until then (claimed with a conditional UPDATE).
    locked_until = models.DateTimeField(null=True, blank=True)
    last_status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            models.Index(fields=["endpoint", "task", "status", "id"], name="delivery_queue"),
            models.Index(fields=["status", "next_attempt_at"], name="delivery_due"),
        ]

    def __str__(self) -> str:
        return f"{self.event_type} for task {self.task_id} -> endpoint {self.endpoint_id}"


class WebhookDeliveryAttempt(models.Model):
    """One HTTP request of a delivery: what the receiver answered, or why it did not."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempts")
    attempted_at = models.DateTimeField(default=timezone.now)
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    response_excerpt = models.TextField(blank=True, default="")
    # "retry" (will be tried again), "delivered", "gave_up" (4xx or past the window).
    outcome = models.CharField(max_length=16, default="")

    class Meta:
        ordering = ["attempted_at", "id"]

    def __str__(self) -> str:
        return f"delivery {self.delivery_id} attempt at {self.attempted_at}: {self.status_code}"
