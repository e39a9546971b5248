"""The Celery app for drill workers: the project's app plus the drills' scripted models.

``celery -A tests.drills.worker_app worker`` loads this in the worker process, so the
models exist where the jobs run (a test process cannot register them in a child):

- ``drill:slow``: calls ``search_knowledge`` ``DRILL_SLOW_TOOL_CALLS`` times (default 3),
  sleeping ``DRILL_SLOW_SECONDS`` (default 1.5) before every reply, then answers;
- ``drill:accept``: a validator that accepts every answer with valid V1 JSON.
"""

from __future__ import annotations

import json
import os
import re
import time

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from project.celery import app
from project.llm.messages import first_user_prompt
from project.llm.registry import register_model

__all__ = ["app"]

# kombu's Redis transport sweeps for unacked messages past the visibility timeout only
# every interval x throttle seconds (100 s by default); the drills use a 12 s visibility
# timeout, so sweep every second to see the redelivery within the drill.
app.conf.broker_transport_options = {
    **app.conf.broker_transport_options,
    "unacked_restore_interval": 1,
    "unacked_restore_throttle": 1,
}

SLOW_ANSWER = "Drill answer: the budget is 1,750 EUR per employee (Training Budget)."


def tool_returns(messages: list[ModelMessage]) -> int:
    return sum(
        1
        for m in messages
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    )


def slow_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    time.sleep(float(os.environ.get("DRILL_SLOW_SECONDS", "1.5")))
    done = tool_returns(messages)
    if info.function_tools and done < int(os.environ.get("DRILL_SLOW_TOOL_CALLS", "3")):
        return ModelResponse(
            parts=[
                ToolCallPart(
                    "search_knowledge", {"query": f"training budget {done}"}, f"call-{done}"
                )
            ]
        )
    return ModelResponse(parts=[TextPart(SLOW_ANSWER)])


_FIRST_RESULT_RE = re.compile(
    r'<EXTERNAL-CONTENT label="(?P<ref>R\d+) [^"]*">\n(?P<body>.*?)\n</EXTERNAL-CONTENT>',
    re.DOTALL,
)


def accepting_verdict(prompt: str, **extra: object) -> str:
    """An 'accepted' citing the start of the first tool result, so it stands (issue 12)."""
    body: dict[str, object] = {"status": "accepted", "score": 0.9, **extra}
    match = _FIRST_RESULT_RE.search(prompt)
    if match:
        quote = next(line for line in match.group("body").splitlines() if line.strip())[:80]
        body["claims"] = [
            {
                "id": "1",
                "text": "the answer",
                "verdict": "supported",
                "citations": [{"ref": match.group("ref"), "quote": quote.strip()}],
            }
        ]
        body["requirements"] = [{"text": "the request", "met": "yes", "claim_ids": ["1"]}]
    return json.dumps(body)


def accept_reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Accepts every answer, citing the first tool result so the verdict stands (issue 12)."""
    verdict = accepting_verdict(
        first_user_prompt(messages), reasoning="drill judge: accepts every answer"
    )
    return ModelResponse(parts=[TextPart(verdict)])


register_model("drill:slow", lambda: FunctionModel(slow_reply, model_name="drill:slow"))
register_model("drill:accept", lambda: FunctionModel(accept_reply, model_name="drill:accept"))
