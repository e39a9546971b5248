"""``Idempotency-Key`` for every app's API: the header as the OpenAPI document states
it, a write run at most once per key (``run_idempotent``) and the response a replayed
request gets. Where the responses are stored, and the rule of one effect per key under
concurrency, is registered by an app when Django starts (``register_store``: tasks_app's
``tasks_app.api.idempotency.idempotent_call``); ``project/`` reads none of its tables."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, JsonResponse
from ninja import Header
from ninja.responses import NinjaJSONEncoder

__all__ = [
    "IDEMPOTENCY_HELP",
    "MAX_KEY_LENGTH",
    "idempotency_header",
    "register_store",
    "replayable_response",
    "run_idempotent",
]

MAX_KEY_LENGTH = 255

IDEMPOTENCY_HELP = (
    "Any unique string (a UUID). A retry with the same key and body within 24 h returns "
    "the first response (header Idempotent-Replayed: true) instead of doing it twice."
)


def idempotency_header() -> Any:
    """The optional ``Idempotency-Key`` header of a creating endpoint, with its length
    limits stated in the OpenAPI document."""
    return Header(
        None,
        alias="Idempotency-Key",
        description=IDEMPOTENCY_HELP,
        min_length=1,
        max_length=MAX_KEY_LENGTH,
    )


def replayable_response(code: int, body: Any, *, replayed: bool) -> JsonResponse:
    """The response of an idempotent write: ``body`` rendered as ninja would (the stored
    one is plain JSON that the output schema's resolvers cannot read again), marked
    ``Idempotent-Replayed: true`` when it is the first response given back."""
    response = JsonResponse(body, status=code, safe=False, encoder=NinjaJSONEncoder)
    if replayed:
        response["Idempotent-Replayed"] = "true"
    return response


class IdempotentCall(Protocol):
    def __call__(
        self,
        *,
        user: Any,
        endpoint: str,
        key: str | None,
        body: bytes,
        produce: Callable[[], tuple[int, Any]],
    ) -> tuple[int, Any, bool]:
        """Run ``produce`` (a status and a JSON-able body) at most once per ``(user,
        endpoint, key)`` and the request's body: ``(status, body, replayed)``."""
        ...


_store: list[IdempotentCall] = []


def register_store(call: IdempotentCall) -> None:
    """Where the responses of idempotent writes are kept (tasks_app registers its
    ``idempotent_call`` in ``TasksAppConfig.ready``)."""
    _store[:] = [call]


def run_idempotent(
    request: HttpRequest,
    *,
    endpoint: str,
    key: str | None,
    work: Callable[[], tuple[int, Any]],
) -> JsonResponse:
    """``work`` (a status and the response's plain data) at most once per
    ``Idempotency-Key``: a retry gets the first response back, marked
    ``Idempotent-Replayed: true``. The body is rendered here, as ninja would, because
    the stored one is plain JSON that the output schema's resolvers cannot read again."""
    if not _store:
        raise ImproperlyConfigured(
            "No store of idempotent responses is registered: tasks_app must be in INSTALLED_APPS."
        )
    code, body, replayed = _store[0](
        user=request.auth,  # type: ignore[attr-defined]
        endpoint=endpoint,
        key=key,
        body=request.body,
        produce=work,
    )
    return replayable_response(code, body, replayed=replayed)
