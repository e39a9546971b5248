"""From the spans of one trace to one external attempt: the OpenTelemetry
GenAI semantic conventions, as pydantic-ai and other frameworks emit them, mapped onto
the same attempt schema the attempts API takes. docs/otlp.md has the table.

- The root agent span (``gen_ai.operation.name = invoke_agent`` without an agent
  ancestor, else the outermost span with GenAI descendants) gives the request (first user
  input message) and the final answer (last output message).
- Each ``invoke_agent`` span is a run (the root's is ``main``, nested agents are
  ``team_node`` runs named by ``gen_ai.agent.name``); ``chat`` spans give the run's
  messages in order and its model and usage; ``execute_tool`` spans give its tool results.
- Messages come from ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (current
  conventions), ``pydantic_ai.all_messages`` / ``final_result`` (pydantic-ai's agent span),
  or the older event form (``gen_ai.user.message``, ``gen_ai.assistant.message``,
  ``gen_ai.tool.message``, ``gen_ai.choice`` events).
- Spans that map to none of these are kept, whole, in the run's payload.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.conf import settings

from project import strict_json
from tasks_app.intake.external_input import AttemptIn, MessageIn, RunIn, ToolResultIn, UsageIn

AGENT = "invoke_agent"
CHAT = {"chat", "text_completion", "generate_content"}
TOOL = "execute_tool"
TASK_ID_KEY = "evidentia.task_id"
RULES_KEY = "evidentia.task.rules"
POLICY_KEY = "evidentia.validation_policy"
FINAL_KEY = "evidentia.final"
# The span status code OTLP uses for an error.
STATUS_ERROR = 2


@dataclass
class StoredSpan:
    """The fields of a stored span the mapping reads (``tasks_app.models.OtlpSpan``)."""

    span_id: str
    parent_span_id: str
    name: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    resource: dict[str, Any] = field(default_factory=dict)
    status_code: int = 0
    status_message: str = ""
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def operation(self) -> str:
        op = str(self.attributes.get("gen_ai.operation.name") or "")
        if op:
            return op
        # Older instrumentations name the span after the operation only.
        first = self.name.split(" ", 1)[0]
        return first if first in CHAT | {AGENT, TOOL} else ""

    def attribute(self, key: str) -> Any:
        """A span attribute, else the resource's (the exporter's ``resource`` option)."""
        value = self.attributes.get(key)
        return self.resource.get(key) if value is None else value


@dataclass
class MappedTrace:
    request: str
    final_answer: str
    task_id: int | None
    rules: str | None
    validation_policy: str | None
    final: bool
    attempt: AttemptIn
    truncated: list[str]


class UnusableTrace(Exception):
    """The trace cannot become an attempt (no GenAI spans, no answer)."""


def _json(value: Any) -> Any:
    """The value a string attribute holds as JSON, when it is JSON that can be kept
    (``project.strict_json``: finite numbers, valid text, nesting within
    ``API_MAX_JSON_DEPTH``); any other string stays the string it is."""
    if isinstance(value, str):
        return strict_json.loads_or_text(
            value, max_depth=settings.API_MAX_JSON_DEPTH, max_chars=settings.OTLP_MAX_BODY_BYTES
        )
    return value


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _time(ns: int) -> datetime | None:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC) if ns else None


def _parts_text(message: dict[str, Any]) -> str:
    """The text of a semantic-convention message ({role, parts: [...]}) or an older
    {role, content} one."""
    if "parts" in message and isinstance(message["parts"], list):
        texts = []
        for part in message["parts"]:
            if not isinstance(part, dict):
                continue
            if part.get("type") in (None, "text") and "content" in part:
                texts.append(_as_text(part.get("content")))
        return "\n".join(t for t in texts if t)
    return _as_text(message.get("content"))


def _messages(value: Any) -> list[dict[str, Any]]:
    value = _json(value)
    if isinstance(value, dict):
        value = [value]
    return [m for m in value if isinstance(m, dict)] if isinstance(value, list) else []


def _event_messages(span: StoredSpan) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(input, output) messages from the older event-based form."""
    inputs: list[dict[str, Any]] = []
    outputs: list[dict[str, Any]] = []
    roles = {
        "gen_ai.system.message": "system",
        "gen_ai.user.message": "user",
        "gen_ai.assistant.message": "assistant",
        "gen_ai.tool.message": "tool",
    }
    for event in span.events:
        name = event.get("name", "")
        attrs = event.get("attributes") or {}
        if name in roles:
            body = _json(attrs.get("content", attrs.get("body", "")))
            inputs.append({"role": roles[name], "content": body, "event": attrs})
        elif name == "gen_ai.choice":
            message = _json(attrs.get("message", attrs.get("body", {})))
            if isinstance(message, dict):
                outputs.append({"role": "assistant", **message})
            else:
                outputs.append({"role": "assistant", "content": message})
    return inputs, outputs


