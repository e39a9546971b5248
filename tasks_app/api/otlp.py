"""OTLP/HTTP trace ingestion: point an OpenTelemetry exporter at
``/api/v1/otlp`` with ``Authorization: Bearer <token>`` in its headers.

Answers as the OTLP specification says: 200 with an ``ExportTraceServiceResponse`` in the
request's encoding (``partial_success`` listing how many spans were rejected and why), 400
with a ``google.rpc.Status`` for a body that cannot be decoded, 413 over
``OTLP_MAX_BODY_BYTES`` (compressed or inflated; the API's request guard answers it and
nothing is stored), 429 with ``Retry-After``
over ``OTLP_MAX_SPANS_PER_MINUTE``.
"""

from __future__ import annotations

import math
import time
from datetime import datetime
from typing import Any, Literal

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from ninja import Query, Router, Schema
from pydantic import Field

from project.schemas import ErrorOut, error_responses
from tasks_app.intake.models import OtlpTrace
from tasks_app.intake.otlp.decode import (
    JSON,
    PROTOBUF,
    UndecodableRequest,
    encode_response,
    encode_status,
    media_type,
    parse_request,
    spans_of,
)
from tasks_app.intake.otlp.ingest import OTLP_ASSEMBLE_JOB, otlp_ingest
from tasks_app.workflow.services import job_enqueue

router = Router(tags=["otlp"])
OTLP_CONTENT = {
    "application/x-protobuf": {"schema": {"type": "string", "format": "binary"}},
    "application/json": {"schema": {"type": "object"}},
}


def _reply(status: int, body: bytes, content_type: str, **headers: str) -> HttpResponse:
    response = HttpResponse(body, status=status, content_type=content_type)
    for name, value in headers.items():
        response[name.replace("_", "-")] = value
    return response


def _throttled(user_id: int, spans: int) -> float | None:
    """Seconds to wait when this account is over its spans-per-minute budget, else None
    (the spans are counted)."""
    window = int(time.time() // 60)
    key = f"otlp-spans:{user_id}:{window}"
    cache.add(key, 0, timeout=120)
    try:
        used = cache.incr(key, spans)
    except ValueError:  # evicted between add and incr
        cache.set(key, spans, timeout=120)
        used = spans
    if used > settings.OTLP_MAX_SPANS_PER_MINUTE:
        cache.decr(key, spans)
        return 60 - (time.time() % 60)
    return None


@router.post(
    "/otlp/v1/traces",
    summary="Ingest OpenTelemetry traces (OTLP/HTTP, protobuf or JSON)",
    description=(
        "An OTLP/HTTP trace export request (`application/x-protobuf` or `application/json`, "
        "optionally `Content-Encoding: gzip`). Each trace becomes one attempt of an external "
        "task once it is complete: see docs/otlp.md for the mapping. The answer is an "
        "`ExportTraceServiceResponse` in the request's encoding."
    ),
    response={200: Any, 401: ErrorOut, 413: ErrorOut},
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/x-protobuf": {"schema": {"type": "string", "format": "binary"}},
                "application/json": {"schema": {"type": "object"}},
            },
        },
        # OTLP answers in the request's encoding, errors as google.rpc.Status (the OTLP
        # specification), not in the API's JSON error shape.
        "responses": {
            code: {"description": text, "content": OTLP_CONTENT}
            for code, text in (
                (200, "ExportTraceServiceResponse (partial_success lists rejected spans)"),
                (400, "google.rpc.Status: the body is not an OTLP trace export request"),
                (415, "google.rpc.Status: the Content-Type is neither protobuf nor JSON"),
                (429, "google.rpc.Status: over OTLP_MAX_SPANS_PER_MINUTE; see Retry-After"),
            )
        },
    },
)
def export_traces(request: HttpRequest) -> HttpResponse:
    content_type = media_type(request.META.get("CONTENT_TYPE"))
    if content_type not in (PROTOBUF, JSON):
        body, ctype = encode_status(
            JSON, f"unsupported Content-Type '{content_type}' (use {PROTOBUF} or {JSON})"
        )
        return _reply(415, body, ctype)
    # The API's request guard has applied OTLP_MAX_BODY_BYTES (413) and undone gzip
    # (project.request_bodies) by the time the body is read here.
    try:
        records, rejected = spans_of(parse_request(request.body, content_type))
    except UndecodableRequest as exc:
        body, ctype = encode_status(content_type, str(exc))
        return _reply(415 if "Content-Type" in str(exc) else 400, body, ctype)
    user = request.auth  # type: ignore[attr-defined]
    wait = _throttled(user.pk, len(records) + len(rejected))
    if wait is not None:
        body, ctype = encode_status(content_type, "too many spans this minute; retry later")
        return _reply(429, body, ctype, Retry_After=str(max(1, math.ceil(wait))))
    with transaction.atomic():
        result = otlp_ingest(user=user, records=records)
        # One job per distinct wait, not one per trace: 100 traces cost one publish.
        by_wait: dict[float, list[int]] = {}
        for trace_pk, countdown in result.ready:
            by_wait.setdefault(countdown, []).append(trace_pk)
        # Through the outbox: the spans are committed whatever the broker
        # does, so a broker that is down must not turn this answer into a 500; the
        # relay publishes the job when it is back, still after the quiet period.
        for countdown, trace_pks in sorted(by_wait.items()):
            job_enqueue(OTLP_ASSEMBLE_JOB, (trace_pks,), countdown=countdown)
    rejected += result.rejected
    reasons = sorted({r.reason for r in rejected})
    message = ""
    if rejected:
        message = f"{len(rejected)} span(s) rejected: " + "; ".join(reasons[:10])
    body, ctype = encode_response(content_type, rejected=len(rejected), message=message)
    return _reply(200, body, ctype)


