"""The intake benchmark's clients (issue 28), each run in its own process: a real
OpenTelemetry SDK pipeline (``TracerProvider`` + ``BatchSpanProcessor`` +
``OTLPSpanExporter``, OTLP/HTTP protobuf) or a plain HTTP client of
``POST /api/v1/tasks/{id}/attempts`` sending the same content. No Django here: a client
knows only the URL, its token and the task ids it answers.

Each client paces itself at ``rate`` traces per second for ``seconds`` (or until its
tasks run out), then flushes, and puts one result dict on its queue: when it started and
finished, what was acknowledged, every acknowledgement's latency, HTTP answers by
status, retries, its own CPU time.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import requests

SPANS_PER_TRACE = 10
ANSWER = "The annual training budget per employee is 1,750 EUR."
TOOL_RESULT = "Training Budget. The annual training budget per employee is 1,750 EUR. " * 20
QUESTION = "What is the annual training budget per employee?"


class CountingSession(requests.Session):
    """A ``requests`` session that counts every HTTP answer by status (the exporter's
    retries included: each is one more request)."""

    def __init__(self) -> None:
        super().__init__()
        self.statuses: Counter[str] = Counter()

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        try:
            response = super().request(*args, **kwargs)
        except requests.RequestException as exc:
            self.statuses[type(exc).__name__] += 1
            raise
        self.statuses[str(response.status_code)] += 1
        return response


def _pace(started: float, done: int, rate: float) -> None:
    """Sleep until trace number ``done`` is due at ``rate`` per second."""
    due = started + done / rate
    delay = due - time.monotonic()
    if delay > 0:
        time.sleep(delay)


def _result(kind: str, started: float, **values: Any) -> dict[str, Any]:
    cpu = time.process_time()
    return {"kind": kind, "started": started, "ended": time.time(), "cpu_s": cpu, **values}


# --- OTLP ------------------------------------------------------------------------------


def _otlp_pipeline(url: str, token: str, index: int) -> tuple[Any, Any, CountingSession, list]:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExportResult

    session = CountingSession()
    acks: list[tuple[float, int, bool]] = []  # (seconds, spans, success) per export call

    class TimedExporter(OTLPSpanExporter):
        """The real exporter, its export call timed: that call is the acknowledgement."""

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            t0 = time.perf_counter()
            outcome = super().export(spans)
            acks.append((time.perf_counter() - t0, len(spans), outcome == SpanExportResult.SUCCESS))
            return outcome

    exporter = TimedExporter(
        endpoint=url, headers={"Authorization": f"Bearer {token}"}, session=session, timeout=30
    )
    provider = TracerProvider(resource=Resource.create({"service.name": f"bench-intake-{index}"}))
    # A queue large enough that the SDK never drops a span: a server that cannot keep up
    # shows as a longer flush, not as spans lost in the client.
    provider.add_span_processor(
        BatchSpanProcessor(
            exporter, max_queue_size=2_000_000, max_export_batch_size=512, schedule_delay_millis=100
        )
    )
    return provider, provider.get_tracer("bench.intake"), session, acks


def _one_trace(tracer: Any, task_id: int, spans_per_trace: int) -> None:
    """One agent run as pydantic-ai would trace it: an ``invoke_agent`` root naming its
    task (``evidentia.final``: assemble at once), then chat and tool spans below it."""
    root_attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "researcher",
        "evidentia.task_id": str(task_id),
        "evidentia.final": True,
        "final_result": ANSWER,
    }
    with tracer.start_as_current_span("invoke_agent researcher", attributes=root_attributes):
        for step in range(spans_per_trace - 1):
            if step % 3 == 0:
                name, attributes = "chat gpt-4.1", _chat_attributes()
            else:
                name, attributes = "execute_tool search_knowledge", _tool_attributes(step)
            with tracer.start_as_current_span(name, attributes=attributes):
                pass


def _chat_attributes() -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4.1",
        "gen_ai.provider.name": "openai",
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]
        ),
        "gen_ai.usage.input_tokens": 120,
        "gen_ai.usage.output_tokens": 12,
    }


def _tool_attributes(step: int) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "search_knowledge",
        "gen_ai.tool.call.id": f"call-{step}",
        "gen_ai.tool.call.arguments": '{"query": "training budget"}',
        "gen_ai.tool.call.result": TOOL_RESULT,
    }


def otlp_client(
    index: int,
    url: str,
    token: str,
    task_ids: list[int],
    seconds: float,
    rate: float,
    spans_per_trace: int,
    out: Any,
) -> None:
    """Export one trace per task at ``rate`` traces/s for ``seconds``, then flush."""
    provider, tracer, session, acks = _otlp_pipeline(url, token, index)
    started = time.time()
    t0 = time.monotonic()
    sent = 0
    for task_id in task_ids:
        if time.monotonic() - t0 >= seconds:
            break
        _one_trace(tracer, task_id, spans_per_trace)
        sent += 1
        _pace(t0, sent, rate)
    generated_until = time.time()
    flushed = provider.force_flush(timeout_millis=600_000)
    provider.shutdown()
    out.put(
        _result(
            "otlp",
            started,
            index=index,
            traces=sent,
            task_ids=task_ids[:sent],
            spans=sent * spans_per_trace,
            generated_until=generated_until,
            flushed=flushed,
            acks=acks,
            statuses=dict(session.statuses),
        )
    )


# --- the attempts API ------------------------------------------------------------------


def attempt_body(spans_per_trace: int = SPANS_PER_TRACE) -> dict[str, Any]:
    """The same content as one trace: the chat turns as messages, the tool spans as
    tool results, the answer."""
    messages: list[dict[str, Any]] = []
    tool_results: list[dict[str, Any]] = []
    for step in range(spans_per_trace - 1):
        if step % 3 == 0:
            messages += [
                {"role": "user", "content": QUESTION},
                {"role": "assistant", "content": ANSWER},
            ]
        else:
            tool_results.append(
                {
                    "tool_name": "search_knowledge",
                    "tool_call_id": f"call-{step}",
                    "arguments": {"query": "training budget"},
                    "content": TOOL_RESULT,
                }
            )
    run = {
        "key": "main",
        "kind": "main",
        "model": "openai:gpt-4.1",
        "usage": {"input_tokens": 120 * 3, "output_tokens": 12 * 3},
        "messages": messages,
        "tool_results": tool_results,
    }
    return {"final_answer": ANSWER, "runs": [run]}


def _post_with_retries(
    session: CountingSession, url: str, body: dict[str, Any], retries: int = 5
) -> tuple[float, bool, int]:
    """(seconds from the first try to the answer, success, retries used): 429 and 5xx
    answers and connection errors are retried, as an exporter would."""
    t0 = time.perf_counter()
    for attempt in range(retries + 1):
        try:
            response = session.post(url, json=body, timeout=30)
        except requests.RequestException:
            time.sleep(min(2.0, 0.1 * 2**attempt))
            continue
        if response.status_code == 201:
            return time.perf_counter() - t0, True, attempt
        if response.status_code != 429 and response.status_code < 500:
            return time.perf_counter() - t0, False, attempt
        time.sleep(min(2.0, 0.1 * 2**attempt))
    return time.perf_counter() - t0, False, retries


def attempts_client(
    index: int,
    url: str,
    token: str,
    task_ids: list[int],
    seconds: float,
    rate: float,
    spans_per_trace: int,
    out: Any,
) -> None:
    """``POST /tasks/{id}/attempts`` once per task, at most ``rate`` per second, one
    request at a time (an agent waits for its answer), for ``seconds``."""
    session = CountingSession()
    session.headers["Authorization"] = f"Bearer {token}"
    body = attempt_body(spans_per_trace)
    acks: list[tuple[float, int, bool]] = []
    retries = 0
    started = time.time()
    t0 = time.monotonic()
    sent = 0
    for task_id in task_ids:
        if time.monotonic() - t0 >= seconds:
            break
        elapsed, ok, used = _post_with_retries(session, f"{url}/{task_id}/attempts", body)
        acks.append((elapsed, 1, ok))
        retries += used
        sent += 1
        _pace(t0, sent, rate)
    out.put(
        _result(
            "attempts",
            started,
            index=index,
            traces=sent,
            task_ids=task_ids[:sent],
            spans=sent * spans_per_trace,
            generated_until=time.time(),
            flushed=True,
            acks=acks,
            statuses=dict(session.statuses),
            retries=retries,
        )
    )
