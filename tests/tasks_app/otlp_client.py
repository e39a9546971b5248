"""A real OpenTelemetry client for the OTLP tests (issue 15): a pydantic-ai ``Agent``
with tools and a scripted ``FunctionModel``, instrumented, its spans exported by the
OpenTelemetry SDK's own exporters or encoders. Nothing here imitates a span by hand."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

POLICY = (
    "Travel policy. Employees book economy class for flights under six hours. "
    "The daily meal allowance on business trips is 45 EUR."
)
BUDGET = "Training budget. The annual training budget per employee is 1,750 EUR."
ANSWER = (
    "The daily meal allowance on business trips is 45 EUR. "
    "The annual training budget per employee is 1,750 EUR."
)
QUESTION = "What is the daily meal allowance, and what is the annual training budget?"


def _script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    calls = sum(1 for m in messages if isinstance(m, ModelResponse))
    if calls == 0:
        return ModelResponse(
            parts=[
                ToolCallPart("read_policy", {"name": "travel"}, tool_call_id="call-travel"),
                ToolCallPart("read_policy", {"name": "training"}, tool_call_id="call-training"),
            ]
        )
    return ModelResponse(parts=[TextPart(ANSWER)])


def build_agent() -> Agent[None, str]:
    agent: Agent[None, str] = Agent(
        FunctionModel(_script, model_name="scripted-researcher"), name="policy-researcher"
    )

    @agent.tool_plain
    def read_policy(name: str) -> str:
        """Read a policy document by name."""
        return POLICY if name == "travel" else BUDGET

    return agent


def run_agent(exporter: SpanExporter, resource: dict[str, Any] | None = None) -> str:
    """Run the agent once with pydantic-ai's own instrumentation on (its 2.x Agent takes
    no ``instrument=``: ``Agent.instrument_all`` for this run only); every span goes to
    ``exporter`` as it ends."""
    provider = TracerProvider(
        resource=Resource.create({"service.name": "otlp-test", **(resource or {})})
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    try:
        # asyncio.run closes its loop; Agent.run_sync would leave a new loop set as the
        # thread's current one, unclosed (a ResourceWarning whenever it is collected).
        return asyncio.run(build_agent().run(QUESTION)).output
    finally:
        Agent.instrument_all(False)
        provider.shutdown()


def finished_spans(resource: dict[str, Any] | None = None) -> Sequence[ReadableSpan]:
    exporter = InMemorySpanExporter()
    run_agent(exporter, resource)
    return exporter.get_finished_spans()


def protobuf_body(spans: Sequence[ReadableSpan]) -> bytes:
    return encode_spans(spans).SerializeToString()
