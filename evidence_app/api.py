"""Evidence and validation API (SPEC A1, E1, V7, V9, V10).

Lists never load the big columns (evidence content, rendered validator input, raw
responses); one object's endpoint returns everything. Visibility follows the task:
requesters see their own tasks' evidence and validations, reviewers and operators all.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from ninja import Query, Router, Status
from ninja.errors import ValidationError

from evidence_app.agreement import agreement_stats
from evidence_app.jobs import replay_validation_job
from evidence_app.models import ToolEvidence, ValidationSnapshot
from evidence_app.schemas import (
    AgreementOut,
    EvidenceFormatQuery,
    EvidenceListOut,
    EvidenceOut,
    EvidencePageQuery,
    ReplayIn,
    ReplayQueuedOut,
    ValidationListOut,
    ValidationOut,
)
from evidence_app.validator.templates import get_template
from tasks_app import roles
from tasks_app.agents.models import resolve_model
from tasks_app.api import (
    as_list,
    get_visible_run,
    require_operator,
    require_visible_task,
    verdict,
)
from tasks_app.errors import DomainError
from tasks_app.schemas import error_responses

router = Router(tags=["evidence"])


def _evidence_list_item(evidence: ToolEvidence) -> dict[str, Any]:
    return {
        "id": evidence.pk,
        "run_id": evidence.run_id,
        "task_id": evidence.task_id,
        "attempt_index": evidence.attempt_index,
        "sequence": evidence.sequence,
        "tool_name": evidence.tool_name,
        "tool_call_id": evidence.tool_call_id,
        "arguments": evidence.arguments
        if isinstance(evidence.arguments, dict)
        else {"value": evidence.arguments},
        "content_chars": evidence.content_chars,
        "content_sha256": evidence.content_sha256,
        "is_error": evidence.is_error,
        "url": evidence.url,
        "title": evidence.title,
        "created_at": evidence.created_at,
    }


@router.get(
    "/runs/{run_id}/evidence",
    response={200: EvidenceListOut, **error_responses(404)},
    summary="A run's tool results, without their content",
)
def get_run_evidence(
    request: HttpRequest, run_id: int, query: Query[EvidencePageQuery]
) -> dict[str, Any]:
    run = get_visible_run(request.auth, run_id)  # type: ignore[attr-defined]
    evidence = ToolEvidence.objects.without_content().filter(run_id=run.pk).order_by("sequence")
    count = evidence.count()
    items = [_evidence_list_item(e) for e in evidence[query.offset : query.offset + query.limit]]
    return {"items": items, "count": count}


TEXT_PLAIN_DOC = {
    "responses": {
        200: {
            "description": "The evidence; with ?format=text or Accept: text/plain, its "
            "content as a text/plain download",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    }
}


def _wants_text(request: HttpRequest, format: str) -> bool:
    if format == "text":
        return True
    accept = request.headers.get("Accept", "")
    return "text/plain" in accept and "application/json" not in accept


@router.get(
    "/evidence/{evidence_id}",
    response={200: EvidenceOut, **error_responses(404)},
    summary="One tool result with its full content (JSON or text/plain download)",
    openapi_extra=TEXT_PLAIN_DOC,
)
def get_evidence(request: HttpRequest, evidence_id: int, query: Query[EvidenceFormatQuery]) -> Any:
    user = request.auth  # type: ignore[attr-defined]
    evidence = ToolEvidence.objects.all()
    if not roles.is_staff_role(user):
        evidence = evidence.filter(task__owner=user)
    item = evidence.filter(pk=evidence_id).first()
    if item is None:
        raise Http404(f"Evidence {evidence_id} not found.")
    if _wants_text(request, query.format):
        response = HttpResponse(item.content, content_type="text/plain; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="evidence-{item.pk}-{item.tool_name}.txt"'
        )
        return response
    data = _evidence_list_item(item)
    data["content"] = item.content
    payload = item.event_payload
    data["event_payload"] = payload if isinstance(payload, dict) else {"value": payload}
    return data


def _validation_list_item(snapshot: ValidationSnapshot) -> dict[str, Any]:
    return {
        "id": snapshot.pk,
        "task_id": snapshot.task_id,
        "attempt_index": snapshot.attempt_index,
        "kind": snapshot.kind,
        "replay_of_id": snapshot.replay_of_id,
        "status": snapshot.status,
        "passed": snapshot.passed,
        "score": snapshot.score,
        "failure_category": snapshot.failure_category or None,
        "template_name": snapshot.template_name,
        "template_version": snapshot.template_version,
        "model": snapshot.model_name,
        "latency_ms": snapshot.latency_ms,
        "input_tokens": snapshot.input_tokens,
        "output_tokens": snapshot.output_tokens,
        "schema_retry_count": snapshot.schema_retry_count,
        "tool_result_count": snapshot.tool_result_count,
        "evidence_chars": snapshot.evidence_chars,
        "rendered_input_chars": snapshot.rendered_input_chars,
        "error": snapshot.error,
        "created_at": snapshot.created_at,
    }


@router.get(
    "/tasks/{task_id}/validations",
    response={200: ValidationListOut, **error_responses(404)},
    summary="The task's validation snapshots and replays, without bodies",
    tags=["validations"],
)
def get_task_validations(request: HttpRequest, task_id: int) -> dict[str, Any]:
    require_visible_task(request.auth, task_id)  # type: ignore[attr-defined]
    snapshots = ValidationSnapshot.objects.without_bodies().filter(task_id=task_id)
    items = [_validation_list_item(s) for s in snapshots.order_by("created_at", "id")]
    return {"items": items, "count": len(items)}


def get_visible_validation(user: Any, validation_id: int) -> ValidationSnapshot:
    snapshots = ValidationSnapshot.objects.select_related("requested_by")
    if not roles.is_staff_role(user):
        snapshots = snapshots.filter(task__owner=user)
    snapshot = snapshots.filter(pk=validation_id).first()
    if snapshot is None:
        raise Http404(f"Validation {validation_id} not found.")
    return snapshot


@router.get(
    "/validations/{validation_id}",
    response={200: ValidationOut, **error_responses(404)},
    summary="One validation snapshot: verdict, V7 metadata, rendered input, raw responses",
    tags=["validations"],
)
def get_validation(request: HttpRequest, validation_id: int) -> dict[str, Any]:
    snapshot = get_visible_validation(request.auth, validation_id)  # type: ignore[attr-defined]
    data = _validation_list_item(snapshot)
    judged = verdict(snapshot) or {}
    data.update(
        issues=judged.get("issues", []),
        missing_requirements=judged.get("missing_requirements", []),
        evidence_gaps=judged.get("evidence_gaps", []),
        recommended_revision_prompt=judged.get("recommended_revision_prompt"),
        reasoning=judged.get("reasoning", ""),
        result=snapshot.result if isinstance(snapshot.result, dict) else {},
        system_prompt=snapshot.system_prompt,
        rendered_input=snapshot.rendered_input,
        prompt_stored=snapshot.prompt_stored,
        raw_responses=as_list(snapshot.raw_responses),
        evidence_run_ids=as_list(snapshot.evidence_run_ids),
        session_ids=as_list(snapshot.session_ids),
        request_count=snapshot.request_count,
        schema_errors=as_list(snapshot.schema_errors),
        chunk_verdicts=as_list(snapshot.chunk_verdicts),
        requested_by=(snapshot.requested_by.get_username() if snapshot.requested_by_id else None),
    )
    return data


def _field_error(field: str, message: str) -> ValidationError:
    return ValidationError([{"loc": ("body", "payload", field), "msg": message, "type": "value"}])


@router.post(
    "/validations/{validation_id}/replay",
    response={202: ReplayQueuedOut, **error_responses(403, 404)},
    summary="Re-run the validator on the stored evidence with another template or model "
    "(operators); the task is not changed",
    tags=["validations"],
)
def replay(request: HttpRequest, validation_id: int, payload: ReplayIn) -> Status:
    user = request.auth  # type: ignore[attr-defined]
    require_operator(user)
    snapshot = get_visible_validation(user, validation_id)
    # Refuse a bad template or model now, with a 422 naming it, rather than storing a
    # validator_error replay later.
    template = (payload.template or "").strip() or None
    model = (payload.model or "").strip() or None
    if template is not None:
        try:
            get_template(template)
        except DomainError as exc:
            raise _field_error("template", exc.message) from None
    if model is not None:
        try:
            resolve_model(model)
        except DomainError as exc:
            raise _field_error("model", exc.message) from None

    # Sent after commit: a rolled-back request queues nothing (X1).
    replay_validation_job.delay_on_commit(snapshot.pk, template, model, user.pk)
    return Status(
        202,
        {
            "status": "queued",
            "validation_id": snapshot.pk,
            "task_id": snapshot.task_id,
            "template": template,
            "model": model,
        },
    )


@router.get(
    "/stats/agreement",
    response={200: AgreementOut, **error_responses(403)},
    summary="Validator-human agreement per template version and model (operators)",
    tags=["validations"],
)
def agreement(request: HttpRequest) -> dict[str, Any]:
    require_operator(request.auth)  # type: ignore[attr-defined]
    items = [group.model_dump() for group in agreement_stats()]
    return {"items": items, "count": len(items)}
