"""Writing a run's evidence as it happens.

Every write is its own small transaction, so a crash later in the run loses nothing
already gathered. When the run belongs to a leased attempt, every write is fenced
by the lease token, so a worker whose lease was taken over (reaper, abandon) writes
nothing. On PostgreSQL a fenced write is **one statement**: a data-modifying
CTE refreshes the heartbeat with ``UPDATE task ... WHERE lease_token = ... RETURNING``
(which row-locks the task, as the reaper's takeover does) and inserts the rows only if
that returned the task. A turn's rows (a request snapshot and the model's message, a
tool result and its transcript row) go in the same statement. Elsewhere (SQLite) the
write is a transaction that locks and checks first.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection, models
from django.utils import timezone
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters

from project.costs import CURRENCY, CostTotal, price_request
from tasks_app.runtime import runs
from tasks_app.runtime.agents.tools import ToolOutput
from tasks_app.runtime.models import (
    LLMRequestSnapshot,
    Run,
    RunMessage,
    RunStatus,
    ToolEvidence,
)
from tasks_app.workflow.fence import Fence, fenced_insert, fenced_insert_parent, unfenced_write


def message_text(message: ModelMessage) -> str:
    """Plain text of a message, for the transcript and character counts."""
    chunks: list[str] = []
    for part in message.parts:
        if isinstance(part, SystemPromptPart | TextPart):
            chunks.append(part.content)
        elif isinstance(part, UserPromptPart):
            chunks.append(part.content if isinstance(part.content, str) else str(part.content))
        elif isinstance(part, ToolReturnPart):
            chunks.append(part.model_response_str())
        elif isinstance(part, ToolCallPart):
            chunks.append(f"{part.tool_name}({part.args_as_json_str()})")
    return "\n".join(chunks)


def _dump(message: ModelMessage) -> dict[str, Any]:
    return ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]


class RunRecorder:
    """Creates one ``Run`` and appends its messages, tool evidence and request snapshots."""

    def __init__(
        self,
        *,
        task_id: int,
        attempt_index: int,
        kind: str,
        model_name: str,
        fence: Fence | None,
        node_id: str = "",
        node_role: str = "",
        graph_index: int = 0,
        first_request: ModelRequest | None = None,
    ) -> None:
        """Insert the run (with ``first_request``'s messages, when given, in the same
        write: ``add_request_messages``)."""
        self.fence = fence
        self.message_index = 0
        self.evidence_sequence = 0
        self.snapshot_iteration = 0
        self._last_fenced = float("-inf")
        # Sum of the priced requests of this run, written to the run at finish.
        self.cost = CostTotal()
        row = {
            "task_id": task_id,
            "attempt_index": attempt_index,
            "kind": kind,
            "node_id": node_id,
            "node_role": node_role,
            "graph_index": graph_index,
            "model_name": model_name,
            "status": RunStatus.RUNNING,
            "started_at": timezone.now(),
        }
        first = [
            self._message_row(role, content, payload, with_run=False)
            for role, content, payload in _request_parts(first_request)
        ]
        if self._one_statement:
            assert fence is not None
            full = _with_defaults(Run, row)
            if first:
                messages = [_with_defaults(RunMessage, m) for m in first]
                run_id = fenced_insert_parent(fence, (Run, full), (RunMessage, messages), fk="run")
            else:
                run_id = fenced_insert(fence, [(Run, [full])])
            self._last_fenced = time.monotonic()
            self.run = Run(pk=run_id, **full)
        else:
            with self._write():
                self.run = Run.objects.create(**row)
                for message in first:
                    RunMessage.objects.create(run=self.run, **message)

    @property
    def _one_statement(self) -> bool:
        return self.fence is not None and connection.vendor == "postgresql"

    def _write(self) -> Any:
        return self.fence.write() if self.fence else unfenced_write()

    def _insert(self, inserts: list[tuple[type[models.Model], list[dict[str, Any]]]]) -> None:
        """Write these rows together: one fenced statement on PostgreSQL, else one
        (fenced) transaction."""
        if self._one_statement:
            assert self.fence is not None
            fenced_insert(
                self.fence, [(m, [_with_defaults(m, r) for r in rows]) for m, rows in inserts]
            )
            self._last_fenced = time.monotonic()
            return
        with self._write():
            for model, rows in inserts:
                for row in rows:
                    model._default_manager.create(**row)

    def check(self) -> None:
        """Called before each step: stop if the attempt was abandoned or taken over. A
        fenced write in the last second already checked the lease and beat."""
        if self.fence and time.monotonic() - self._last_fenced > FRESH_SECONDS:
            self.fence.beat()

    def _message_row(
        self, role: str, content: str, payload: dict[str, Any], *, with_run: bool = True
    ) -> dict[str, Any]:
        row = {
            **({"run_id": self.run.pk} if with_run else {}),
            "index": self.message_index,
            "role": role,
            "content": content,
            "payload": payload,
            "created_at": timezone.now(),
        }
        self.message_index += 1
        return row

    def add_message(self, role: str, content: str, payload: dict[str, Any]) -> None:
        start = self.message_index
        try:
            self._insert([(RunMessage, [self._message_row(role, content, payload)])])
        except BaseException:
            self.message_index = start
            raise

    def add_request_messages(self, request: ModelRequest) -> None:
        """System and user parts of a request, one transcript row each, written together."""
        start = self.message_index
        rows = [self._message_row(*part) for part in _request_parts(request)]
        if not rows:
            return
        try:
            self._insert([(RunMessage, rows)])
        except BaseException:
            self.message_index = start
            raise

    def _response_row(self, response: ModelResponse) -> dict[str, Any]:
        payload = _dump(response)
        tool_calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        if tool_calls:
            payload["tool_calls"] = [
                {"tool_call_id": p.tool_call_id, "tool_name": p.tool_name, "args": p.args_as_dict()}
                for p in tool_calls
            ]
        return self._message_row("assistant", message_text(response), payload)

    def add_response(self, response: ModelResponse) -> None:
        start = self.message_index
        try:
            self._insert([(RunMessage, [self._response_row(response)])])
        except BaseException:
            self.message_index = start
            raise

    def add_tool_result(self, call: ToolCallPart, output: ToolOutput) -> None:
        """The tool result as evidence and as a transcript row, written together the
        moment the tool returned."""
        evidence = {
            "run_id": self.run.pk,
            "task_id": self.run.task_id,
            "attempt_index": self.run.attempt_index,
            "sequence": self.evidence_sequence,
            "tool_name": call.tool_name,
            "tool_call_id": call.tool_call_id,
            "arguments": _safe_args(call),
            "content": output.content,
            # Computed columns that ToolEvidence.save() would fill (no save() here).
            **ToolEvidence.content_fields(call.tool_name, output.content),
            "is_error": output.is_error,
            "url": output.url[:2000],
            "title": output.title[:500],
            "event_payload": output.payload,
            "created_at": timezone.now(),
        }
        start = self.message_index
        message = self._message_row(
            "tool",
            output.content,
            {
                "tool_call_id": call.tool_call_id,
                "tool_name": call.tool_name,
                "is_error": output.is_error,
            },
        )
        try:
            self._insert([(ToolEvidence, [evidence]), (RunMessage, [message])])
        except BaseException:
            self.message_index = start
            raise
        self.evidence_sequence += 1

    def add_snapshot(self, call: ModelCall, *, with_response: bool = False) -> None:
        """A compact record of one model request; the full request only in debug.
        ``with_response`` also records the model's message (``add_response``) in the
        same write."""
        usage = call.response.usage if call.response is not None else None
        # Priced now, from this request's usage and the configured model name, and stored:
        # a later price change does not rewrite history. None: model unknown to the table.
        cost = price_request(call.model_name, usage, at=timezone.now())
        snapshot = {
            "run_id": self.run.pk,
            "iteration": self.snapshot_iteration,
            **call.snapshot_columns(),
            "cost": cost,
            "cost_currency": CURRENCY if cost is not None else "",
            "created_at": timezone.now(),
        }
        inserts: list[tuple[type[models.Model], list[dict[str, Any]]]] = [
            (LLMRequestSnapshot, [snapshot])
        ]
        start = self.message_index
        if with_response and call.response is not None:
            # The turn in one write: the request's snapshot and the model's message.
            inserts.append((RunMessage, [self._response_row(call.response)]))
        try:
            self._insert(inserts)
        except BaseException:
            self.message_index = start
            raise
        self.cost.add(cost)
        self.snapshot_iteration += 1

    def finish(
        self,
        *,
        status: str,
        finish_reason: str,
        output_text: str,
        tally: RunTally,
        error: str = "",
        warnings: list[str] | None = None,
        fenced: bool = True,
    ) -> None:
        """End the run through ``run_finish`` (the one writer of ``Run.status``); fenced
        by the lease unless ``fenced=False`` (bookkeeping after the lease was lost)."""
        finished = timezone.now()
        run = self.run
        tokens = {"input_tokens": tally.input_tokens, "output_tokens": tally.output_tokens}
        runs.run_finish(
            run=run,
            status=status,
            fence=self.fence if fenced else None,
            finish_reason=finish_reason,
            output_text=output_text,
            tool_iterations=tally.tool_iterations,
            **tokens,
            usage=tokens,
            cost=self.cost.value,
            cost_currency=CURRENCY if self.cost.known else "",
            error=error,
            warnings=warnings or [],
            finished_at=finished,
            duration_ms=int((finished - run.started_at).total_seconds() * 1000),
        )


@dataclass
class RunTally:
    """What a run has used so far: tool rounds and the model's tokens."""

    tool_iterations: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class ModelCall:
    """One model request as it was sent, and its response (None: it failed)."""

    model: Model
    model_name: str
    messages: list[ModelMessage]
    parameters: ModelRequestParameters
    model_settings: dict[str, Any]
    latency_ms: int
    response: ModelResponse | None

    def snapshot_columns(self) -> dict[str, Any]:
        """The request's compact record (sizes, settings, usage), and the full request
        when ``LLM_FULL_REQUEST_SNAPSHOTS`` is on."""
        tools = list(self.parameters.function_tools)
        usage = self.response.usage if self.response is not None else None
        model_settings = self.model_settings
        return {
            "provider": getattr(self.model, "system", "") or "",
            "model_name": self.model_name,
            "message_count": len(self.messages),
            "tool_names": [t.name for t in tools],
            "message_chars": sum(len(message_text(m)) for m in self.messages),
            "tool_schema_chars": sum(
                len(json.dumps(t.parameters_json_schema)) + len(t.description or "") for t in tools
            ),
            "max_tokens": model_settings.get("max_tokens"),
            "temperature": model_settings.get("temperature"),
            "thinking": bool(model_settings.get("thinking")),
            "latency_ms": self.latency_ms,
            "input_tokens": usage.input_tokens if usage else 0,
            "output_tokens": usage.output_tokens if usage else 0,
            "full_request": self._full_request() if settings.LLM_FULL_REQUEST_SNAPSHOTS else None,
        }

    def _full_request(self) -> dict[str, Any]:
        return {
            "messages": ModelMessagesTypeAdapter.dump_python(self.messages, mode="json"),
            "tools": [
                {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters_json_schema,
                }
                for t in self.parameters.function_tools
            ],
            "settings": {k: v for k, v in self.model_settings.items() if _jsonable(v)},
        }


