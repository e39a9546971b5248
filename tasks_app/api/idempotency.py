"""``Idempotency-Key`` for creating endpoints (reusable by any POST): where the responses
are stored (``idempotent_call``, registered into ``project.idempotency`` when Django
starts, whose ``run_idempotent`` every app's API calls); the header and the replayed
response are ``project.idempotency``'s.

A request sent with the header runs once: its successful response is stored with the
key in the same transaction as the work, and a retry with the same key (same user, same
endpoint, same body) gets that response back instead of doing the work again. The same
key with another body is refused (422). Keys live ``IDEMPOTENCY_KEY_TTL_SECONDS``
(24 h); only a row older than that is replaced. Error responses are not stored: the
work was rolled back, so a retry runs again.

One effect per key, also under concurrency: the key's row is inserted *first* in the
work's transaction, before the work. A concurrent request with the same key blocks on
that insert (the unique constraint) until the first one ends: if it committed, the
insert fails and the stored response is returned (replayed); if it rolled back, the
second one does the work. A request that waits longer than
``IDEMPOTENCY_IN_FLIGHT_WAIT_SECONDS`` gets 409 ``idempotency_key_in_use`` and may retry
with the same key.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, OperationalError, connection, transaction
from django.utils import timezone

from project.errors import DomainError
from project.idempotency import MAX_KEY_LENGTH
from tasks_app.api.models import IdempotencyKey


class IdempotencyKeyReused(DomainError):
    code = "idempotency_key_reused"
    http_status = 422


class IdempotencyKeyInUse(DomainError):
    code = "idempotency_key_in_use"
    http_status = 409


class _KeyTaken(Exception):
    """The key's row was committed by a concurrent request while this one waited."""


class IdempotencyKeyInvalid(DomainError):
    code = "invalid_idempotency_key"
    http_status = 422


def _fresh_after() -> Any:
    return timezone.now() - timedelta(seconds=settings.IDEMPOTENCY_KEY_TTL_SECONDS)


def _stored(*, user: Any, endpoint: str, key: str, digest: str) -> tuple[int, Any] | None:
    row = IdempotencyKey.objects.filter(
        user=user, endpoint=endpoint, key=key, created_at__gte=_fresh_after()
    ).first()
    if row is None:
        return None
    if row.request_sha256 != digest:
        raise IdempotencyKeyReused(
            "Idempotency-Key was already used for a different request body on this endpoint."
        )
    return row.response_status, row.response_body


def idempotent_call(
    *,
    user: Any,
    endpoint: str,
    key: str | None,
    body: bytes,
    produce: Callable[[], tuple[int, Any]],
) -> tuple[int, Any, bool]:
    """Run ``produce`` (which returns ``(status, json-able body)``) at most once per key.
    Returns ``(status, body, replayed)``. Without a key, it simply runs ``produce``."""
    if key is None:
        status, response = produce()
        return status, response, False
    key = key.strip()
    if not key or len(key) > MAX_KEY_LENGTH:
        raise IdempotencyKeyInvalid(
            f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters (a UUID is a good key)."
        )
    digest = hashlib.sha256(body).hexdigest()
    stored = _stored(user=user, endpoint=endpoint, key=key, digest=digest)
    if stored is not None:
        return stored[0], stored[1], True
    try:
        with transaction.atomic():
            row = _claim(user=user, endpoint=endpoint, key=key, digest=digest)
            status, response = produce()
            response = json.loads(json.dumps(response, cls=DjangoJSONEncoder))
            if 200 <= status < 300:
                row.response_status, row.response_body = status, response
                row.save(update_fields=["response_status", "response_body"])
            else:
                row.delete()
    except _KeyTaken:
        # A concurrent request with the same key committed first: ours did nothing.
        stored = _stored(user=user, endpoint=endpoint, key=key, digest=digest)
        if stored is None:  # committed and already expired: only a retry can tell
            raise IdempotencyKeyInUse(_IN_USE) from None
        return stored[0], stored[1], True
    return status, response, False


_IN_USE = (
    "A request with this Idempotency-Key is still in progress; retry with the same key "
    "to get its response."
)


def _claim(*, user: Any, endpoint: str, key: str, digest: str) -> IdempotencyKey:
    """Take the key inside the work's transaction, before the work: replace only an
    expired row, then insert ours (still without a response). A concurrent holder of
    the key makes the insert wait, at most ``IDEMPOTENCY_IN_FLIGHT_WAIT_SECONDS``."""
    wait_ms = int(settings.IDEMPOTENCY_IN_FLIGHT_WAIT_SECONDS * 1000)
    try:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("SELECT current_setting('lock_timeout')")
                previous = cursor.fetchone()[0]
                cursor.execute("SELECT set_config('lock_timeout', %s, true)", [f"{wait_ms}ms"])
            IdempotencyKey.objects.filter(
                user=user, endpoint=endpoint, key=key, created_at__lt=_fresh_after()
            ).delete()
            row = IdempotencyKey.objects.create(
                user=user,
                endpoint=endpoint,
                key=key,
                request_sha256=digest,
                response_status=0,
                response_body={},
            )
            if connection.vendor == "postgresql":
                cursor.execute("SELECT set_config('lock_timeout', %s, true)", [previous])
    except IntegrityError:
        raise _KeyTaken from None
    except OperationalError as exc:
        if not _is_lock_wait(exc):
            raise
        raise IdempotencyKeyInUse(_IN_USE) from None
    return row


def _is_lock_wait(exc: OperationalError) -> bool:
    """PostgreSQL's lock_timeout (55P03) or SQLite's busy timeout."""
    if getattr(exc.__cause__, "sqlstate", None) == "55P03":
        return True
    return "database is locked" in str(exc)


def idempotency_purge(*, now: Any = None) -> int:
    """Delete stored responses older than their time to live; returns how many."""
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.IDEMPOTENCY_KEY_TTL_SECONDS)
    deleted, _ = IdempotencyKey.objects.filter(created_at__lt=cutoff).delete()
    return deleted


__all__ = ["idempotency_purge", "idempotent_call"]
