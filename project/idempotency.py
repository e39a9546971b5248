"""The HTTP side of ``Idempotency-Key``, shared by every app's API: the header as the
OpenAPI document states it, and the response a replayed request gets. Where the
responses are stored, and the rule of one effect per key, is tasks_app's
(``tasks_app.api.idempotency.idempotent_call``, offered to other apps through
``tasks_app.actions``); each app's API layer joins the two (its ``run_idempotent``)."""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse
from ninja import Header
from ninja.responses import NinjaJSONEncoder

__all__ = ["IDEMPOTENCY_HELP", "MAX_KEY_LENGTH", "idempotency_header", "replayable_response"]

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
