"""Decoding OTLP/HTTP trace export requests (protobuf or JSON) into
plain span records, with the official ``opentelemetry-proto`` messages.

OTLP/JSON differs from protobuf's canonical JSON mapping in one place: trace and span
ids are hex strings, not base64. They are converted before ``json_format`` parses the
document, so both encodings go through the same protobuf message.
"""

from __future__ import annotations

import base64
import binascii
import math
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from google.protobuf import json_format
from google.protobuf.message import DecodeError
from google.rpc.status_pb2 import Status as RpcStatus
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from project import strict_json

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
# google.rpc.Code.INVALID_ARGUMENT
INVALID_ARGUMENT = 3


class UndecodableRequest(Exception):
    """The body is not an OTLP trace export request (answered with 400). The message
    quotes the client's text with any unencodable character escaped, so the answer
    itself can always be encoded."""

    def __init__(self, message: str) -> None:
        super().__init__(message.encode("utf-8", "backslashreplace").decode("utf-8"))


class _NonFiniteDouble(ValueError):
    """A ``doubleValue`` that is NaN or infinite: JSON (and jsonb) has no such number."""


@dataclass
class SpanRecord:
    """One span as stored: ids in lower-case hex, attributes as plain JSON values."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[dict[str, Any]]
    resource: dict[str, Any]
    scope: str
    status_code: int
    status_message: str
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def operation(self) -> str:
        return str(self.attributes.get("gen_ai.operation.name") or "")


@dataclass
class RejectedSpan:
    trace_id: str
    span_id: str
    reason: str


def media_type(content_type: str | None) -> str:
    value = (content_type or "").split(";", 1)[0].strip().lower()
    return JSON if value == JSON else PROTOBUF if value == PROTOBUF else value


def _hex_ids_to_base64(node: Any) -> Any:
    """OTLP/JSON ids are hex; protobuf's JSON mapping wants base64 for bytes fields."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key in ("traceId", "spanId", "parentSpanId", "trace_id", "span_id") and isinstance(
                value, str
            ):
                try:
                    value = base64.b64encode(bytes.fromhex(value)).decode() if value else ""
                except ValueError:
                    raise UndecodableRequest(f"{key} {ascii(value[:40])} is not hex") from None
            elif key == "parent_span_id" and isinstance(value, str):
                try:
                    value = base64.b64encode(bytes.fromhex(value)).decode() if value else ""
                except ValueError:
                    raise UndecodableRequest(f"{key} {ascii(value[:40])} is not hex") from None
            else:
                value = _hex_ids_to_base64(value)
            out[key] = value
        return out
    if isinstance(node, list):
        return [_hex_ids_to_base64(item) for item in node]
    return node


def _parse_json(body: bytes, request: ExportTraceServiceRequest) -> ExportTraceServiceRequest:
    try:
        # OTLP/JSON nests twice per level of an attribute value (value, kvlistValue), and
        # five levels hold the attributes of a span.
        document = strict_json.loads(body, max_depth=2 * settings.API_MAX_JSON_DEPTH + 8)
    except strict_json.UnsafeJson as exc:
        raise UndecodableRequest(f"refused: {exc}") from None
    except ValueError as exc:
        raise UndecodableRequest(f"not JSON: {exc}") from None
    if not isinstance(document, dict):
        raise UndecodableRequest("an OTLP/JSON request is a JSON object")
    try:
        json_format.ParseDict(_hex_ids_to_base64(document), request, ignore_unknown_fields=True)
    except (json_format.ParseError, binascii.Error, ValueError) as exc:
        raise UndecodableRequest(f"not an OTLP/JSON trace request: {exc}") from None
    return request


def parse_request(body: bytes, content_type: str) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    if content_type == PROTOBUF:
        try:
            request.ParseFromString(body)
        except (DecodeError, ValueError, RecursionError) as exc:
            raise UndecodableRequest(f"not an OTLP protobuf trace request: {exc}") from None
        return request
    if content_type == JSON:
        try:
            return _parse_json(body, request)
        except RecursionError:
            raise UndecodableRequest("not an OTLP/JSON trace request: nested too deeply") from None
    raise UndecodableRequest(
        f"unsupported Content-Type '{content_type}' (use {PROTOBUF} or {JSON})"
    )


def text(value: str) -> str:
    """PostgreSQL text and jsonb cannot hold NUL; it becomes U+FFFD, nothing else changes."""
    return value.replace("\x00", "\ufffd")


def any_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value.replace("\x00", "\ufffd")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    if kind == "double_value" and not math.isfinite(value.double_value):
        raise _NonFiniteDouble(str(value.double_value))
    return getattr(value, kind)