def _chat_messages(span: StoredSpan) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    inputs = _messages(span.attributes.get("gen_ai.input.messages"))
    outputs = _messages(span.attributes.get("gen_ai.output.messages"))
    if not inputs and not outputs:
        return _event_messages(span)
    return inputs, outputs


def _role(message: dict[str, Any]) -> str:
    role = str(message.get("role") or "")
    return role if role in ("system", "user", "assistant", "tool") else "assistant"


def _message_in(message: dict[str, Any], at: int) -> MessageIn:
    return MessageIn(
        role=_role(message),  # type: ignore[arg-type]
        content=_parts_text(message),
        payload={k: v for k, v in message.items() if k != "event"} | {"source": "otlp"},
        created_at=_time(at),
    )


def _first_user_text(messages: Iterable[dict[str, Any]]) -> str:
    for message in messages:
        if message.get("role") == "user":
            text = _parts_text(message)
            if text:
                return text
    return ""


def _last_assistant_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") in ("assistant", None, ""):
            text = _parts_text(message)
            if text:
                return text
    return ""


def find_root(spans: list[StoredSpan]) -> StoredSpan | None:
    """The root agent span, else the outermost span that has GenAI descendants."""
    by_id = {s.span_id: s for s in spans}

    def ancestors(span: StoredSpan) -> Iterable[StoredSpan]:
        seen = set()
        parent = by_id.get(span.parent_span_id)
        while parent is not None and parent.span_id not in seen:
            seen.add(parent.span_id)
            yield parent
            parent = by_id.get(parent.parent_span_id)

    agents = [
        s
        for s in spans
        if s.operation == AGENT and not any(a.operation == AGENT for a in ancestors(s))
    ]
    if agents:
        return min(agents, key=lambda s: (s.start_ns, s.span_id))
    genai = [s for s in spans if s.operation]
    if not genai:
        return None
    tops = []
    for span in genai:
        chain = list(ancestors(span))
        tops.append(chain[-1] if chain else span)
    return min(tops, key=lambda s: (len(list(ancestors(s))), s.start_ns))


def _run_owner(span: StoredSpan, by_id: dict[str, StoredSpan], root: StoredSpan) -> StoredSpan:
    """The nearest agent span above ``span`` (the root when there is none)."""
    parent = by_id.get(span.parent_span_id)
    seen = set()
    while parent is not None and parent.span_id not in seen:
        seen.add(parent.span_id)
        if parent.operation == AGENT:
            return parent
        parent = by_id.get(parent.parent_span_id)
    return root


def _truncated(span: StoredSpan, value: Any, limit: int | None) -> bool:
    """Content the exporter cut: a value exactly at the exporter's length limit, or
    attributes/events the SDK dropped."""
    if span.dropped.get("attributes") or span.dropped.get("events"):
        return True
    return bool(limit) and isinstance(value, str) and len(value) == limit


def _model_name(span: StoredSpan) -> str:
    model = str(
        span.attributes.get("gen_ai.request.model")
        or span.attributes.get("gen_ai.response.model")
        or span.attributes.get("model_name")
        or ""
    )
    provider = str(
        span.attributes.get("gen_ai.provider.name") or span.attributes.get("gen_ai.system") or ""
    )
    if not model:
        return ""
    if ":" in model or not provider:
        return model[:200]
    return f"{provider}:{model}"[:200]


def _int(value: Any) -> int:
    try:
        return max(int(value), 0)
    except (TypeError, ValueError):
        return 0


def _root_span(spans: list[StoredSpan]) -> StoredSpan:
    """The trace's root span; ``UnusableTrace`` when there are no spans or no GenAI ones."""
    if not spans:
        raise UnusableTrace("the trace has no spans")
    root = find_root(spans)
    if root is None:
        raise UnusableTrace(
            "no GenAI span in the trace (gen_ai.operation.name invoke_agent, chat or execute_tool)"
        )
    return root


