"""Evidence and validation API.

Lists never load the big columns (evidence content, rendered validator input, raw
responses); one object's endpoint returns everything. Visibility follows the task:
requesters see their own tasks' evidence and validations, reviewers and operators all.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja import Query, Router
from ninja.errors import AuthorizationError, ValidationError

from evidence_app.api.http import require_can_decide
from evidence_app.api.schemas import (
    AgreementOut,
    ClaimLabelsIn,
    ClaimLabelsOut,
    EvidenceFormatQuery,
    EvidenceListOut,
    EvidenceOut,
    ReplayIn,
    ReplayQueuedOut,
    ReplayRequestOut,
    ValidationListOut,
    ValidationOut,
)
from evidence_app.api.trust_schemas import (
    AuditJudgementIn,
    AuditListOut,
    AuditOut,
    AuditStateQuery,
    TeamOut,
    TeamQuery,
    TrustOut,
    TrustQuery,
)
from evidence_app.models import Audit, AuditState, ReplayRequest, ValidationSnapshot
from evidence_app.review.audit_page import audit_material
from evidence_app.trust.agreement import agreement_stats
from evidence_app.trust.audits import audit_judge, audit_mark_viewed
from evidence_app.trust.blinding import (
    audit_exposure,
    audit_exposures_record,
    audit_refusal,
    audits_open_to,
)
from evidence_app.trust.claim_labels import decision_claim_labels_add
from evidence_app.trust.rates import trust_report
from evidence_app.trust.team import Durations, TeamFigures, team_figures
from evidence_app.validation.replay import replay_request
from evidence_app.validation.selectors import judge_pair_stats
from evidence_app.validator.templates import get_template
from project import roles
from project.downloads import set_attachment
from project.errors import DomainError
from project.idempotency import idempotency_header, run_idempotent
from project.llm.registry import resolve_model
from project.pagination import LimitOffset100, LimitOffsetCursor, paginate
from project.roles import require_operator
from project.schemas import error_responses, query_of, query_parameters
from tasks_app.records import Feedback, ToolEvidence, get_visible_run, require_visible_task

router = Router(tags=["evidence"])


@router.get(
    "/runs/{run_id}/evidence",
    response={200: EvidenceListOut, **error_responses(404)},
    summary="A run's tool results, without their content",
)
@paginate(LimitOffset100)
def get_run_evidence(request: HttpRequest, run_id: int) -> QuerySet[ToolEvidence]:
    run = get_visible_run(request.auth, run_id)  # type: ignore[attr-defined]
    return ToolEvidence.objects.without_content().filter(run_id=run.pk).order_by("sequence")


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
    # It names its task and attempt (a later attempt's evidence tells where the task went
    # after an earlier verdict): a read by someone who could judge an open audit of that
    # task is recorded. The audit serves its own evidence without ids that lead back.
    audit_exposures_record(
        user=user, task_ids=[item.task_id], channel=f"GET /api/v1/evidence/{evidence_id}"
    )
    if _wants_text(request, query.format):
        response = HttpResponse(item.content, content_type="text/plain; charset=utf-8")
        set_attachment(response, "evidence", item.pk, item.tool_name)
        return response
    return item


@router.get(
    "/tasks/{task_id}/validations",
    response={200: ValidationListOut, **error_responses(404)},
    summary="The task's validation snapshots and replays, without bodies",
    tags=["validations"],
)
def get_task_validations(request: HttpRequest, task_id: int) -> dict[str, Any]:
    require_visible_task(
        request.auth,  # type: ignore[attr-defined]
        task_id,
        channel=f"GET /api/v1/tasks/{task_id}/validations",
    )
    snapshots = ValidationSnapshot.objects.without_bodies().filter(task_id=task_id)
    items = list(snapshots.order_by("created_at", "id"))
    return {"items": items, "count": len(items)}


def get_visible_validation(user: Any, validation_id: int) -> ValidationSnapshot:
    snapshots = ValidationSnapshot.objects.select_related("requested_by")
    if not roles.is_staff_role(user):
        snapshots = snapshots.filter(task__owner=user)
    snapshot = snapshots.filter(pk=validation_id).first()
    if snapshot is None:
        raise Http404(f"Validation {validation_id} not found.")
    audit_exposures_record(
        user=user, task_ids=[snapshot.task_id], channel=f"the API (validation {validation_id})"
    )
    return snapshot


@router.get(
    "/validations/{validation_id}",
    response={200: ValidationOut, **error_responses(404)},
    summary="One validation snapshot: verdict, V7 metadata, rendered input, raw responses",
    description="The validator's internals (`system_prompt`, `rendered_input`, "
    "`raw_responses`, `schema_errors`) are for reviewers and operators, as on the pages: "
    "empty for a requester.",
    tags=["validations"],
)
def get_validation(request: HttpRequest, validation_id: int) -> ValidationSnapshot:
    user = request.auth  # type: ignore[attr-defined]
    snapshot = get_visible_validation(user, validation_id)
    if not roles.is_staff_role(user):
        # The validator's internals are reviewers' and operators' material, as on the
        # pages: the requester gets the verdict in words, with these fields empty.
        snapshot.system_prompt = snapshot.rendered_input = ""
        snapshot.raw_responses = []
        snapshot.schema_errors = []
    return snapshot


def _field_error(field: str, message: str) -> ValidationError:
    return ValidationError([{"loc": ("body", "payload", field), "msg": message, "type": "value"}])


@router.post(
    "/validations/{validation_id}/replay",
    response={202: ReplayQueuedOut, **error_responses(403, 404, 409)},
    summary="Re-run the validator on the stored evidence with another template or model "
    "(operators); the task is not changed",
    tags=["validations"],
)
def replay(
    request: HttpRequest,
    validation_id: int,
    payload: ReplayIn,
    idempotency_key: str | None = idempotency_header(),
) -> JsonResponse:
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

    def work() -> tuple[int, Any]:
        # Through the outbox: sent after commit (a rolled-back request queues nothing,
        # X1); a broker that is down delays the job, never fails the request.
        queued = replay_request(
            snapshot=snapshot, template=template, model=model, requested_by=user
        )
        return 202, {
            "status": "queued",
            "replay_id": queued.pk,
            "validation_id": snapshot.pk,
            "task_id": snapshot.task_id,
            "template": template,
            "model": model,
        }

    return run_idempotent(
        request,
        endpoint=f"POST /validations/{validation_id}/replay",
        key=idempotency_key,
        work=work,
    )


@router.get(
    "/replays/{replay_id}",
    response={200: ReplayRequestOut, **error_responses(403, 404)},
    summary="Where a queued replay stands: queued, running, succeeded (with the replay's "
    "validation id) or failed (with the reason) (operators)",
    tags=["validations"],
)
def get_replay(request: HttpRequest, replay_id: int) -> ReplayRequest:
    require_operator(request.auth)  # type: ignore[attr-defined]
    found = ReplayRequest.objects.select_related("original").filter(pk=replay_id).first()
    if found is None:
        raise Http404("No such replay.")
    # It names the task and leads to a verdict on the same material.
    audit_exposures_record(
        user=request.auth,  # type: ignore[attr-defined]
        task_ids=[found.original.task_id],
        channel=f"GET /api/v1/replays/{replay_id}",
    )
    return found


@router.post(
    "/tasks/{task_id}/claim-labels",
    response={201: ClaimLabelsOut, **error_responses(403, 404, 409)},
    summary="Your verdict on each claim of the validation you decided on (once per decision)",
    description="Goes with a decision taken through `POST /tasks/{task_id}/feedback`: "
    "`feedback_id` (default: the task's pending decision) must be your own satisfied, "
    "revise or abandon, pending or applied. Labels are given once per decision; an undone "
    "decision's labels do not count. Every entry is checked before anything is written.",
    tags=["validations"],
)
def claim_labels(
    request: HttpRequest,
    task_id: int,
    payload: ClaimLabelsIn,
    idempotency_key: str | None = idempotency_header(),
) -> JsonResponse:
    user = request.auth  # type: ignore[attr-defined]
    require_visible_task(user, task_id)
    require_can_decide(user, task_id)

    def work() -> tuple[int, Any]:
        try:
            decision, rows = decision_claim_labels_add(
                task_id=task_id,
                actor=user,
                labels=[entry.model_dump(exclude_none=True) for entry in payload.claims],
                feedback_id=payload.feedback_id,
                snapshot_id=payload.validation_id,
            )
        except Feedback.DoesNotExist as exc:
            raise Http404(str(exc)) from None
        items = [
            {
                "claim_index": row.claim_index,
                "claim_text": row.claim_text,
                "label": row.label,
                "judge_verdict": row.judge_verdict,
                "corrected_citation": row.corrected_citation,
            }
            for row in rows
        ]
        return 201, {
            "task_id": task_id,
            "feedback_id": decision.pk,
            "decision_state": decision.state,
            "validation_id": rows[0].snapshot_id,
            "items": items,
            "count": len(items),
        }

    return run_idempotent(
        request, endpoint=f"POST /tasks/{task_id}/claim-labels", key=idempotency_key, work=work
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
    pairs = [group.model_dump() for group in judge_pair_stats()]
    return {"items": items, "count": len(items), "judge_pairs": pairs}


# --- The review team's figures -------------------------------------------------------------


def _durations_out(durations: Durations) -> dict[str, Any]:
    return {
        "count": durations.count,
        "no_first_view": durations.no_first_view,
        "p50_seconds": durations.p50,
        "p95_seconds": durations.p95,
    }


def _team_out(team: TeamFigures) -> dict[str, Any]:
    reviewers = []
    for person in team.reviewers:
        row = person.as_dict()
        row["time"] = _durations_out(person.time)
        reviewers.append(row)
    return {
        "period": team.period,
        "since": team.since,
        "until": team.until,
        "decisions": team.decisions,
        "other_decisions": team.other_decisions,
        "audits_judged": team.audits_judged,
        "decision_time": _durations_out(team.decision_time),
        "audit_time": _durations_out(team.audit_time),
        "item_time": _durations_out(team.item_time),
        "capped": team.capped,
        "reviewers": reviewers,
        "queue": {
            "count": team.queue.count,
            "p50_seconds": team.queue.p50,
            "p95_seconds": team.queue.p95,
            "oldest_seconds": team.queue.oldest,
            "oldest_task_id": team.queue.oldest_task_id,
        },
        "audits": {
            "open": team.audits.count,
            "oldest_seconds": team.audits.oldest,
            "oldest_audit_id": team.audits.oldest_audit_id,
        },
    }


@router.get(
    "/team",
    response={200: TeamOut, **error_responses(403)},
    summary="The review team's figures for a period: decisions per reviewer, time per "
    "item from first view to decision, the review queue's age and the audits waiting "
    "(operators)",
    tags=["validations"],
    openapi_extra=query_parameters(TeamQuery),
)
def team(request: HttpRequest) -> dict[str, Any]:
    require_operator(request.auth)  # type: ignore[attr-defined]
    query = query_of(TeamQuery, request)
    return _team_out(team_figures(query.period))


@router.get(
    "/trust",
    response={200: TrustOut, **error_responses(403)},
    summary="The certified false-accept and false-reject rates per template version and "
    "model: the last 30 days and per day, week or month, from the blind audits (operators)",
    tags=["validations"],
    openapi_extra=query_parameters(TrustQuery),
)
def trust(request: HttpRequest) -> dict[str, Any]:
    # The role first: a requester is answered 403 whatever parameters they send.
    require_operator(request.auth)  # type: ignore[attr-defined]
    query = query_of(TrustQuery, request)
    report = trust_report(period=query.period, target=query.target)
    return {**vars(report), "items": report.groups, "count": len(report.groups)}


# --- Audits (blind until judged) -------------------------------------------------------------


def _require_audit_reader(user: Any) -> None:
    # The review queue's roles: reviewers judge, operators look.
    if not roles.is_staff_role(user):
        raise AuthorizationError(message="Only reviewers and operators see audits.")


def _audits() -> QuerySet[Audit]:
    return Audit.objects.select_related("task", "reviewer", "snapshot").defer(
        "task__request",
        "task__rules",
        "task__final_answer",
        "task__plan",
        "snapshot__rendered_input",
        "snapshot__system_prompt",
        "snapshot__raw_responses",
    )


def _audit_or_404(audit_id: int) -> Audit:
    found = _audits().filter(pk=audit_id).first()
    if found is None:
        raise Http404(f"Audit {audit_id} not found.")
    return found


@router.get(
    "/audits",
    response={200: AuditListOut, **error_responses(403, 404)},
    summary="Audits, oldest first (reviewers and operators); an open one shows no verdict",
    tags=["audits"],
)
@paginate(LimitOffsetCursor)
def get_audits(request: HttpRequest, query: Query[AuditStateQuery]) -> QuerySet[Audit]:
    user = request.auth  # type: ignore[attr-defined]
    _require_audit_reader(user)
    audits = _audits().filter(state=query.state)
    if query.state == "open" and roles.is_reviewer(user):
        # A reviewer's list never offers them their own work.
        audits = audits.filter(pk__in=audits_open_to(user).values("pk"))
    return audits.order_by("created_at", "id")


@router.get(
    "/audits/{audit_id}",
    response={200: AuditOut, **error_responses(403, 404)},
    summary="One audit with what to judge it by (request, rules, answer, claims, "
    "evidence); the verdict only once judged",
    description="Blind while open: `material` holds the request, rules, answer and the "
    "audited attempt's tool results, numbered by their place in the audit (never an id "
    "that leads back to the task); no verdict, route, score, task id or title. A "
    "reviewer's first GET of an open audit is their first view (time per item; a "
    "judgement without one is recorded as such). `refusal` says why you may not judge it "
    "(the task's requester or someone who decided it); `not_blind` what you read of its "
    "verdict or status while it was open (your judgement is then stored, not counted).",
    tags=["audits"],
)
def get_audit(request: HttpRequest, audit_id: int) -> Audit:
    user = request.auth  # type: ignore[attr-defined]
    _require_audit_reader(user)
    found = _audit_or_404(audit_id)
    found.material = audit_material(found)  # type: ignore[attr-defined]
    if found.state == AuditState.OPEN and roles.is_reviewer(user):
        audit_mark_viewed(audit_id=found.pk, user=user)
        exposure = audit_exposure(found, user)
        found.refusal = audit_refusal(found, user)  # type: ignore[attr-defined]
        found.not_blind = exposure.channel if exposure else None  # type: ignore[attr-defined]
    return found


@router.post(
    "/audits/{audit_id}/judgement",
    response={200: AuditOut, **error_responses(403, 404, 409)},
    summary="Judge an open audit blind (reviewers): correct or not, claim verdicts; the "
    "answer reveals the validator's verdict",
    description="`comment` is required when `correct` is false. A bad claim index or label "
    "refuses the whole judgement (422); an audit already judged answers 409. Nothing is "
    "written on a refusal.",
    tags=["audits"],
)
def judge_audit(
    request: HttpRequest,
    audit_id: int,
    payload: AuditJudgementIn,
    idempotency_key: str | None = idempotency_header(),
) -> JsonResponse:
    user = request.auth  # type: ignore[attr-defined]
    _require_audit_reader(user)
    _audit_or_404(audit_id)

    def work() -> tuple[int, Any]:
        with transaction.atomic():
            audit_judge(
                audit_id,
                user=user,
                correct=payload.correct,
                comment=payload.comment,
                claim_labels=[c.model_dump(exclude_none=True) for c in payload.claims],
            )
            return 200, AuditOut.model_validate(_audit_or_404(audit_id)).model_dump(mode="json")

    return run_idempotent(
        request,
        endpoint=f"POST /audits/{audit_id}/judgement",
        key=idempotency_key,
        work=work,
    )