def attributes(pairs: Any) -> dict[str, Any]:
    """Key-value pairs as a dict of plain JSON values, NUL replaced as ``text`` does. The
    string and integer values (nearly all of a GenAI span's) are read here, without a call
    per value: this runs for every attribute of every span of an export request."""
    out: dict[str, Any] = {}
    for pair in pairs:
        if not isinstance(pair, KeyValue):
            continue
        value = pair.value
        kind = value.WhichOneof("value")
        if kind == "string_value":
            item: Any = value.string_value.replace("\x00", "\ufffd")
        elif kind == "int_value":
            item = value.int_value
        else:
            try:
                item = any_value(value)
            except _NonFiniteDouble as exc:
                raise _NonFiniteDouble(f"attribute {pair.key!r}: doubleValue {exc}") from None
        out[pair.key.replace("\x00", "\ufffd")] = item
    return out


def _check(span: Span) -> str | None:
    """Why a span cannot be used, or None."""
    if len(span.trace_id) != 16 or not any(span.trace_id):
        return "trace_id must be 16 bytes and not all zero"
    if len(span.span_id) != 8 or not any(span.span_id):
        return "span_id must be 8 bytes and not all zero"
    if span.parent_span_id and len(span.parent_span_id) != 8:
        return "parent_span_id must be empty or 8 bytes"
    if span.end_time_unix_nano and span.end_time_unix_nano < span.start_time_unix_nano:
        return "end_time_unix_nano is before start_time_unix_nano"
    return None


def spans_of(request: ExportTraceServiceRequest) -> tuple[list[SpanRecord], list[RejectedSpan]]:
    """Every span of the request as a record, and the ones that cannot be used with why.
    ``UndecodableRequest`` (400, nothing stored) for a NaN or infinite ``doubleValue``,
    naming the span and the attribute: JSON has no such number."""
    try:
        return _spans_of(request)
    except _NonFiniteDouble as exc:
        raise UndecodableRequest(
            f"{exc} is not a finite number (NaN and Infinity cannot be stored; "
            "send a finite number, a string or nothing)"
        ) from None


def _spans_of(request: ExportTraceServiceRequest) -> tuple[list[SpanRecord], list[RejectedSpan]]:
    records: list[SpanRecord] = []
    rejected: list[RejectedSpan] = []
    for resource_spans in request.resource_spans:
        resource = attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = text(scope_spans.scope.name)
            for span in scope_spans.spans:
                problem = _check(span)
                if problem is not None:
                    rejected.append(RejectedSpan(span.trace_id.hex(), span.span_id.hex(), problem))
                    continue
                try:
                    records.append(_record(span, resource, scope))
                except _NonFiniteDouble as exc:
                    raise _NonFiniteDouble(f"span {span.span_id.hex()}: {exc}") from None
    return records, rejected


def _record(span: Span, resource: dict[str, Any], scope: str) -> SpanRecord:
    return SpanRecord(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex(),
        name=text(span.name),
        kind=int(span.kind),
        start_ns=int(span.start_time_unix_nano),
        end_ns=int(span.end_time_unix_nano),
        attributes=attributes(span.attributes),
        events=[
            {
                "name": text(event.name),
                "time_ns": int(event.time_unix_nano),
                "attributes": attributes(event.attributes),
            }
            for event in span.events
        ],
        resource=resource,
        scope=scope,
        status_code=int(span.status.code),
        status_message=text(span.status.message),
        dropped={
            name: count
            for name, count in (
                ("attributes", span.dropped_attributes_count),
                ("events", span.dropped_events_count),
                ("links", span.dropped_links_count),
            )
            if count
        },
    )


def encode_response(
    content_type: str, *, rejected: int = 0, message: str = ""
) -> tuple[bytes, str]:
    """An ExportTraceServiceResponse in the request's encoding; partial success only when
    something was rejected (the specification's rule)."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if content_type == JSON:
        return json_format.MessageToJson(response, indent=None).encode(), JSON
    return response.SerializeToString(), PROTOBUF


def encode_status(content_type: str, message: str) -> tuple[bytes, str]:
    """A google.rpc.Status-shaped error body (code, message) in the request's encoding."""
    status = RpcStatus(code=INVALID_ARGUMENT, message=message)
    if content_type == JSON:
        return json_format.MessageToJson(status, indent=None).encode(), JSON
    return status.SerializeToString(), PROTOBUF


# A primary key is a 64-bit signed integer: at most 18 digits always fits.
_MAX_KEY_DIGITS = 18


def is_primary_key(text: str) -> bool:
    """ASCII digits that fit a primary key: ``str.isdigit`` alone accepts "²" and "①",
    which ``int()`` refuses, and other scripts' digits, which it reads."""
    return text.isascii() and text.isdigit() and len(text) <= _MAX_KEY_DIGITS
