"""The cheaper OTLP acknowledgement path: spans of traces a request creates go to the
table by one COPY, the others through the conflict-skipping insert; the traces are
created and locked by plain statements; attributes are decoded without a call per value.
Every path must still store a span exactly once."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection, transaction
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    KeyValue,
    KeyValueList,
)

from tasks_app.intake.otlp.decode import SpanRecord, attributes
from tasks_app.intake.otlp.ingest import otlp_ingest
from tasks_app.models import OtlpSpan, OtlpTrace

RESOURCE = {"service.name": "agent-ü", "deployment": {"region": "eu"}}


def _record(
    trace_id: str, span_id: str, parent: str = "", *, resource: dict[str, Any] | None = None
) -> SpanRecord:
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name="span",
        kind=1,
        start_ns=1,
        end_ns=2,
        attributes={"gen_ai.operation.name": "chat", "note": "Grüße ☃", "n": 3},
        events=[{"name": "e", "time_ns": 5, "attributes": {"k": "v"}}] if parent else [],
        resource=RESOURCE if resource is None else resource,
        scope="test",
        status_code=0,
        status_message="",
        dropped={"attributes": 2} if parent else {},
    )


def _request(trace_id: str) -> list[SpanRecord]:
    root = "1" * 16
    return [_record(trace_id, root), *(_record(trace_id, str(n) * 16, root) for n in (2, 3))]


@pytest.mark.django_db
def test_an_exporters_retry_of_a_request_that_created_its_traces_stores_nothing_twice(
    requester: Any,
) -> None:
    """issue 28, item 1: the first request creates its traces (its spans take the direct
    path), the resent request finds them and skips every span."""
    records = _request("a" * 32) + _request("b" * 32)
    first = otlp_ingest(user=requester, records=records)
    again = otlp_ingest(user=requester, records=_request("a" * 32) + _request("b" * 32))

    assert (first.accepted, again.accepted) == (6, 0)
    assert OtlpSpan.objects.filter(trace__owner=requester).count() == 6
    counts = OtlpTrace.objects.filter(owner=requester).values_list("span_count", flat=True)
    assert sorted(counts) == [3, 3]


@pytest.mark.django_db
def test_a_span_sent_twice_in_one_request_for_a_new_trace_is_stored_once(
    requester: Any,
) -> None:
    """issue 28, item 1: a new trace cannot conflict with stored spans, but a request
    can repeat a span; it is stored and counted once, the first copy kept."""
    records = _request("c" * 32)
    repeated = _record("c" * 32, "2" * 16, "1" * 16, resource={"copy": "second"})
    result = otlp_ingest(user=requester, records=[*records, repeated])

    assert result.accepted == 3
    assert OtlpSpan.objects.filter(span_id="2" * 16).count() == 1
    assert OtlpSpan.objects.get(span_id="2" * 16).resource == RESOURCE
    assert OtlpTrace.objects.get(owner=requester).span_count == 3


@pytest.mark.django_db
def test_new_and_known_traces_in_one_request_store_their_json_values_whole(
    requester: Any,
) -> None:
    """issue 28, item 1: one request with a new trace and a trace already stored: the
    new spans and the unseen span of the known trace are stored, its resent span is not,
    and the JSON columns (non-ASCII text, a shared resource, events, dropped counts) read
    back as they were sent."""
    otlp_ingest(user=requester, records=_request("d" * 32)[:2])
    mixed = _request("d" * 32) + _request("e" * 32)
    result = otlp_ingest(user=requester, records=mixed)

    assert result.accepted == 4
    traces = {t.trace_id[0]: t for t in OtlpTrace.objects.filter(owner=requester)}
    assert (traces["d"].span_count, traces["e"].span_count) == (3, 3)
    span = OtlpSpan.objects.get(trace=traces["e"], span_id="3" * 16)
    assert span.attributes == {"gen_ai.operation.name": "chat", "note": "Grüße ☃", "n": 3}
    assert span.resource == RESOURCE
    assert span.events == [{"name": "e", "time_ns": 5, "attributes": {"k": "v"}}]
    assert span.dropped == {"attributes": 2}
    root = OtlpSpan.objects.get(trace=traces["e"], span_id="1" * 16)
    assert (root.events, root.dropped) == ([], {})


@pytest.mark.postgres(reason="row locks between two connections; SQLite has one writer")
@pytest.mark.django_db(transaction=True)
def test_a_request_waiting_on_a_trace_another_creates_sees_it_and_skips_its_spans(
    requester: Any,
) -> None:
    """issue 28, item 1: request A creates a trace and holds its transaction open;
    request B with spans of the same trace waits, then finds the trace A committed (not
    a missing trace, not a second one) and stores only the span A did not."""
    a_inserted = threading.Event()
    release_a = threading.Event()
    outcomes: dict[str, Any] = {}

    def request_a() -> None:
        try:
            with transaction.atomic():
                outcomes["a"] = otlp_ingest(user=requester, records=_request("f" * 32)[:2])
                a_inserted.set()
                release_a.wait(timeout=10)
        finally:
            connection.close()

    def request_b() -> None:
        try:
            outcomes["b"] = otlp_ingest(user=requester, records=_request("f" * 32))
        except Exception as exc:  # the assertion below names it
            outcomes["b"] = exc
        finally:
            connection.close()

    a = threading.Thread(target=request_a)
    a.start()
    assert a_inserted.wait(timeout=10)
    b = threading.Thread(target=request_b)
    b.start()
    b.join(timeout=1)
    assert b.is_alive()  # waiting on A's new trace
    release_a.set()
    a.join(timeout=10)
    b.join(timeout=10)

    assert outcomes["a"].accepted == 2
    assert getattr(outcomes["b"], "accepted", outcomes["b"]) == 1
    trace = OtlpTrace.objects.get(owner=requester)
    assert trace.span_count == 3
    assert trace.spans.count() == 3


def test_attributes_decode_every_value_kind_and_replace_nul() -> None:
    """issue 28, item 1: the inlined string and integer cases and the other kinds give
    the values they gave before; NUL becomes U+FFFD in keys, strings and nested values."""

    def kv(key: str, **value: Any) -> KeyValue:
        return KeyValue(key=key, value=AnyValue(**value))

    pairs = [
        kv("s\x00", string_value="a\x00b"),
        kv("i", int_value=-7),
        kv("d", double_value=1.5),
        kv("b", bool_value=True),
        kv("raw", bytes_value=b"\x00\xff"),
        kv("list", array_value=ArrayValue(values=[AnyValue(string_value="x\x00")])),
        kv("map", kvlist_value=KeyValueList(values=[kv("k", int_value=1)])),
        KeyValue(key="empty"),
    ]
    assert attributes(pairs) == {
        "s\ufffd": "a\ufffdb",
        "i": -7,
        "d": 1.5,
        "b": True,
        "raw": "AP8=",
        "list": ["x\ufffd"],
        "map": {"k": 1},
        "empty": None,
    }
