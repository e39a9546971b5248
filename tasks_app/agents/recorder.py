"""Writing a run's evidence as it happens (SPEC E1, E2, X1, X2).

Every write is its own small transaction, so a crash later in the run loses nothing
already gathered. When the run belongs to a leased attempt, every write is fenced by
the lease token: the task row is locked and the token compared before the insert, so a
worker whose lease was taken over (reaper, abandon) writes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
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

from evidence_app.models import ToolEvidence
from tasks_app.agents.db import db_turn
from tasks_app.agents.tools import ToolOutput
from tasks_app.models import LLMRequestSnapshot, Run, RunMessage, RunStatus, Task
from tasks_app.states import TaskStatus


class LeaseLost(Exception):
    """The attempt's lease was taken over or the task left ``running`` (abandoned):
    stop at once and write nothing more."""


@dataclass(frozen=True)
class Fence:
    """The lease of one attempt: task id and the token written when it was claimed."""

    task_id: int
    lease_token: str

    def beat(self) -> None:
        """Refresh the heartbeat; raise LeaseLost if the lease is gone or the task is no
        longer running (abandoned). One conditional UPDATE: check and beat together."""
        with db_turn():
            updated = Task.objects.filter(
                pk=self.task_id, lease_token=self.lease_token, status=TaskStatus.RUNNING
            ).update(heartbeat_at=timezone.now())
        if updated != 1:
            raise LeaseLost(f"task {self.task_id}: lease lost or task no longer running")

    @contextmanager
    def write(self) -> Iterator[None]:
        """A transaction in which the lease is held: the task row is locked, so the lease
        cannot be taken over between the check and the write."""
        with db_turn(), transaction.atomic():
            held = (
                Task.objects.select_for_update()
                .filter(pk=self.task_id, lease_token=self.lease_token, status=TaskStatus.RUNNING)
                .exists()
            )
            if not held:
                raise LeaseLost(f"task {self.task_id}: lease lost; write discarded")
            yield


@contextmanager
def unfenced_write() -> Iterator[None]:
    with db_turn(), transaction.atomic():
        yield


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
    ) -> None:
        self.fence = fence
        self.message_index = 0
        self.evidence_sequence = 0
        self.snapshot_iteration = 0
        with self._write():
            self.run = Run.objects.create(
                task_id=task_id,
                attempt_index=attempt_index,
                kind=kind,
                node_id=node_id,
                node_role=node_role,
                graph_index=graph_index,
                model_name=model_name,
                status=RunStatus.RUNNING,
                started_at=timezone.now(),
            )

    def _write(self) -> Any:
        return self.fence.write() if self.fence else unfenced_write()

    def check(self) -> None:
        """Called before each step: stop if the attempt was abandoned or taken over."""
        if self.fence:
            self.fence.beat()

    def add_message(self, role: str, content: str, payload: dict[str, Any]) -> None:
        with self._write():
            RunMessage.objects.create(
                run=self.run, index=self.message_index, role=role, content=content, payload=payload
            )
        self.message_index += 1

    def add_request_messages(self, request: ModelRequest) -> None:
        """System and user parts of a request, one transcript row each."""
        for part in request.parts:
            if isinstance(part, SystemPromptPart):
                self.add_message("system", part.content, {"part_kind": part.part_kind})
            elif isinstance(part, UserPromptPart):
                text = part.content if isinstance(part.content, str) else str(part.content)
                self.add_message("user", text, {"part_kind": part.part_kind})

    def add_response(self, response: ModelResponse) -> None:
        payload = _dump(response)
        tool_calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
        if tool_calls:
            payload["tool_calls"] = [
                {"tool_call_id": p.tool_call_id, "tool_name": p.tool_name, "args": p.args_as_dict()}
                for p in tool_calls
            ]
        self.add_message("assistant", message_text(response), payload)

    def add_tool_result(self, call: ToolCallPart, output: ToolOutput) -> None:
        """The tool result as evidence and as a transcript row, in one transaction, the
        moment the tool returned (E2)."""
        with self._write():
            ToolEvidence.objects.create(
                run=self.run,
                task_id=self.run.task_id,
                attempt_index=self.run.attempt_index,
                sequence=self.evidence_sequence,
                tool_name=call.tool_name,
                tool_call_id=call.tool_call_id,
                arguments=_safe_args(call),
                content=output.content,
                is_error=output.is_error,
                url=output.url[:2000],
                title=output.title[:500],
                event_payload=output.payload,
            )
            RunMessage.objects.create(
                run=self.run,
                index=self.message_index,
                role="tool",
                content=output.content,
                payload={
                    "tool_call_id": call.tool_call_id,
                    "tool_name": call.tool_name,
                    "is_error": output.is_error,
                },
            )
        self.evidence_sequence += 1
        self.message_index += 1

    def add_snapshot(
        self,
        *,
        model: Model,
        model_name: str,
        messages: list[ModelMessage],
        parameters: ModelRequestParameters,
        model_settings: dict[str, Any] | None,
        latency_ms: int,
        response: ModelResponse | None,
    ) -> None:
        """A compact record of one model request (X2); the full request only in debug."""
        model_settings = model_settings or {}
        tools = [t for t in parameters.function_tools]
        schema_chars = sum(
            len(json.dumps(t.parameters_json_schema)) + len(t.description or "") for t in tools
        )
        full = None
        if settings.LLM_FULL_REQUEST_SNAPSHOTS:
            full = {
                "messages": ModelMessagesTypeAdapter.dump_python(messages, mode="json"),
                "tools": [
                    {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters_json_schema,
                    }
                    for t in tools
                ],
                "settings": {k: v for k, v in model_settings.items() if _jsonable(v)},
            }
        usage = response.usage if response is not None else None
        with self._write():
            LLMRequestSnapshot.objects.create(
                run=self.run,
                iteration=self.snapshot_iteration,
                provider=getattr(model, "system", "") or "",
                model_name=model_name,
                message_count=len(messages),
                tool_names=[t.name for t in tools],
                message_chars=sum(len(message_text(m)) for m in messages),
                tool_schema_chars=schema_chars,
                max_tokens=model_settings.get("max_tokens"),
                temperature=model_settings.get("temperature"),
                thinking=bool(model_settings.get("thinking")),
                latency_ms=latency_ms,
                input_tokens=usage.input_tokens if usage else 0,
                output_tokens=usage.output_tokens if usage else 0,
                full_request=full,
            )
        self.snapshot_iteration += 1

    def finish(
        self,
        *,
        status: str,
        finish_reason: str,
        output_text: str,
        tool_iterations: int,
        input_tokens: int,
        output_tokens: int,
        error: str = "",
        warnings: list[str] | None = None,
        fenced: bool = True,
    ) -> None:
        finished = timezone.now()
        run = self.run
        fields = {
            "status": status,
            "finish_reason": finish_reason,
            "output_text": output_text,
            "tool_iterations": tool_iterations,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
            "error": error,
            "warnings": warnings or [],
            "finished_at": finished,
            "duration_ms": int((finished - run.started_at).total_seconds() * 1000),
        }
        writer = self._write() if fenced else unfenced_write()
        with writer:
            Run.objects.filter(pk=run.pk).update(**fields)
        for name, value in fields.items():
            setattr(run, name, value)


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