def _empty_runs(root: StoredSpan, ordered: list[StoredSpan]) -> dict[str, dict[str, Any]]:
    """One run per agent span, the root's first (``main``), keyed by span id."""
    agents = [root] + [s for s in ordered if s.operation == AGENT and s.span_id != root.span_id]
    runs: dict[str, dict[str, Any]] = {}
    for index, agent in enumerate(agents):
        name = str(agent.attribute("gen_ai.agent.name") or agent.name or "agent")
        runs[agent.span_id] = {
            "span": agent,
            "key": "main" if index == 0 else f"agent-{index}",
            "kind": "main" if index == 0 else "team_node",
            "node_id": "" if index == 0 else name[:100],
            "node_role": name[:200] if index else "",
            "chats": [],
            "tools": [],
            "other": [],
        }
    return runs


def _runs(spans: list[StoredSpan], root: StoredSpan) -> dict[str, dict[str, Any]]:
    """The runs of the trace, each with its chat, tool and other spans in start order."""
    by_id = {s.span_id: s for s in spans}
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.end_ns, s.span_id))
    runs = _empty_runs(root, ordered)
    for span in ordered:
        if span.span_id in runs:
            continue
        owner = runs[_run_owner(span, by_id, root).span_id]
        if span.operation in CHAT:
            owner["chats"].append(span)
        elif span.operation == TOOL:
            owner["tools"].append(span)
        else:
            owner["other"].append(span)
    return runs


@dataclass
class _Chats:
    """What the chat spans of one run give."""

    messages: list[MessageIn] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    model: str = ""
    # The inputs of its first chat span that has any, and its last assistant text.
    first_inputs: list[dict[str, Any]] = field(default_factory=list)
    last_output_text: str = ""


def _map_chats(chats: list[StoredSpan]) -> _Chats:
    """The messages, usage and model of one run's chat spans, in order."""
    messages: list[MessageIn] = []
    seen_inputs = 0
    input_tokens = output_tokens = 0
    model = ""
    first_inputs: list[dict[str, Any]] = []
    last_output_text = ""
    for chat in chats:
        inputs, outputs = _chat_messages(chat)
        if not first_inputs:
            first_inputs = inputs
        # Each chat span repeats the conversation so far: keep only what is new.
        for message in inputs[seen_inputs:] if len(inputs) >= seen_inputs else inputs:
            messages.append(_message_in(message, chat.start_ns))
        seen_inputs = len(inputs) + len(outputs)
        for message in outputs:
            messages.append(_message_in(message, chat.end_ns))
        text = _last_assistant_text(outputs)
        if text:
            last_output_text = text
        input_tokens += _int(chat.attributes.get("gen_ai.usage.input_tokens"))
        output_tokens += _int(chat.attributes.get("gen_ai.usage.output_tokens"))
        model = model or _model_name(chat)
    return _Chats(messages, input_tokens, output_tokens, model, first_inputs, last_output_text)


def _tool_result(tool: StoredSpan, cut: bool) -> ToolResultIn:
    """The tool result an ``execute_tool`` span records (``cut``: truncated by the exporter)."""
    arguments = _json(tool.attributes.get("gen_ai.tool.call.arguments"))
    return ToolResultIn(
        tool_name=str(tool.attributes.get("gen_ai.tool.name") or tool.name)[:100],
        tool_call_id=str(tool.attributes.get("gen_ai.tool.call.id") or "")[:200],
        arguments=arguments if isinstance(arguments, dict) else {"value": arguments},
        content=_as_text(tool.attributes.get("gen_ai.tool.call.result")),
        url="",
        title="",
        created_at=_time(tool.end_ns),
        is_error=tool.status_code == STATUS_ERROR,
        payload={
            "source": "otlp",
            "span_id": tool.span_id,
            "truncated_at_source": cut,
            **({"status_message": tool.status_message} if tool.status_message else {}),
        },
    )


def _map_tools(
    tools: list[StoredSpan], value_length_limit: int | None, truncated: list[str]
) -> list[ToolResultIn]:
    """The tool results of one run's tool spans; the ids of those the exporter cut are
    appended to ``truncated``."""
    tool_results = []
    for tool in tools:
        cut = _truncated(tool, tool.attributes.get("gen_ai.tool.call.result"), value_length_limit)
        if cut:
            truncated.append(str(tool.attributes.get("gen_ai.tool.call.id") or tool.span_id))
        tool_results.append(_tool_result(tool, cut))
    return tool_results


def _run_output(agent_span: StoredSpan, messages: list[MessageIn]) -> str:
    """A run's answer: the agent span's last output message, else its final result, else
    the last assistant message of its chats."""
    return (
        _last_assistant_text(_messages(agent_span.attributes.get("gen_ai.output.messages")))
        or _as_text(_json(agent_span.attributes.get("final_result")))
        or (_last_assistant_text([m.model_dump() for m in messages]) if messages else "")
    )


