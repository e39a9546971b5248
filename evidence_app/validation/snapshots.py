"""A verdict stored as a ValidationSnapshot: the judgement with its packet, prompt and
costs; an original verdict is also queued for the judge in shadow, in the same transaction."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from evidence_app.models import SnapshotKind, TaskAuditSettings, ValidationSnapshot
from evidence_app.trust.audits import audit_probability
from evidence_app.validation.current_judge import active_shadow_sql, shadow_enqueue
from evidence_app.validation.judge_calls import JudgePlan
from evidence_app.validation.task_settings import settings_of
from evidence_app.validator.judging import Judgement
from evidence_app.validator.schema import claim_summary
from project.costs import CURRENCY
from project.db import insert_new
from tasks_app.records import Task


def snapshot_store(
    *,
    task: Task,
    plan: JudgePlan,
    judgement: Judgement,
    kind: str = SnapshotKind.VALIDATION,
    replay_of: ValidationSnapshot | None = None,
    requested_by: Any = None,
    route: str = "",
    companion_of: ValidationSnapshot | None = None,
    own: TaskAuditSettings | None = None,
) -> ValidationSnapshot:
    packet = plan.packet
    result = judgement.result
    store = settings.VALIDATION_STORE_PROMPT
    result_json = result.model_dump(mode="json")
    snapshot = ValidationSnapshot(
        task=task,
        attempt_index=packet.attempt_index,
        kind=kind,
        replay_of=replay_of,
        requested_by=requested_by if getattr(requested_by, "is_authenticated", False) else None,
        status=result.status,
        score=result.score,
        failure_category=result.failure_category,
        result=result_json,
        model_status=result.model_status or result.status,
        claim_summary=claim_summary(result_json),
        evidence_run_ids=[run.run_id for run in packet.all_runs],
        session_ids=[run.session_id for run in packet.all_runs],
        tool_result_count=packet.tool_result_count,
        evidence_chars=packet.evidence_chars,
        raw_responses=judgement.raw_responses,
        system_prompt=judgement.system_prompt if store else "",
        rendered_input=judgement.rendered_input if store else "",
        rendered_input_chars=len(judgement.rendered_input),
        prompt_stored=store,
        template_name=plan.template.name,
        template_version=plan.template.version,
        model_name=plan.model_name,
        latency_ms=judgement.latency_ms,
        input_tokens=judgement.input_tokens,
        output_tokens=judgement.output_tokens,
        request_count=judgement.request_count,
        cost=judgement.cost.value,
        cost_currency=CURRENCY if judgement.cost.known else "",
        schema_retry_count=judgement.schema_retry_count,
        schema_errors=judgement.schema_errors,
        error=judgement.error,
        chunk_verdicts=judgement.chunk_verdicts,
        route=route,
        # With a route, the share drawn for an audit: the task's own rate (``own``: its
        # settings as the validation read them) or the setting.
        audit_probability=audit_probability(own or settings_of(task), route) if route else None,
        companion_of=companion_of,
    )
    if kind != SnapshotKind.VALIDATION:
        insert_new(snapshot)
        return snapshot
    # In the verdict's transaction: a candidate in shadow judges it too, later. Which
    # one is active is read by the verdict's own INSERT (one statement, not two).
    shadow_enqueue(snapshot, shadow_id=insert_new(snapshot, also=active_shadow_sql()))
    return snapshot
