"""Property tests (issue 34 item 2): whatever an exporter or an agent sends, the OTLP
endpoint (protobuf and JSON) and the attempts API answer below 500, and a stored trace's
assembly returns an outcome instead of raising. Hypothesis generates the bodies: OTLP
export requests with arbitrary ids, times and attribute values (NaN, infinities, lone
surrogates, deep arrays and key-value lists, JSON-looking strings), raw bytes, and
attempt bodies with arbitrary JSON in their free-form objects."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

from tasks_app.accounts.auth import api_token_create
from tasks_app.intake.otlp.assembly import otlp_trace_assemble
from tasks_app.models import OtlpTrace
from tasks_app.workflow import services

pytestmark = [pytest.mark.django_db, pytest.mark.finding(34, 2)]

ENDPOINT = "/api/v1/otlp/v1/traces"
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# Text with the characters that broke things: NUL, lone surrogates, brackets.
text = st.text(
    alphabet=st.one_of(
        st.characters(codec=None),
        st.sampled_from(["\x00", "\ud800", "\udfff", "[", "{", '"', "\\"]),
    ),
    max_size=30,
)
floats = st.floats(allow_nan=True, allow_infinity=True)
json_strings = st.one_of(
    st.sampled_from(
        [
            "[" * 3000 + "]" * 3000,
            '[{"role": "user", "content": NaN}]',
            '[{"role": "user", "content": "\\ud800"}]',
            '{"a": 1e999}',
            '[{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]',
        ]
    ),
    text,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | floats | text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(text, children, max_size=4),
    max_leaves=12,
)
KEYS = [
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.usage.input_tokens",
    "gen_ai.tool.call.arguments",
    "evidentia.task_id",
    "evidentia.final",
]


def _utf8(value: str) -> bool:
    """Protobuf's strings are UTF-8: one with a lone surrogate cannot even be built (the
    OTLP/JSON documents still carry them, in ``noise``)."""
    return not any("\ud800" <= c <= "\udfff" for c in value)


def _any_value(depth: int = 0) -> st.SearchStrategy[AnyValue]:
    scalar = st.one_of(
        json_strings.filter(_utf8).map(lambda v: AnyValue(string_value=v)),
        st.integers(-(2**63), 2**63 - 1).map(lambda v: AnyValue(int_value=v)),
        floats.map(lambda v: AnyValue(double_value=v)),
        st.booleans().map(lambda v: AnyValue(bool_value=v)),
        st.binary(max_size=8).map(lambda v: AnyValue(bytes_value=v)),
    )
    if depth >= 3:
        return scalar
    return st.one_of(
        scalar,
        st.lists(st.deferred(lambda: _any_value(depth + 1)), max_size=3).map(_array),
    )


def _array(values: list[AnyValue]) -> AnyValue:
    value = AnyValue()
    value.array_value.values.extend(values)
    return value


attribute = st.builds(
    lambda key, value: KeyValue(key=key, value=value),
    st.one_of(st.sampled_from(KEYS), st.text(max_size=10)),
    _any_value(),
)


@st.composite
def export_requests(draw: Any) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    resource_spans = request.resource_spans.add()
    resource_spans.resource.attributes.extend(draw(st.lists(attribute, max_size=2)))
    scope_spans = resource_spans.scope_spans.add()
    trace_id = draw(
        st.one_of(
            st.binary(min_size=16, max_size=16).filter(any),
            st.sampled_from([b"\x00" * 16, b"", b"\x02" * 15]),
        )
    )
    for _ in range(draw(st.integers(1, 3))):
        span = scope_spans.spans.add()
        span.trace_id = trace_id
        # Mostly usable ids, so most spans reach the store; sometimes broken ones.
        span.span_id = draw(
            st.one_of(st.binary(min_size=8, max_size=8).filter(any), st.binary(max_size=9))
        )
        span.parent_span_id = draw(st.sampled_from([b"", b"", b"\x03" * 8, b"\x04" * 3]))
        span.name = draw(st.text(max_size=20))
        start = draw(st.integers(0, 2**63))
        span.start_time_unix_nano = start
        span.end_time_unix_nano = max(0, min(start + draw(st.integers(-(2**10), 2**40)), 2**64 - 1))
        span.attributes.extend(draw(st.lists(attribute, max_size=5)))
    return request


def _json_document(request: ExportTraceServiceRequest, noise: Any) -> str:
    """The OTLP/JSON form of ``request`` (hex ids), with arbitrary JSON put beside it."""
    spans = []
    for span in request.resource_spans[0].scope_spans[0].spans:
        spans.append(
            {
                "traceId": span.trace_id.hex(),
                "spanId": span.span_id.hex(),
                "parentSpanId": span.parent_span_id.hex(),
                "name": span.name,
                "startTimeUnixNano": str(span.start_time_unix_nano),
                "endTimeUnixNano": span.end_time_unix_nano,
                "attributes": [
                    {"key": kv.key, "value": _json_value(kv.value)} for kv in span.attributes
                ],
                "extra": noise,
            }
        )
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]})


def _json_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return {"stringValue": value.string_value}
    if kind == "int_value":
        return {"intValue": str(value.int_value)}
    if kind == "double_value":
        return {"doubleValue": value.double_value}
    if kind == "bool_value":
        return {"boolValue": value.bool_value}
    if kind == "array_value":
        return {"arrayValue": {"values": [_json_value(v) for v in value.array_value.values]}}
    return {"bytesValue": ""}


@pytest.fixture
def client(requester: Any) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {api_token_create(user=requester, name='p')[1]}")


def _assemble_everything() -> None:
    for pk in OtlpTrace.objects.filter(state="collecting").values_list("pk", flat=True):
        otlp_trace_assemble(trace_pk=pk)  # returns an outcome whatever the trace holds


@SETTINGS
@given(request=export_requests())
def test_no_otlp_protobuf_request_gets_a_5xx(client: Client, request: Any) -> None:
    """Issue 34 finding 2: arbitrary protobuf export requests answer 200, 400 or 429."""
    response = client.post(
        ENDPOINT, request.SerializeToString(), content_type="application/x-protobuf"
    )
    assert response.status_code < 500, response.content
    _assemble_everything()


@SETTINGS
@given(request=export_requests(), noise=json_values)
def test_no_otlp_json_request_gets_a_5xx(client: Client, request: Any, noise: Any) -> None:
    """Issue 34 finding 2: the same requests in OTLP/JSON, with arbitrary JSON beside the
    fields and NaN/Infinity tokens where the encoder writes them."""
    response = client.post(
        ENDPOINT, _json_document(request, noise), content_type="application/json"
    )
    assert response.status_code < 500, response.content
    _assemble_everything()


@SETTINGS
@given(body=st.binary(max_size=200), json_type=st.booleans())
def test_no_raw_otlp_body_gets_a_5xx(client: Client, body: bytes, json_type: bool) -> None:
    """Issue 34 finding 2: bytes that are no export request at all."""
    content_type = "application/json" if json_type else "application/x-protobuf"
    response = client.post(ENDPOINT, body, content_type=content_type)
    assert response.status_code < 500, response.content


attempt_bodies = st.fixed_dictionaries(
    {
        "final_answer": text,
        "runs": st.lists(
            st.fixed_dictionaries(
                {"model": st.sampled_from(["acme:agent", "x"])},
                optional={
                    "payload": json_values,
                    "output_text": text,
                    "usage": st.fixed_dictionaries(
                        {}, optional={"input_tokens": json_values, "details": json_values}
                    ),
                    "tool_results": st.lists(
                        st.fixed_dictionaries(
                            {"tool_name": text},
                            optional={"arguments": json_values, "payload": json_values},
                        ),
                        max_size=2,
                    ),
                },
            ),
            max_size=2,
        ),
    }
)


@SETTINGS
@given(body=attempt_bodies)
def test_no_attempt_body_gets_a_5xx(client: Client, requester: Any, body: Any) -> None:
    """Issue 34 finding 2: arbitrary attempt bodies (NaN/Infinity written by the encoder,
    lone surrogates escaped) answer below 500."""
    task = services.task_create(owner=requester, request="Q?", agent="external")
    response = client.post(
        f"/api/v1/tasks/{task.pk}/attempts", json.dumps(body), content_type="application/json"
    )
    assert response.status_code < 500, response.content


@SETTINGS
@given(events=st.lists(json_values, max_size=3), arguments=json_values)
def test_no_event_body_gets_a_5xx(
    client: Client, requester: Any, events: Any, arguments: Any
) -> None:
    """Issue 34 finding 2: arbitrary streamed events, and tool results whose arguments
    hold arbitrary JSON."""
    task = services.task_create(owner=requester, request="Q?", agent="external")
    started = client.post(
        f"/api/v1/tasks/{task.pk}/attempts",
        json.dumps({"stream": True, "runs": [{"model": "acme:agent"}]}),
        content_type="application/json",
    )
    assert started.status_code < 500
    n = started.json().get("attempt_index", 1)
    tool_result = {"type": "tool_result", "run": "main", "tool_name": "t", "arguments": arguments}
    response = client.post(
        f"/api/v1/tasks/{task.pk}/attempts/{n}/events",
        json.dumps({"events": [*events, tool_result]}),
        content_type="application/json",
    )
    assert response.status_code < 500, response.content
