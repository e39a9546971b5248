"""External agents and webhooks API.

- ``POST /tasks/{id}/attempts``: a whole external attempt in one body, or the start of a
  streamed one; ``.../attempts/{n}/events`` appends; ``.../attempts/{n}/finish`` ends it.
  Bodies may be gzip-encoded (``Content-Encoding: gzip``) and have their own size limit,
  ``EXTERNAL_ATTEMPT_MAX_BYTES`` (the API's request guard applies it). An
  ``Idempotency-Key`` header makes a retried request return the first response.
- ``/webhooks``: register endpoints (the secret is in the creation response only), list,
  disable, read their delivery log and send a delivery again.

Writes go through ``tasks_app.intake.external`` / ``tasks_app.notifications.webhooks``
only. Only the task's owner (the external agent's account) submits attempts.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja import Query, Router, Schema, Status
from ninja.errors import AuthorizationError, ValidationError
from pydantic import ConfigDict, Field, GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic_core import PydanticCustomError, core_schema

from project.errors import InvalidInput
from project.idempotency import idempotency_header, run_idempotent
from project.pagination import LimitOffset
from project.schemas import NO_NUL, error_responses
from tasks_app.intake import external, external_input
from tasks_app.notifications import webhooks
from tasks_app.notifications.event_names import listed_event_names
from tasks_app.notifications.models import WebhookDelivery, WebhookEndpoint
from tasks_app.workflow.selectors import visible_tasks

router = Router(tags=["external agents"])


class ExternalRunOut(Schema):
    id: int
    key: str
    kind: str
    node_id: str
    status: str


class ExternalAttemptOut(Schema):
    task_id: int
    attempt_index: int
    task_status: str
    runs: list[ExternalRunOut]
    message_count: int
    tool_result_count: int


# http or https, a host (letters, digits, dots, dashes, or a bracketed IPv6 literal), an
# optional port, then a path, query or nothing; no credentials, no whitespace or NUL.
WEBHOOK_URL_PATTERN = (
    r"^[Hh][Tt][Tt][Pp][Ss]?://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?"
    r"([/?#][^\s\x00]*)?$"
)


class _EventName:
    """A webhook event the API names: tasks_app's own and those other apps registered
    (``event_names.listed_event_names``), read when a body is checked and when the
    document is made (after every app has registered its events). Checked as a
    ``Literal`` of them would be: the same error, the same schema."""

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(_listed_event)

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> dict[str, Any]:
        return {"enum": listed_event_names(), "type": "string"}


def _listed_event(value: Any) -> str:
    names = listed_event_names()
    if isinstance(value, str) and value in names:
        return value
    quoted = [repr(name) for name in names]
    expected = f"{', '.join(quoted[:-1])} or {quoted[-1]}" if len(quoted) > 1 else quoted[0]
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


WebhookEventName = Annotated[str, _EventName()]


class WebhookIn(Schema):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        min_length=1,
        max_length=2000,
        pattern=WEBHOOK_URL_PATTERN,
        json_schema_extra={"format": "uri"},
        description="http(s) URL with a host and no credentials; the host must resolve "
        "to public addresses only (422 otherwise: the one rule a schema cannot state)",
    )
    events: list[WebhookEventName] | None = Field(
        None, description="Events to receive (default: all)", max_length=20
    )
    description: str = Field("", max_length=200, pattern=NO_NUL)


class WebhookOut(Schema):
    id: int
    url: str
    events: list[str]
    description: str
    is_active: bool
    created_at: datetime
    disabled_at: datetime | None


class WebhookCreatedOut(WebhookOut):
    secret: str = Field(description="Signing secret (whsec_...): shown in this response only")


class WebhookListOut(Schema):
    items: list[WebhookOut]
    count: int


class DeliveryAttemptOut(Schema):
    attempted_at: datetime
    status_code: int | None
    latency_ms: int
    error: str
    outcome: str


class DeliveryOut(Schema):
    id: int
    msg_id: str
    event_type: str
    task_id: int | None = Field(
        description="The task the event is about; null for an event about a judge "
        "(auto_accept.approved)"
    )
    status: str
    attempt_count: int
    next_attempt_at: datetime | None
    created_at: datetime
    delivered_at: datetime | None
    attempts: list[DeliveryAttemptOut]


class DeliveryListOut(Schema):
    items: list[DeliveryOut]
    count: int


# --- Attempts ---------------------------------------------------------------------------


def _own_task(user: Any, task_id: int) -> None:
    """404 unless the user may see the task, 403 unless it is theirs."""
    task = visible_tasks(user).filter(pk=task_id).values("owner_id").first()
    if task is None:
        raise Http404(f"Task {task_id} not found.")
    if task["owner_id"] != user.pk:
        raise AuthorizationError(message="Only the task's owner submits its attempts.")


def _run_idempotent(
    request: HttpRequest, *, endpoint: str, key: str | None, status: int, work: Any
) -> JsonResponse:
    """``run_idempotent`` for the attempt endpoints: a field the service refuses is a 422
    naming it, like a schema error."""

    def produce() -> tuple[int, Any]:
        try:
            return status, work()
        except external.FieldError as exc:
            raise ValidationError(
                [
                    {
                        "loc": ("body", "payload", *exc.field.split(".")),
                        "msg": exc.field_message,
                        "type": "value_error",
                    }
                ]
            ) from None

    return run_idempotent(request, endpoint=endpoint, key=key, work=produce)


@router.post(
    "/tasks/{task_id}/attempts",
    response={201: ExternalAttemptOut, **error_responses(403, 404, 409)},
    summary="Submit an external attempt (whole, or start a streamed one)",
)
def submit_attempt(
    request: HttpRequest,
    task_id: int,
    payload: external_input.AttemptIn,
    idempotency_key: str | None = idempotency_header(),
) -> JsonResponse:
    _own_task(request.auth, task_id)  # type: ignore[attr-defined]
    return _run_idempotent(
        request,
        endpoint=f"POST /tasks/{task_id}/attempts",
        key=idempotency_key,
        status=201,
        work=lambda: external.external_attempt_submit(
            task_id=task_id,
            attempt=payload,
            actor=request.auth,  # type: ignore[attr-defined]
        ),
    )


@router.post(
    "/tasks/{task_id}/attempts/{attempt_index}/events",
    response={200: ExternalAttemptOut, **error_responses(403, 404, 409)},
    summary="Append a streamed attempt's messages and tool results (also a heartbeat)",
)
def append_attempt_events(
    request: HttpRequest,
    task_id: int,
    attempt_index: int,
    payload: external_input.EventsIn,
    idempotency_key: str | None = idempotency_header(),
) -> JsonResponse:
    _own_task(request.auth, task_id)  # type: ignore[attr-defined]
    return _run_idempotent(
        request,
        endpoint=f"POST /tasks/{task_id}/attempts/{attempt_index}/events",
        key=idempotency_key,
        status=200,
        work=lambda: external.external_attempt_append(
            task_id=task_id,
            attempt_index=attempt_index,
            events=payload,
            actor=request.auth,  # type: ignore[attr-defined]
        ),
    )


@router.post(
    "/tasks/{task_id}/attempts/{attempt_index}/finish",
    response={200: ExternalAttemptOut, **error_responses(403, 404, 409)},
    summary="Finish a streamed attempt with its answer; validation runs",
)
def finish_attempt(
    request: HttpRequest,
    task_id: int,
    attempt_index: int,
    payload: external_input.FinishIn,
    idempotency_key: str | None = idempotency_header(),
) -> JsonResponse:
    _own_task(request.auth, task_id)  # type: ignore[attr-defined]
    return _run_idempotent(
        request,
        endpoint=f"POST /tasks/{task_id}/attempts/{attempt_index}/finish",
        key=idempotency_key,
        status=200,
        work=lambda: external.external_attempt_finish(
            task_id=task_id,
            attempt_index=attempt_index,
            finish=payload,
            actor=request.auth,  # type: ignore[attr-defined]
        ),
    )


# --- Webhooks ---------------------------------------------------------------------------


def webhook_out(endpoint: WebhookEndpoint) -> dict[str, Any]:
    return {
        "id": endpoint.pk,
        "url": endpoint.url,
        "events": list(endpoint.events or []),
        "description": endpoint.description,
        "is_active": endpoint.is_active,
        "created_at": endpoint.created_at,
        "disabled_at": endpoint.disabled_at,
    }


def delivery_out(delivery: WebhookDelivery) -> dict[str, Any]:
    return {
        "id": delivery.pk,
        "msg_id": delivery.msg_id,
        "event_type": delivery.event_type,
        "task_id": delivery.task_id,
        "status": delivery.status,
        "attempt_count": delivery.attempt_count,
        "next_attempt_at": delivery.next_attempt_at if delivery.status == "pending" else None,
        "created_at": delivery.created_at,
        "delivered_at": delivery.delivered_at,
        "attempts": [
            {
                "attempted_at": a.attempted_at,
                "status_code": a.status_code,
                "latency_ms": a.latency_ms,
                "error": a.error,
                "outcome": a.outcome,
            }
            for a in delivery.attempts.all()
        ],
    }


def _own_endpoint(user: Any, endpoint_id: int) -> WebhookEndpoint:
    endpoint = WebhookEndpoint.objects.filter(pk=endpoint_id, owner=user).first()
    if endpoint is None:
        raise Http404(f"Webhook {endpoint_id} not found.")
    return endpoint


@router.post(
    "/webhooks",
    response={201: WebhookCreatedOut, **error_responses()},
    summary="Register a webhook endpoint (the secret is shown in this response only)",
    tags=["webhooks"],
)
def create_webhook(request: HttpRequest, response: HttpResponse, payload: WebhookIn) -> Status:
    response["Cache-Control"] = "no-store"  # the secret is in this response only
    user = request.auth  # type: ignore[attr-defined]
    try:
        endpoint = webhooks.webhook_endpoint_create(
            owner=user,
            url=payload.url,
            events=list(payload.events) if payload.events else None,
            description=payload.description,
            api_token=getattr(request, "api_token", None),
        )
    except InvalidInput as exc:
        field, _, message = exc.message.partition(": ")
        raise ValidationError(
            [{"loc": ("body", "payload", field), "msg": message, "type": "value_error"}]
        ) from None
    return Status(201, {**webhook_out(endpoint), "secret": endpoint.secret})


@router.get(
    "/webhooks",
    response={200: WebhookListOut, **error_responses()},
    summary="Your webhook endpoints",
    tags=["webhooks"],
)
def list_webhooks(request: HttpRequest) -> dict[str, Any]:
    endpoints = WebhookEndpoint.objects.filter(owner=request.auth)  # type: ignore[attr-defined]
    items = [webhook_out(e) for e in endpoints]
    return {"items": items, "count": len(items)}


@router.get(
    "/webhooks/{webhook_id}",
    response={200: WebhookOut, **error_responses(404)},
    summary="One webhook endpoint",
    tags=["webhooks"],
)
def get_webhook(request: HttpRequest, webhook_id: int) -> dict[str, Any]:
    return webhook_out(_own_endpoint(request.auth, webhook_id))  # type: ignore[attr-defined]


@router.post(
    "/webhooks/{webhook_id}/disable",
    response={200: WebhookOut, **error_responses(404)},
    summary="Disable a webhook endpoint: no more deliveries; it and its delivery log stay readable",
    tags=["webhooks"],
)
def disable_webhook(request: HttpRequest, webhook_id: int) -> dict[str, Any]:
    user = request.auth  # type: ignore[attr-defined]
    _own_endpoint(user, webhook_id)
    return webhook_out(webhooks.webhook_endpoint_disable(endpoint_id=webhook_id, owner=user))


@router.get(
    "/webhooks/{webhook_id}/deliveries",
    response={200: DeliveryListOut, **error_responses(404)},
    summary="The delivery log: every event and every attempt (newest first)",
    tags=["webhooks"],
)
def list_deliveries(
    request: HttpRequest, webhook_id: int, query: Query[LimitOffset.Input]
) -> dict[str, Any]:
    endpoint = _own_endpoint(request.auth, webhook_id)  # type: ignore[attr-defined]
    deliveries = endpoint.deliveries.defer("payload").order_by("-id")
    count = deliveries.count()
    page = deliveries.prefetch_related("attempts")[query.offset : query.offset + query.limit]
    return {"items": [delivery_out(d) for d in page], "count": count}


@router.post(
    "/webhooks/deliveries/{delivery_id}/resend",
    response={202: DeliveryOut, **error_responses(404)},
    summary="Send a delivery again (same webhook-id)",
    tags=["webhooks"],
)
def resend_delivery(request: HttpRequest, delivery_id: int) -> Status:
    user = request.auth  # type: ignore[attr-defined]
    try:
        delivery = webhooks.webhook_delivery_resend(delivery_id=delivery_id, owner=user)
    except WebhookDelivery.DoesNotExist:
        raise Http404(f"Delivery {delivery_id} not found.") from None
    return Status(202, delivery_out(delivery))
