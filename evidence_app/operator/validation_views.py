"""The operator's pages of one validation and of replay: a verdict with its
prompt and the changes from the verdict it replays, a replay of one validation, and a
bulk replay with its estimate before anything runs."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from evidence_app.models import ReplayState, SnapshotKind, ValidationSnapshot
from evidence_app.operator.forms import BulkReplayForm, ReplayForm
from evidence_app.trust.blinding import audit_exposures_record
from evidence_app.validation.replay import (
    ReplayEstimate,
    replay_candidates,
    replay_estimate,
    replay_request,
)
from evidence_app.validation.selectors import latest_replay_request, recent_replay_requests
from evidence_app.validator.templates import list_templates
from project.views import operator_required, render_fragment, render_page, wants_fragment


def _snapshot_or_404(snapshot_id: int) -> ValidationSnapshot:
    return get_object_or_404(
        ValidationSnapshot.objects.without_bodies().select_related("task", "requested_by"),
        pk=snapshot_id,
    )


def validation_context(
    request: HttpRequest, snapshot_id: int, *, form: ReplayForm | None = None
) -> dict[str, Any]:
    snap = _snapshot_or_404(snapshot_id)
    # An operator who also reviews has now seen this task's verdict.
    audit_exposures_record(
        user=request.user, task_ids=[snap.task_id], channel=f"GET {request.path}"
    )
    original = snap
    if snap.kind == SnapshotKind.REPLAY and snap.replay_of_id:
        original = _snapshot_or_404(snap.replay_of_id)
    elif snap.kind == SnapshotKind.SECOND and snap.companion_of_id:
        # A second judge's verdict is shown on the task page beside the original; here the
        # original and its replays.
        original = _snapshot_or_404(snap.companion_of_id)
    replays = list(
        original.replays.without_bodies()
        .select_related("requested_by")
        .order_by("-created_at", "-id")
    )
    # The newest request says what the operator is waiting for: queued or running (the
    # page polls until it ends), failed (with the reason), or done (its replay shown).
    latest = latest_replay_request(original)
    pending = latest is not None and latest.pending
    failed = latest if latest is not None and latest.state == ReplayState.FAILED else None
    chosen = replays[0] if replays else None
    wanted = request.GET.get("replay", "")
    if wanted.isdigit():
        chosen = next((r for r in replays if r.pk == int(wanted)), chosen)
    elif pending or failed:
        chosen = None
    return {
        "original": original,
        "replays": replays,
        "chosen": chosen,
        "pending": latest if pending else None,
        "failed": failed,
        "changes": verdict_changes(original, chosen) if chosen else [],
        "form": form or ReplayForm(template_names=[t.name for t in list_templates()]),
    }


def _summary_changes(a: ValidationSnapshot, b: ValidationSnapshot) -> list[str]:
    """The changes of status, failure category and score between two verdicts."""
    out: list[str] = []
    if a.status != b.status:
        out.append(f"Status: {a.get_status_display()} → {b.get_status_display()}")
    if (a.failure_category or "") != (b.failure_category or ""):
        out.append(
            f"Category: {a.get_failure_category_display() or 'none'} → "
            f"{b.get_failure_category_display() or 'none'}"
        )
    if a.score != b.score:
        before, after = ("–" if v is None else f"{v:.2f}" for v in (a.score, b.score))
        out.append(f"Score: {before} → {after}")
    return out


def _claim_changes(ra: dict[str, Any], rb: dict[str, Any]) -> list[str]:
    """The claims of both results whose verdict changed, in the second result's order."""
    claims_a = {
        str(c.get("text", "")): c.get("verdict")
        for c in ra.get("claims") or []
        if isinstance(c, dict)
    }
    out: list[str] = []
    for claim in rb.get("claims") or []:
        if not isinstance(claim, dict):
            continue
        text, verdict = str(claim.get("text", "")), claim.get("verdict")
        earlier = claims_a.get(text)
        if earlier is not None and earlier != verdict:
            out.append(f"Claim “{text[:120]}”: {earlier} → {verdict}")
    return out


def _reason_changes(ra: dict[str, Any], rb: dict[str, Any]) -> list[str]:
    """The reasons (issues and reconciliation notes) given only by the second result,
    then those given only by the first."""
    reasons_a = {str(x) for k in ("issues", "reconciliation") for x in ra.get(k) or []}
    reasons_b = {str(x) for k in ("issues", "reconciliation") for x in rb.get(k) or []}
    return [f"New reason: {r}" for r in sorted(reasons_b - reasons_a)] + [
        f"Reason no longer given: {r}" for r in sorted(reasons_a - reasons_b)
    ]


def verdict_changes(a: ValidationSnapshot, b: ValidationSnapshot) -> list[str]:
    """What differs between an original verdict and its replay, in sentences: status,
    category, score, each claim's verdict and the reasons given."""
    ra, rb = a.result or {}, b.result or {}
    return _summary_changes(a, b) + _claim_changes(ra, rb) + _reason_changes(ra, rb)


@operator_required
@require_GET
def ops_validation(request: HttpRequest, snapshot_id: int) -> HttpResponse:
    """An original verdict and its replays, side by side, differences listed."""
    context = validation_context(request, snapshot_id)
    if wants_fragment(request, "side-by-side"):
        return render_fragment(request, "evidence_app/ops_validation.html#side_by_side", context)
    return render_page(request, "evidence_app/ops_validation.html", context)


