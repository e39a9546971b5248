"""Evidence packets built from stored rows: ``ToolEvidence`` items grouped into
``RunEvidence`` per run and one ``TaskEvidencePacket`` per attempt.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models.fields.json import KeyTextTransform
from pydantic import BaseModel, Field

from project.db import MARKER_ID, MARKER_INDEX, Prepared
from tasks_app.records import RUN_ABANDONED_BY_DEAD_WORKER, Run, RunKind, RunMessage, Task
from tasks_app.records import ToolEvidence as StoredToolEvidence


class ToolEvidence(BaseModel):
    evidence_id: int
    tool_name: str
    tool_call_id: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    content: str
    content_sha256: str
    is_error: bool = False
    url: str | None = None
    title: str | None = None
    event_payload: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime | None = None


class TranscriptMessage(BaseModel):
    index: int
    role: str
    content: str
    tool_call_id: str | None = None


class RunEvidence(BaseModel):
    run_id: int
    session_id: str
    kind: str
    node_id: str = ""
    node_role: str = ""
    model_name: str = ""
    status: str = ""
    output_text: str = ""
    finish_reason: str = ""
    error: str = ""
    transcript: list[TranscriptMessage] = Field(default_factory=list)
    tool_results: list[ToolEvidence] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class NodeRunResult(BaseModel):
    node_id: str
    role: str
    success: bool
    finish_reason: str
    output_text: str
    error: str = ""
    run_id: int


class TaskEvidencePacket(BaseModel):
    task_id: int
    attempt_index: int
    request: str
    rules: str = ""
    main_run: RunEvidence | None = None
    team_runs: list[RunEvidence] = Field(default_factory=list)
    team_node_results: list[NodeRunResult] = Field(default_factory=list)
    final_output: str = ""

    @property
    def all_runs(self) -> list[RunEvidence]:
        """Team runs in graph order, then the main (or synthesis) run."""
        return [*self.team_runs, *([self.main_run] if self.main_run else [])]

    @property
    def tool_result_count(self) -> int:
        return sum(len(run.tool_results) for run in self.all_runs)

    @property
    def evidence_chars(self) -> int:
        return sum(len(tr.content) for run in self.all_runs for tr in run.tool_results)


_SUCCESS_FINISH = {"stop", "completed", "max_tool_iterations_finalized"}


class _Run(NamedTuple):
    """One run as ``build_packet`` reads it (the columns are its fields)."""

    id: int
    session_id: Any
    kind: str
    node_id: str
    node_role: str
    model_name: str
    status: str
    output_text: str
    finish_reason: str
    error: str
    warnings: list[str] | None
    graph_index: int


_RUN_FIELDS = _Run._fields
_EVIDENCE_FIELDS = (
    "id",
    "run_id",
    "tool_name",
    "tool_call_id",
    "arguments",
    "content",
    "content_sha256",
    "is_error",
    "url",
    "title",
    "event_payload",
    "created_at",
)


@functools.cache
def _prepared() -> tuple[Prepared, Prepared, Prepared]:
    """The three queries of ``build_packet``, compiled once: the attempt's
    runs (without those a dead worker left when its attempt was re-run: they
    stay stored as evidence of what happened, but the answer to judge is the live
    worker's), its tool evidence, and its transcripts with only each payload's tool
    call id (extracted by the database: model payloads are neither sent nor parsed)."""
    markers = {"task_id": MARKER_ID, "attempt": MARKER_INDEX}
    runs = (
        Run.objects.filter(task_id=MARKER_ID, attempt_index=MARKER_INDEX)
        .exclude(finish_reason__in=RUN_ABANDONED_BY_DEAD_WORKER)
        .order_by("graph_index", "id")
        .values_list(*_RUN_FIELDS)
    )
    evidence = (
        StoredToolEvidence.objects.filter(task_id=MARKER_ID, attempt_index=MARKER_INDEX)
        .order_by("run_id", "sequence")
        .values_list(*_EVIDENCE_FIELDS)
    )
    transcript = (
        RunMessage.objects.filter(run__task_id=MARKER_ID, run__attempt_index=MARKER_INDEX)
        .order_by("run_id", "index")
        .values_list(
            "run_id", "index", "role", "content", KeyTextTransform("tool_call_id", "payload")
        )
    )
    return (
        Prepared(runs, **markers),
        Prepared(evidence, **markers),
        Prepared(transcript, **markers),
    )


def build_packet(task: Task, attempt: int) -> TaskEvidencePacket:
    """Assemble the packet of one attempt from stored rows, in three queries of plain
    values (this runs once per validation)."""
    run_rows, evidence_rows, transcript_rows = (
        prepared.rows(task_id=task.pk, attempt=attempt) for prepared in _prepared()
    )
    runs = [_Run(*row) for row in run_rows]
    evidence_by_run = _evidence_by_run(runs, evidence_rows)
    transcript_by_run = _transcript_by_run(runs, transcript_rows)
    main_run: RunEvidence | None = None
    team_runs: list[RunEvidence] = []
    node_results: list[NodeRunResult] = []
    for run in runs:
        evidence = _run_evidence(run, transcript_by_run[run.id], evidence_by_run[run.id])
        if run.kind == RunKind.TEAM_NODE:
            team_runs.append(evidence)
            node_results.append(_node_result(run))
        else:
            # The synthesis run of a team attempt, or the single main run. A later
            # main/synthesis run of the same attempt supersedes an earlier one.
            main_run = evidence
    return TaskEvidencePacket(
        task_id=task.pk,
        attempt_index=attempt,
        request=task.request,
        rules=task.rules,
        main_run=main_run,
        team_runs=team_runs,
        team_node_results=node_results,
        final_output=main_run.output_text if main_run else "",
    )


def _evidence_by_run(
    runs: list[_Run], rows: Iterable[Sequence[Any]]
) -> dict[int, list[ToolEvidence]]:
    """Each run's tool evidence; the rows of runs left out of ``runs`` are dropped."""
    by_run: dict[int, list[ToolEvidence]] = {run.id: [] for run in runs}
    for row in rows:
        item = dict(zip(_EVIDENCE_FIELDS, row, strict=True))
        if item["run_id"] not in by_run:
            continue
        by_run[item["run_id"]].append(
            ToolEvidence(
                evidence_id=item["id"],
                tool_name=item["tool_name"],
                tool_call_id=item["tool_call_id"],
                arguments=item["arguments"] or {},
                content=item["content"],
                content_sha256=item["content_sha256"],
                is_error=item["is_error"],
                url=item["url"] or None,
                title=item["title"] or None,
                event_payload=item["event_payload"] or {},
                created_at=item["created_at"],
            )
        )
    return by_run


def _transcript_by_run(
    runs: list[_Run], rows: Iterable[Sequence[Any]]
) -> dict[int, list[TranscriptMessage]]:
    """Each run's transcript; the rows of runs left out of ``runs`` are dropped."""
    by_run: dict[int, list[TranscriptMessage]] = {run.id: [] for run in runs}
    for run_id, index, role, content, tool_call_id in rows:
        if run_id in by_run:
            by_run[run_id].append(
                TranscriptMessage(
                    index=index, role=role, content=content, tool_call_id=tool_call_id
                )
            )
    return by_run


def _run_evidence(
    run: _Run, transcript: list[TranscriptMessage], tool_results: list[ToolEvidence]
) -> RunEvidence:
    return RunEvidence(
        run_id=run.id,
        session_id=str(run.session_id),
        kind=run.kind,
        node_id=run.node_id,
        node_role=run.node_role,
        model_name=run.model_name,
        status=run.status,
        output_text=run.output_text,
        finish_reason=run.finish_reason,
        error=run.error,
        transcript=transcript,
        tool_results=tool_results,
        warnings=list(run.warnings or []),
    )


def _node_result(run: _Run) -> NodeRunResult:
    return NodeRunResult(
        node_id=run.node_id,
        role=run.node_role,
        success=run.status == "completed" and run.finish_reason in _SUCCESS_FINISH,
        finish_reason=run.finish_reason,
        output_text=run.output_text,
        error=run.error,
        run_id=run.id,
    )
