"""The judge API (operators): every judge with its certified auto-accept threshold and
the operations of the Trust page (certify, shadow, approve, stop), the judge gate of the
judge page (compare a candidate, make it the default, shadow mode), and the labelled
cases taken out as JSON Lines. Each operation calls the service its page calls, so the
rules, the refusals (nothing changed) and the records are the same."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.http import Http404, HttpRequest, JsonResponse, StreamingHttpResponse
from django.utils import timezone
from ninja import Query, Router, Status
from ninja.errors import ValidationError

from evidence_app.api.judge_schemas import (
    CertifyQueuedOut,
    ComparisonIn,
    ComparisonListOut,
    ComparisonOut,
    DefaultIn,
    DefaultJudgeOut,
    JudgesOut,
    LabelledCasesQuery,
    ShadowIn,
    ShadowStateOut,
    ThresholdOut,
    ThresholdStopIn,
)
from evidence_app.autoaccept.services import (
    threshold_approve,
    threshold_certify_request,
    threshold_shadow_start,
    threshold_stop,
)
from evidence_app.judges.figures import BETTER, latest_shadow, recent_comparisons, shadow_figures
from evidence_app.judges.gate import (
    MIN_COMPARED_CASES,
    DefaultChange,
    comparison_is_stale,
    comparison_request,
    judge_default_make,
    shadow_start,
    shadow_stop,
)
from evidence_app.judges.judge_list import (
    JudgeEntry,
    judges_list,
    shadow_ready_at,
    threshold_shadow,
)
from evidence_app.judges.labelled_cases import CaseExport, labelled_case_lines
from evidence_app.models import AutoAcceptThreshold, JudgeComparison, ShadowJudge
from evidence_app.validation.current_judge import current_judge
from evidence_app.validator.templates import get_template
from project.errors import DomainError
from project.idempotency import idempotency_header, run_idempotent
from project.llm.registry import resolve_model
from project.roles import require_operator
from project.schemas import error_responses

router = Router(tags=["judges"])


def _name(user: Any) -> str | None:
    return user.get_username() if user is not None else None


# --- Judges and their thresholds ---------------------------------------------------------------


def threshold_out(row: AutoAcceptThreshold) -> dict[str, Any]:
    shadow = threshold_shadow(row)
    approved = row.approved_at is not None
    return {
        "id": row.pk,
        "state": row.state,
        "template_version": row.template_version,
        "model": row.model_name,
        "threshold": row.threshold,
        "target": row.target,
        "delta": row.delta,
        "labelled": row.labelled,
        "automated": row.automated,
        "risk": row.risk,
        "upper": row.upper,
        "guarantee": row.guarantee,
        "curve": row.curve,
        "computed_at": row.computed_at,
        "shadow_started_at": row.shadow_started_at,
        "shadow_started_by": _name(row.shadow_started_by),
        "shadow_ready_at": shadow_ready_at(row),
        "shadow": vars(shadow) if shadow is not None else None,
        "approved_at": row.approved_at,
        "approved_by": _name(row.approved_by),
        "retired_at": row.retired_at,
        "drift": (
            {
                "audits": row.drift_audits,
                "wrong": row.drift_wrong,
                "statistic": row.drift_statistic,
                "stopped": row.stopped,
                "stopped_at": row.stopped_at,
                "stopped_by": _name(row.stopped_by),
                "reason": row.stop_reason,
            }
            if approved
            else None
        ),
    }


def _judge_out(entry: JudgeEntry) -> dict[str, Any]:
    overview = entry.overview
    approved = overview.approved if overview else None
    pending = overview.pending if overview else None
    if approved is None:
        auto_accept = "not_certified"
    else:
        auto_accept = "stopped" if approved.stopped else "certified"
    return {
        "template_version": entry.key.template_version,
        "model": entry.key.model_name,
        "role": entry.role or "other",
        "auto_accept": auto_accept,
        "approved": threshold_out(approved) if approved else None,
        "certification": threshold_out(pending) if pending else None,
        "accepted_30d": overview.accepted if overview else 0,
        "auto_accepted_30d": overview.auto_accepted if overview else 0,
    }


@router.get(
    "/judges",
    response={200: JudgesOut, **error_responses(403)},
    summary="Every judge: default or shadow, its certification with the curve and the "
    "guarantee, its approved threshold and drift state (operators)",
)
def get_judges(request: HttpRequest) -> dict[str, Any]:
    require_operator(request.auth)  # type: ignore[attr-defined]
    items = [_judge_out(entry) for entry in judges_list()]
    return {
        "items": items,
        "count": len(items),
        "target": settings.TRUST_TARGET_FALSE_ACCEPT,
        "shadow_hours": settings.AUTOACCEPT_SHADOW_HOURS,
    }


def _threshold_or_404(threshold_id: int) -> AutoAcceptThreshold:
    found = (
        AutoAcceptThreshold.objects.select_related("shadow_started_by", "approved_by", "stopped_by")
        .filter(pk=threshold_id)
        .first()
    )
    if found is None:
        raise Http404(f"Threshold {threshold_id} not found.")
    return found


@router.get(
    "/judges/thresholds/{threshold_id}",
    response={200: ThresholdOut, **error_responses(403, 404)},
    summary="One certification of a judge, whatever its state (operators)",
)
def get_threshold(request: HttpRequest, threshold_id: int) -> dict[str, Any]:
    require_operator(request.auth)  # type: ignore[attr-defined]
    return threshold_out(_threshold_or_404(threshold_id))


@router.post(
    "/judges/certify",
    response={202: CertifyQueuedOut, **error_responses(403)},
    summary="Certify every judge's threshold on its labelled verdicts now, in the "
    "background (operators)",
    description="Queues the job Celery beat sends every AUTOACCEPT_RECOMPUTE_SECONDS: each "
    "judge with labels is certified at TRUST_TARGET_FALSE_ACCEPT (a new proposal, or the "
    "pending one brought up to date) and the drift rule runs on every approved threshold. "
    "Follow it on `GET /judges`: a certification made after `requested_at` has a later "
    "`computed_at`.",
)
def certify_judges(request: HttpRequest) -> Status:
    user = request.auth  # type: ignore[attr-defined]
    require_operator(user)
    requested_at = timezone.now()
    job_id = threshold_certify_request(user=user)
    return Status(202, {"status": "queued", "job_id": job_id, "requested_at": requested_at})


def _threshold_operation(request: HttpRequest, threshold_id: int, operation: Any) -> Any:
    require_operator(request.auth)  # type: ignore[attr-defined]
    _threshold_or_404(threshold_id)
    row = operation()
    return threshold_out(_threshold_or_404(row.pk))


@router.post(
    "/judges/thresholds/{threshold_id}/shadow",
    response={200: ThresholdOut, **error_responses(403, 404, 409)},
    summary="Start a proposed threshold's shadow: it moves no task, its figures show what "
    "it would have done (operators)",
    description="409 when it is no longer a proposal; 422 when nothing is certified (no τ). "
    "Nothing changes on a refusal.",
)
def shadow_threshold(request: HttpRequest, threshold_id: int) -> Any:
    user = request.auth  # type: ignore[attr-defined]
    return _threshold_operation(
        request,
        threshold_id,
        lambda: threshold_shadow_start(threshold_id=threshold_id, user=user),
    )


@router.post(
    "/judges/thresholds/{threshold_id}/approve",
    response={200: ThresholdOut, **error_responses(403, 404, 409)},
    summary="Approve a threshold whose shadow ran AUTOACCEPT_SHADOW_HOURS: it routes the "
    "judge's accepts from now, the previous one is retired (operators)",
    description="409 when it is not in shadow; 422 while its shadow is too short (the "
    "answer says until when). Nothing changes on a refusal. Writes the "
    "`auto_accept.approved` webhook event.",
)
def approve_threshold(request: HttpRequest, threshold_id: int) -> Any:
    user = request.auth  # type: ignore[attr-defined]
    return _threshold_operation(
        request, threshold_id, lambda: threshold_approve(threshold_id=threshold_id, user=user)
    )


@router.post(
    "/judges/thresholds/{threshold_id}/stop",
    response={200: ThresholdOut, **error_responses(403, 404, 409)},
    summary="Stop an approved threshold's auto-accept: every accept of its judge goes to "
    "a person, recorded with who and why, until a new threshold is approved (operators)",
    description="409 when it is not the approved threshold or is already stopped; 422 "
    "without a reason of at least 10 characters. Nothing changes on a refusal. Writes the "
    "`auto_accept.stopped` webhook event.",
)
def stop_threshold(request: HttpRequest, threshold_id: int, payload: ThresholdStopIn) -> Any:
    user = request.auth  # type: ignore[attr-defined]
    return _threshold_operation(
        request,
        threshold_id,
        lambda: threshold_stop(threshold_id=threshold_id, user=user, reason=payload.reason),
    )


# --- The judge gate ------------------------------------------------------------------------------


def comparison_out(comparison: JudgeComparison, current: tuple[str, str]) -> dict[str, Any]:
    finished = comparison.finished and bool(comparison.figures)
    stale = comparison_is_stale(comparison, current)
    return {
        "id": comparison.pk,
        "template": comparison.template,
        "model": comparison.model,
        "baseline_template": comparison.baseline_template,
        "baseline_model": comparison.baseline_model,
        "case_filter": comparison.case_filter,
        "state": comparison.state,
        "done": comparison.done,
        "total": comparison.total,
        "error": comparison.error,
        "requested_by": _name(comparison.requested_by),
        "created_at": comparison.created_at,
        "finished_at": comparison.finished_at,
        "stale": stale,
        "can_default": finished and not stale and comparison.done >= MIN_COMPARED_CASES,
        "needs_reason": finished and comparison.figures.get("verdict") != BETTER,
        "figures": comparison.figures or {},
    }


def _field_error(field: str, message: str) -> ValidationError:
    return ValidationError([{"loc": ("body", "payload", field), "msg": message, "type": "value"}])


def _candidate(template: str, model: str) -> tuple[str, str]:
    """The template's name and the model, stripped; a 422 naming the field when this
    deployment has no such template or cannot use the model (the page form's checks)."""
    try:
        name = get_template(template.strip()).name
    except DomainError as exc:
        raise _field_error("template", exc.message) from None
    try:
        resolve_model(model.strip())
    except DomainError as exc:
        raise _field_error("model", exc.message) from None
    return name, model.strip()


@router.get(
    "/judges/comparisons",
    response={200: ComparisonListOut, **error_responses(403)},
    summary="The latest comparisons of a candidate with the judge, newest first (operators)",
)
def get_comparisons(request: HttpRequest) -> dict[str, Any]:
    require_operator(request.auth)  # type: ignore[attr-defined]
    current = current_judge()
    items = [comparison_out(c, current) for c in recent_comparisons()]
    return {
        "items": items,
        "count": len(items),
        "current_template": current[0],
        "current_model": current[1],
        "min_cases": MIN_COMPARED_CASES,
    }


@router.post(
    "/judges/comparisons",
    response={202: ComparisonOut, **error_responses(403, 409)},
    summary="Compare a candidate template and model with the current judge on the "
    "held-out labelled cases, in the background (operators)",
    description="Follow it at `GET /judges/comparisons/{id}` (`state`, `done` of `total`, "
    "then `figures`). A template or model this deployment lacks, or a case filter no "
    "held-out case matches, answers 422 with nothing queued. `Idempotency-Key` header.",
)
def compare_judges(
    request: HttpRequest,
    payload: ComparisonIn,
    idempotency_key: str | None = idempotency_header(),
) -> JsonResponse:
    user = request.auth  # type: ignore[attr-defined]
    require_operator(user)
    template, model = _candidate(payload.template, payload.model)
    cases = [part.strip() for part in payload.cases if part.strip()]

    def work() -> tuple[int, Any]:
        with transaction.atomic():
            comparison = comparison_request(
                template=template, model=model, requested_by=user, case_filter=cases
            )
        body = ComparisonOut.model_validate(comparison_out(comparison, current_judge()))
        return 202, body.model_dump(mode="json")

    return run_idempotent(
        request, endpoint="POST /judges/comparisons", key=idempotency_key, work=work
    )


def _comparison_or_404(comparison_id: int) -> JudgeComparison:
    found = JudgeComparison.objects.select_related("requested_by").filter(pk=comparison_id).first()
    if found is None:
        raise Http404(f"Comparison {comparison_id} not found.")
    return found


@router.get(
    "/judges/comparisons/{comparison_id}",
    response={200: ComparisonOut, **error_responses(403, 404)},
    summary="One comparison: its progress, then its figures and verdict (operators)",
)
def get_comparison(request: HttpRequest, comparison_id: int) -> dict[str, Any]:
    require_operator(request.auth)  # type: ignore[attr-defined]
    return comparison_out(_comparison_or_404(comparison_id), current_judge())


def shadow_judge_out(shadow: ShadowJudge | None) -> dict[str, Any] | None:
    if shadow is None:
        return None
    return {
        "id": shadow.pk,
        "template": shadow.template,
        "model": shadow.model,
        "active": shadow.active,
        "started_at": shadow.started_at,
        "started_by": _name(shadow.started_by),
        "stopped_at": shadow.stopped_at,
        "stopped_by": _name(shadow.stopped_by),
    }


def _default_out(change: DefaultChange) -> dict[str, Any]:
    default = change.default
    return {
        "template": default.template,
        "model": default.model,
        "chosen_at": default.chosen_at,
        "chosen_by": _name(default.chosen_by),
        "comparison_id": default.comparison_id,
        "note": default.note,
        "shadow_stopped": shadow_judge_out(change.shadow_stopped),
        "shadow_restarted": shadow_judge_out(change.shadow_restarted),
    }


@router.post(
    "/judges/comparisons/{comparison_id}/default",
    response={200: DefaultJudgeOut, **error_responses(403, 404, 409)},
    summary="Make a finished comparison's candidate the default judge of every new "
    "verdict, recorded with who, why and the comparison (operators)",
    description="409 while the comparison is not finished; 422 when it was made against "
    "another judge, judged fewer than the minimum of cases, or did not find the candidate "
    "better and lacks a `reason` of at least 20 characters with "
    "`acknowledge_not_better: true`. Nothing changes on a refusal. A candidate in shadow "
    "is stopped when it becomes the judge, else restarted against the new judge.",
)
def make_default_judge(request: HttpRequest, comparison_id: int, payload: DefaultIn) -> Any:
    user = request.auth  # type: ignore[attr-defined]
    require_operator(user)
    _comparison_or_404(comparison_id)
    change = judge_default_make(
        comparison_id=comparison_id,
        chosen_by=user,
        note=payload.reason.strip(),
        override=payload.acknowledge_not_better,
    )
    return _default_out(change)


def _shadow_state() -> dict[str, Any]:
    shadow = latest_shadow()
    figures = shadow_figures(shadow) if shadow is not None else None
    return {"shadow": shadow_judge_out(shadow), "figures": _plain(figures)}


def _plain(value: Any) -> Any:
    """The shadow figures as JSON: dataclasses as objects, tuples as lists."""
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


@router.get(
    "/judges/shadow",
    response={200: ShadowStateOut, **error_responses(403)},
    summary="The candidate in shadow (else the last one) with what it judged so far (operators)",
)
def get_shadow(request: HttpRequest) -> dict[str, Any]:
    require_operator(request.auth)  # type: ignore[attr-defined]
    return _shadow_state()


@router.post(
    "/judges/shadow",
    response={201: ShadowStateOut, **error_responses(403, 409)},
    summary="Start a candidate judging every new attempt in shadow; it moves no task (operators)",
    description="409 while another candidate is in shadow (stop it first); 422 for a "
    "template or model this deployment lacks. Nothing changes on a refusal.",
)
def start_shadow(request: HttpRequest, payload: ShadowIn) -> Status:
    user = request.auth  # type: ignore[attr-defined]
    require_operator(user)
    template, model = _candidate(payload.template, payload.model)
    shadow_start(template=template, model=model, started_by=user)
    return Status(201, _shadow_state())


@router.post(
    "/judges/shadow/stop",
    response={200: ShadowStateOut, **error_responses(403, 409)},
    summary="Stop the candidate in shadow; its figures stay (operators)",
    description="409 when no candidate is in shadow.",
)
def stop_shadow(request: HttpRequest) -> dict[str, Any]:
    user = request.auth  # type: ignore[attr-defined]
    require_operator(user)
    shadow_stop(stopped_by=user)
    return _shadow_state()


# --- Labelled cases out ------------------------------------------------------------------------

JSONL_DOC = {
    "responses": {
        200: {
            "description": "One labelled case per line (JSON Lines), judge_bench's case "
            "format: `manage.py judge_bench --cases-file` reads the file as it is",
            "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
        }
    }
}


@router.get(
    "/labelled-cases",
    response=error_responses(403),
    summary="The team's labelled cases as JSON Lines, streamed: blind audit judgements "
    "(and decisions) with their claim labels, the request, evidence and answer the judge "
    "saw (operators)",
    description="Filter by `queue`, the judge (`template_version`, `model`) and the period "
    "(`since`, `until`, whole days). Each line is one case of judge_bench's case format "
    '(docs/validator.md): `make judge-bench JUDGE_BENCH_ARGS="--cases-file <file>"` '
    "runs them. `until` before `since` answers 422.",
    openapi_extra=JSONL_DOC,
)
def get_labelled_cases(
    request: HttpRequest, query: Query[LabelledCasesQuery]
) -> StreamingHttpResponse:
    user = request.auth  # type: ignore[attr-defined]
    require_operator(user)
    lines = labelled_case_lines(
        CaseExport(
            queue=query.queue,
            template_version=query.template_version or None,
            model=query.model or None,
            since=query.since,
            until=query.until,
        ),
        user=user,
    )
    response = StreamingHttpResponse(lines, content_type="application/x-ndjson; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="labelled-cases-{query.queue}.jsonl"'
    return response