class OtlpTraceOut(Schema):
    """A trace sent to the OTLP endpoint and what became of it: ``unusable`` traces say
    why in ``error`` (no GenAI span, no answer, or an assembly that kept failing)."""

    trace_id: str
    state: Literal["collecting", "submitted", "unusable"]
    error: str = Field(description="Why the trace is unusable, or why its last assembly failed")
    assembly_failures: int = Field(description="Assemblies that failed with an error so far")
    span_count: int
    late_span_count: int
    task_id: int | None
    attempt_index: int | None
    first_span_at: datetime
    last_span_at: datetime
    submitted_at: datetime | None


class OtlpTraceList(Schema):
    items: list[OtlpTraceOut]
    count: int


class OtlpTraceFilter(Schema):
    state: Literal["collecting", "submitted", "unusable"] | None = None
    limit: int = Field(50, ge=1, le=200, description="The newest traces first, at most this many")


_TRACE_FIELDS = (
    "trace_id",
    "state",
    "error",
    "assembly_failures",
    "span_count",
    "late_span_count",
    "task_id",
    "attempt_index",
    "first_span_at",
    "last_span_at",
    "submitted_at",
)


@router.get(
    "/otlp/traces",
    response={200: OtlpTraceList, **error_responses()},
    summary="Your OTLP traces and what became of them",
    description=(
        "The traces you sent to `/otlp/v1/traces`, newest first: collecting spans, "
        "submitted as an attempt (`task_id`, `attempt_index`), or unusable with the reason "
        "in `error`. A trace whose assembly fails is tried again "
        "(`OTLP_TRACE_ASSEMBLY_ATTEMPTS` times in all) before it is marked unusable."
    ),
)
def list_traces(request: HttpRequest, filters: Query[OtlpTraceFilter]) -> dict[str, Any]:
    traces = OtlpTrace.objects.filter(owner=request.auth)  # type: ignore[attr-defined]
    if filters.state:
        traces = traces.filter(state=filters.state)
    items = list(traces.order_by("-first_span_at", "-pk").values(*_TRACE_FIELDS)[: filters.limit])
    return {"items": items, "count": len(items)}
