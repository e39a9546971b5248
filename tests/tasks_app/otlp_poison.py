"""OTLP/JSON export requests written by hand for the isolation tests and the poison drill
(issue 34): a complete GenAI trace (one ``invoke_agent`` root span with the user's
message and the answer), and the poisoned variants one account may send."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

NS = 1_000_000_000
ENDPOINT = "/api/v1/otlp/v1/traces"


def _attribute(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def new_trace_id() -> str:
    return secrets.token_hex(16)


def agent_trace(
    trace_id: str,
    *,
    question: str = "How many days of leave do I get?",
    answer: str = "25 days a year.",
    input_messages: str | None = None,
    extra: dict[str, Any] | None = None,
    final: bool = True,
    with_root: bool = True,
    task_id: int | None = None,
) -> dict[str, Any]:
    """An export request holding one trace: a root ``invoke_agent`` span (``evidentia.final``
    so it is assembled at once) or, ``with_root=False``, only a child ``chat`` span whose
    parent never arrives (a root-less trace, taken after ``OTLP_TRACE_MAX_WAIT_SECONDS``)."""
    now = time.time_ns()
    messages = input_messages or json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": question}]}]
    )
    attributes = {
        "gen_ai.operation.name": "invoke_agent" if with_root else "chat",
        "gen_ai.agent.name": "helper",
        "gen_ai.request.model": "acme-1",
        "gen_ai.provider.name": "acme",
        "gen_ai.input.messages": messages,
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
        ),
        **({"evidentia.final": True} if final and with_root else {}),
        **({"evidentia.task_id": task_id} if task_id is not None else {}),
        **(extra or {}),
    }
    span = {
        "traceId": trace_id,
        "spanId": secrets.token_hex(8),
        "parentSpanId": "" if with_root else secrets.token_hex(8),
        "name": "invoke_agent helper" if with_root else "chat acme-1",
        "kind": 1,
        "startTimeUnixNano": str(now - NS),
        "endTimeUnixNano": str(now),
        "attributes": [_attribute(k, v) for k, v in attributes.items()],
    }
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_attribute("service.name", "agent")]},
                "scopeSpans": [{"scope": {"name": "pydantic-ai"}, "spans": [span]}],
            }
        ]
    }


# What one account may send that an assembly could not take, each in a complete trace
# (issue 34): a string attribute holding JSON nested 5,000 levels deep (RecursionError
# while mapping), NaN inside a string attribute that holds JSON (a number jsonb refuses),
# a lone surrogate escape inside one (text no database can encode), and a token count
# over the attempt schema's bound (a validation error while mapping). The first three
# are bounded parses now (the string is kept as text); the last still fails, so it is
# the one retried and then marked unusable.
POISON: dict[str, dict[str, Any]] = {
    "deep_json_string": {"input_messages": "[" * 5000 + "]" * 5000},
    "nan_in_json_string": {
        "input_messages": '[{"role": "user", "content": NaN, "parts": [{"content": NaN}]}]'
    },
    "lone_surrogate_in_json_string": {
        "input_messages": '[{"role": "user", "content": "\\ud800 leave?"}]'
    },
    "token_count_over_bound": {"extra": {"gen_ai.usage.input_tokens": 2**40}},
}
# The poison that no bound turns into a usable trace.
FAILS_ASSEMBLY = "token_count_over_bound"


def poison_trace(kind: str, trace_id: str, *, task_id: int | None = None) -> dict[str, Any]:
    return agent_trace(trace_id, task_id=task_id, **POISON[kind])
