"""Idempotency keys of the API's writes."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone


class IdempotencyKey(models.Model):
    """The first successful response to a request sent with an ``Idempotency-Key``
    header, so a retried request returns it instead of doing the work again.
    Scoped to the user and the endpoint; kept ``IDEMPOTENCY_KEY_TTL_SECONDS`` (24 h)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="idempotency_keys"
    )
    # e.g. "POST /tasks/17/attempts": the same key on another endpoint is another request.
    endpoint = models.CharField(max_length=200)
    key = models.CharField(max_length=255)
    # SHA-256 of the request body: the same key with another body is refused, not replayed.
    request_sha256 = models.CharField(max_length=64)
    response_status = models.PositiveSmallIntegerField()
    response_body = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "endpoint", "key"], name="idempotency_user_endpoint_key_unique"
            )
        ]
        indexes = [models.Index(fields=["created_at"], name="idempotency_created")]

    def __str__(self) -> str:
        return f"{self.endpoint} [{self.key}]"
