"""OTLP ingestion throughput (issue 15): one export request of 1,000 spans (100 traces of
10 GenAI spans) through the whole endpoint (auth, decode, bulk insert, commit, assembly
jobs published), against a baseline of the same span rows written with one ``COPY``."""

from __future__ import annotations

import os
import secrets
import statistics
import time
from typing import Any

from bench.common import Figure, Target, result

ENDPOINT = "/api/v1/otlp/v1/traces"
QUESTION_MESSAGES = (
    '[{"role":"user","parts":[{"type":"text","content":"What is the training budget?"}]}]'
)
ANSWER_MESSAGES = '[{"role":"assistant","parts":[{"type":"text","content":"1,750 EUR"}]}]'


def _export_request(traces: int, spans_per_trace: int) -> bytes:
    """A protobuf export request built with the official messages: per trace one
    ``invoke_agent`` root, ``chat`` spans and ``execute_tool`` spans with results."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

    def kv(key: str, value: Any) -> KeyValue:
        if isinstance(value, int):
            return KeyValue(key=key, value=AnyValue(int_value=value))
        return KeyValue(key=key, value=AnyValue(string_value=str(value)))

    now = time.time_ns()
    spans = []
    for _ in range(traces):
        trace_id = secrets.token_bytes(16)
        root_id = secrets.token_bytes(8)
        spans.append(
            Span(
                trace_id=trace_id,
                span_id=root_id,
                name="invoke_agent researcher",
                start_time_unix_nano=now,
                end_time_unix_nano=now + 5_000_000,
                attributes=[
                    kv("gen_ai.operation.name", "invoke_agent"),
                    kv("gen_ai.agent.name", "researcher"),
                    kv("final_result", "The budget is 1,750 EUR."),
                ],
            )
        )
        for index in range(spans_per_trace - 1):
            chat = index % 3 == 0
            attributes = (
                [
                    kv("gen_ai.operation.name", "chat"),
                    kv("gen_ai.request.model", "gpt-4.1"),
                    kv("gen_ai.provider.name", "openai"),
                    kv("gen_ai.input.messages", QUESTION_MESSAGES),
                    kv("gen_ai.output.messages", ANSWER_MESSAGES),
                    kv("gen_ai.usage.input_tokens", 120),
                    kv("gen_ai.usage.output_tokens", 12),
                ]
                if chat
                else [
                    kv("gen_ai.operation.name", "execute_tool"),
                    kv("gen_ai.tool.name", "search_knowledge"),
                    kv("gen_ai.tool.call.id", f"call-{index}"),
                    kv("gen_ai.tool.call.arguments", '{"query": "training budget"}'),
                    kv("gen_ai.tool.call.result", "The annual training budget is 1,750 EUR. " * 20),
                ]
            )
            spans.append(
                Span(
                    trace_id=trace_id,
                    span_id=secrets.token_bytes(8),
                    parent_span_id=root_id,
                    name="chat gpt-4.1" if chat else "execute_tool search_knowledge",
                    start_time_unix_nano=now + index * 1000,
                    end_time_unix_nano=now + index * 1000 + 500,
                    attributes=attributes,
                )
            )
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource={"attributes": [kv("service.name", "bench-agent")]},
                scope_spans=[ScopeSpans(scope={"name": "pydantic-ai"}, spans=spans)],
            )
        ]
    )
    return request.SerializeToString()


def _copy_baseline(body: bytes, user: Any) -> float:
    """Seconds to write the same span rows (and their trace rows) with one COPY each,
    the floor any row-by-row or ORM path is measured against."""
    import json

    from django.db import connection, transaction

    from tasks_app.intake.otlp.decode import PROTOBUF, parse_request, spans_of
    from tasks_app.models import OtlpTrace

    records, _ = spans_of(parse_request(body, PROTOBUF))
    trace_ids = sorted({r.trace_id for r in records})
    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        traces = OtlpTrace.objects.bulk_create(
            [OtlpTrace(trace_id=t, owner=user) for t in trace_ids]
        )
        pk = {t.trace_id: t.pk for t in traces}
        columns = (
            "trace_id, span_id, parent_span_id, name, operation, start_ns, end_ns, attributes, "
            "events, resource, scope, status_code, status_message, dropped, late, received_at"
        )
        with cursor.copy(f"COPY tasks_app_otlpspan ({columns}) FROM STDIN") as copy:  # type: ignore[attr-defined]
            for r in records:
                copy.write_row(
                    (
                        pk[r.trace_id],
                        r.span_id,
                        r.parent_span_id,
                        r.name,
                        r.operation,
                        r.start_ns,
                        r.end_ns,
                        json.dumps(r.attributes),
                        json.dumps(r.events),
                        json.dumps(r.resource),
                        r.scope,
                        r.status_code,
                        r.status_message,
                        json.dumps(r.dropped),
                        False,
                        "now",
                    )
                )
    return time.perf_counter() - started


def run(*, traces: int = 100, spans_per_trace: int = 10, repeats: int = 7) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from tasks_app.accounts.auth import api_token_create
    from tasks_app.models import OtlpTrace

    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "false")
    user, _ = get_user_model().objects.get_or_create(username="bench-otlp")
    _, raw = api_token_create(user=user, name="bench")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    n_spans = traces * spans_per_trace
    ingest, copies, sizes = [], [], []
    for _ in range(repeats):
        body = _export_request(traces, spans_per_trace)
        sizes.append(len(body))
        started = time.perf_counter()
        response = client.post(ENDPOINT, body, content_type="application/x-protobuf", secure=True)
        ingest.append(time.perf_counter() - started)
        if response.status_code != 200:
            raise RuntimeError(f"OTLP endpoint answered {response.status_code}")
        copies.append(_copy_baseline(_export_request(traces, spans_per_trace), user))
    OtlpTrace.objects.filter(owner=user).delete()
    p50 = statistics.median(ingest)
    copy_p50 = statistics.median(copies)
    figures = [
        Figure(
            "otlp",
            f"ingest {n_spans} spans ({traces} traces x {spans_per_trace}), one request, p50",
            round(p50 * 1000, 1),
            "ms",
            "the same rows with one COPY",
            round(copy_p50 * 1000, 1),
            note=f"{statistics.median(sizes) / 1024:.0f} KB protobuf; {repeats} runs; "
            f"{n_spans / p50:,.0f} spans/s",
        )
    ]
    targets = [
        Target(
            "otlp",
            f"{n_spans} spans in one request accepted in < 1 s",
            f"{p50 * 1000:.0f} ms p50, max {max(ingest) * 1000:.0f} ms",
            p50 < 1.0,
        )
    ]
    return result(
        figures=figures,
        targets=targets,
        details={"ingest_s": ingest, "copy_s": copies, "body_bytes": sizes},
    )