def _agent_usage(agent_span: StoredSpan) -> UsageIn:
    """The usage an agent span reports itself (for runs whose chat spans report none)."""
    return UsageIn(
        input_tokens=_int(agent_span.attributes.get("gen_ai.usage.input_tokens"))
        or _int(agent_span.attributes.get("gen_ai.aggregated_usage.input_tokens")),
        output_tokens=_int(agent_span.attributes.get("gen_ai.usage.output_tokens"))
        or _int(agent_span.attributes.get("gen_ai.aggregated_usage.output_tokens")),
    )


def _run_in(run: dict[str, Any], chats: _Chats, tool_results: list[ToolResultIn]) -> RunIn:
    """The attempt's run for one agent span, from its mapped chats and tool results."""
    agent_span: StoredSpan = run["span"]
    usage = (
        UsageIn(input_tokens=chats.input_tokens, output_tokens=chats.output_tokens)
        if chats.input_tokens
        else _agent_usage(agent_span)
    )
    if run["other"]:
        usage.details["otlp_other_spans"] = len(run["other"])
    failed = agent_span.status_code == STATUS_ERROR
    return RunIn(
        key=run["key"],
        kind=run["kind"],
        node_id=run["node_id"],
        node_role=run["node_role"],
        model=chats.model or _model_name(agent_span) or "otlp:unknown",
        started_at=_time(agent_span.start_ns),
        finished_at=_time(agent_span.end_ns),
        status="failed" if failed else "completed",
        finish_reason="error" if failed else "stop",
        error=agent_span.status_message if failed else "",
        output_text=_run_output(agent_span, chats.messages),
        usage=usage,
        tool_iterations=len(tool_results),
        messages=chats.messages,
        tool_results=tool_results,
    )


def _mapped_trace(
    root: StoredSpan,
    run_inputs: list[RunIn],
    chat_inputs: list[dict[str, Any]],
    last_output_text: str,
    truncated: list[str],
) -> MappedTrace:
    """The trace's attempt with its request, answer and the task fields on the root span;
    ``UnusableTrace`` when there is no answer."""
    root_inputs = _messages(root.attributes.get("gen_ai.input.messages")) or _messages(
        root.attributes.get("pydantic_ai.all_messages")
    )
    request = _first_user_text(root_inputs) or _first_user_text(chat_inputs)
    final_answer = run_inputs[0].output_text or last_output_text
    if not final_answer.strip():
        raise UnusableTrace("the trace has no final answer (no output message on its agent span)")
    task_id = root.attribute(TASK_ID_KEY)
    attempt = AttemptIn(runs=run_inputs, final_answer=final_answer, stream=False)
    return MappedTrace(
        request=request,
        final_answer=final_answer,
        task_id=_int(task_id) if task_id not in (None, "") else None,
        rules=_as_text(root.attribute(RULES_KEY)) if root.attribute(RULES_KEY) else None,
        validation_policy=str(root.attribute(POLICY_KEY)) if root.attribute(POLICY_KEY) else None,
        final=bool(root.attribute(FINAL_KEY)),
        attempt=attempt,
        truncated=truncated,
    )


def map_trace(spans: list[StoredSpan], *, value_length_limit: int | None = None) -> MappedTrace:
    """The attempt a finished trace describes; ``UnusableTrace`` when it describes none."""
    root = _root_span(spans)
    truncated: list[str] = []
    run_inputs: list[RunIn] = []
    chat_inputs: list[dict[str, Any]] = []
    last_output_text = ""
    for run in _runs(spans, root).values():
        chats = _map_chats(run["chats"])
        chat_inputs = chat_inputs or chats.first_inputs
        last_output_text = chats.last_output_text or last_output_text
        tool_results = _map_tools(run["tools"], value_length_limit, truncated)
        run_inputs.append(_run_in(run, chats, tool_results))
    return _mapped_trace(root, run_inputs, chat_inputs, last_output_text, truncated)


def other_spans(spans: list[StoredSpan]) -> list[dict[str, Any]]:
    """The spans that map to nothing, whole, for the run's payload."""
    return [
        {
            "span_id": s.span_id,
            "parent_span_id": s.parent_span_id,
            "name": s.name,
            "attributes": s.attributes,
            "events": s.events,
        }
        for s in spans
        if not s.operation
    ]
