"""Response schemas of the runs API: a task's runs and a run's transcript.

Lists are ``{"items": [...], "count": N}``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Schema

from project.schemas import as_list
from tasks_app.runtime.models import Run


class RunOut(Schema):
    id: int
    task_id: int
    attempt_index: int
    kind: str
    node_id: str
    node_role: str
    graph_index: int
    session_id: str
    model: str
    status: str
    finish_reason: str
    output_text: str
    usage: dict[str, Any]
    input_tokens: int
    output_tokens: int
    tool_iterations: int
    evidence_count: int
    started_at: datetime
    finished_at: datetime | None
    duration_ms: int | None
    error: str
    warnings: list[Any]

    @staticmethod
    def resolve_session_id(run: Run) -> str:
        return str(run.session_id)

    @staticmethod
    def resolve_model(run: Run) -> str:
        return run.model_name

    @staticmethod
    def resolve_usage(run: Run) -> dict[str, Any]:
        return run.usage if isinstance(run.usage, dict) else {}

    @staticmethod
    def resolve_evidence_count(run: Run) -> int:
        return getattr(run, "evidence_count", 0)

    @staticmethod
    def resolve_warnings(run: Run) -> list[Any]:
        return as_list(run.warnings)


class RunListOut(Schema):
    items: list[RunOut]
    count: int


class RunMessageOut(Schema):
    id: int
    index: int
    role: str
    content: str
    payload: dict[str, Any]
    created_at: datetime

    @staticmethod
    def resolve_payload(message: Any) -> dict[str, Any]:
        payload = message.payload
        return payload if isinstance(payload, dict) else {"value": payload}


class RunMessageListOut(Schema):
    items: list[RunMessageOut]
    count: int