@operator_required
@require_POST
def ops_replay(request: HttpRequest, snapshot_id: int) -> HttpResponse:
    """Queue a replay of a stored validation with another template or model. The web
    request never waits on the validator: the job runs in a worker and the page shows
    the result when it is stored, without a reload."""
    snap = _snapshot_or_404(snapshot_id)
    form = ReplayForm(request.POST, template_names=[t.name for t in list_templates()])
    if not form.is_valid():
        if getattr(request, "htmx", False):
            context = validation_context(request, snap.pk, form=form)
            return render_page(request, "evidence_app/ops_validation.html", context, status=422)
        messages.error(
            request,
            "Replay not queued: " + "; ".join(" ".join(map(str, v)) for v in form.errors.values()),
        )
        return redirect("ops_validation", snapshot_id=snap.pk)
    template = form.cleaned_data["template"] or None
    model = form.cleaned_data["model"] or None
    with transaction.atomic():
        replay_request(snapshot=snap, template=template, model=model, requested_by=request.user)
    messages.success(
        request,
        f"Replay of validation #{snap.pk} queued (template {template or 'as original'}, "
        f"model {model or 'as original'}). The result appears here when the worker has run it.",
    )
    return redirect("ops_validation", snapshot_id=snap.replay_of_id or snap.pk)


def _filter_query(data: QueryDict, form: BulkReplayForm) -> str:
    """The filter fields of ``data`` as a query string, and nothing else: never the
    CSRF token a POST carries (it would reach the access log, history and the next
    form's action)."""
    query = QueryDict(mutable=True)
    for name in form.fields:
        values = [v for v in data.getlist(name) if v]
        if values:
            query.setlist(name, values)
    return query.urlencode()


def _bulk_candidates(filters: dict[str, Any]) -> list[ValidationSnapshot]:
    """The validations the bulk replay form's filters select, newest first."""
    days = filters["since_days"]
    since = timezone.now() - timedelta(days=days) if days else None
    return replay_candidates(
        task_ids=filters["task_ids"] or None,
        task_statuses=filters["task_statuses"] or None,
        validator_statuses=filters["validator_statuses"] or None,
        since=since,
    )


def _queue_bulk_replay(
    request: HttpRequest,
    candidates: list[ValidationSnapshot],
    *,
    template: str | None,
    model: str | None,
    estimate: ReplayEstimate | None,
    cap: int,
) -> bool:
    """Queue a replay of every candidate, all or none, and say so in a message; False,
    with the reason as an error message, when there are none or more than ``cap``."""
    if not candidates:
        messages.error(request, "Nothing to replay: no validation matches these filters.")
        return False
    if len(candidates) > cap:
        messages.error(
            request,
            f"{len(candidates)} tasks match, more than REPLAY_BULK_MAX_TASKS ({cap}). "
            "Narrow the filters.",
        )
        return False
    with transaction.atomic():  # all queued or none; published after the commit
        for candidate in candidates:
            replay_request(
                snapshot=candidate,
                template=template,
                model=model,
                requested_by=request.user,
            )
    messages.success(
        request,
        f"Queued {len(candidates)} replays (~{estimate.input_tokens if estimate else 0:,} "
        f"input tokens, estimated input cost {estimate.cost if estimate else 'unknown'}). "
        "Each shows beside its original when the worker has run it; 'Your replays' "
        "below says where each stands.",
    )
    return True


@operator_required
def ops_bulk_replay(request: HttpRequest) -> HttpResponse:
    """Replay the latest validation of many tasks: the estimated input size is
    shown first, and more than ``REPLAY_BULK_MAX_TASKS`` tasks are refused."""
    cap = settings.REPLAY_BULK_MAX_TASKS
    data = request.POST if request.method == "POST" else request.GET
    form = BulkReplayForm(data or None, template_names=[t.name for t in list_templates()])
    requests = recent_replay_requests(user=request.user)
    context: dict[str, Any] = {
        "form": form,
        "cap": cap,
        "previewed": False,
        "requests": requests,
        "requests_pending": any(r.pending for r in requests),
    }
    if wants_fragment(request, "replay-requests"):
        return render_fragment(request, "evidence_app/ops_bulk_replay.html#requests", context)
    if not form.is_bound or not form.is_valid():
        return render_page(request, "evidence_app/ops_bulk_replay.html", context)
    f = form.cleaned_data
    candidates = _bulk_candidates(f)
    # A status filter tells, of every task in the other filters' scope, whether its task
    # or its latest verdict has that status (listed or left out); the list itself shows
    # both. Each of those reads is recorded for the open audits of the tasks concerned.
    scope = (
        _bulk_candidates({**f, "task_statuses": [], "validator_statuses": []})
        if f["task_statuses"] or f["validator_statuses"]
        else candidates
    )
    audit_exposures_record(
        user=request.user,
        task_ids=[c.task_id for c in scope],
        channel=f"{request.method} {request.path} (filtered)",
    )
    template = f["template"] or None
    model_choice = f["model"].strip() or None
    estimate = (
        replay_estimate(candidates[:cap], template=template, model=model_choice)
        if candidates
        else None
    )
    context.update(
        previewed=True,
        candidates=candidates[:100],
        total=len(candidates),
        estimate=estimate,
        over_cap=len(candidates) > cap,
        query=_filter_query(data, form),
    )
    if request.method == "POST":
        queued = _queue_bulk_replay(
            request,
            candidates,
            template=template,
            model=model_choice,
            estimate=estimate,
            cap=cap,
        )
        if queued:
            return redirect(reverse("ops_bulk_replay") + "?" + _filter_query(data, form))
        return render_page(request, "evidence_app/ops_bulk_replay.html", context, status=409)
    return render_page(request, "evidence_app/ops_bulk_replay.html", context)