# A fenced write this recent has already checked the lease (and beaten): the step
# before the next model call or tool run needs no separate check.
FRESH_SECONDS = 1.0


def _request_parts(request: ModelRequest | None) -> list[tuple[str, str, dict[str, Any]]]:
    """(role, content, payload) of a request's system and user parts, one transcript
    row each."""
    parts: list[tuple[str, str, dict[str, Any]]] = []
    for part in request.parts if request is not None else []:
        if isinstance(part, SystemPromptPart):
            parts.append(("system", part.content, {"part_kind": part.part_kind}))
        elif isinstance(part, UserPromptPart):
            text = part.content if isinstance(part.content, str) else str(part.content)
            parts.append(("user", text, {"part_kind": part.part_kind}))
    return parts


def _with_defaults(model: type[models.Model], row: dict[str, Any]) -> dict[str, Any]:
    """The row with every other column's default, for a raw INSERT (no ``save()``)."""
    out = dict(row)
    for field in model._meta.concrete_fields:
        if field.primary_key or field.attname in out or field.name in out:
            continue
        if field.has_default():
            out[field.attname] = field.get_default()
        elif field.null:
            out[field.attname] = None
    return out


def _safe_args(call: ToolCallPart) -> dict[str, Any]:
    try:
        return call.args_as_dict()
    except Exception:
        return {"raw": str(call.args)}


def _jsonable(value: Any) -> bool:
    try:
        json.dumps(value)
    except TypeError:
        return False
    return True
