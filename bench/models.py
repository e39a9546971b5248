"""Scripted zero-latency (and sleeping) models for the benchmarks.

``bench:agent`` calls three tools, one per turn (search_knowledge, then read_document
twice on the documents the search listed), then answers. ``bench:judge`` accepts.
``bench:sleepy`` sleeps ``BENCH_SLEEP_SECONDS`` (default 0.3 s) per call and answers
without tools (the team benchmark). They are registered with ``register_model`` in
whatever process runs them (the bench runner, the bench Celery worker).
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tasks_app.agents.messages import tool_returns
from tasks_app.agents.models import register_model

AGENT = "bench:agent"
JUDGE = "bench:judge"
SLEEPY = "bench:sleepy"

_DOC_RE = re.compile(r"\[doc (\d+)\]")


def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Three tool turns, then an answer (no latency of its own)."""
    returns = tool_returns(messages)
    offered = {tool.name for tool in info.function_tools}
    step = len(returns)
    if step < 3 and {"search_knowledge", "read_document"} <= offered:
        if step == 0:
            call = ToolCallPart("search_knowledge", {"query": "bench pipeline overhead"})
        else:
            ids = _DOC_RE.findall(str(returns[0].content))
            doc = ids[step - 1] if len(ids) >= step else "0"
            call = ToolCallPart("read_document", {"document_id": int(doc)})
        call.tool_call_id = f"bench-call-{step}"
        return ModelResponse(parts=[call])
    return ModelResponse(
        parts=[TextPart("The bench answer: the overhead budget is 30 ms per task [doc 1].")]
    )


VERDICT = json.dumps(
    {"status": "accepted", "score": 0.95, "reasoning": "bench judge: supported by evidence"}
)


def judge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return ModelResponse(parts=[TextPart(VERDICT)])


def sleepy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    time.sleep(float(os.environ.get("BENCH_SLEEP_SECONDS", "0.3")))
    return ModelResponse(parts=[TextPart("bench node output after one slow model call")])


def register_bench_models() -> None:
    """Register the bench models under their names (idempotent)."""
    for name, fn in ((AGENT, agent), (JUDGE, judge), (SLEEPY, sleepy)):
        register_model(name, _factory(name, fn))


def _factory(name: str, fn: Any) -> Any:
    return lambda: FunctionModel(fn, model_name=name)
