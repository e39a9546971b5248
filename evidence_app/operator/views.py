"""Operator pages (U5, V5, V9, V10): validator templates, rendered inputs with a
diff between attempts, LLM request snapshots, replay side by side, agreement, charts.

"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import date, datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.db.models import Count, Q
from django.db.models.functions import Length, TruncDate
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from evidence_app.models import ReplayState, SnapshotKind, ValidationSnapshot, ValidationStatus
from evidence_app.operator import llm_requests
from evidence_app.operator.forms import BulkReplayForm, ReplayForm
from evidence_app.trust.agreement import agreement_stats, judge_pair_stats
from evidence_app.trust.claim_agreement import STANCES, claim_agreement_stats
from evidence_app.trust.team import audit_queue, queue_age
from evidence_app.validation.replay import (
    ReplayEstimate,
    replay_candidates,
    replay_estimate,
    replay_request,
)
from evidence_app.validation.selectors import (
    cost_per_accepted_answer,
    daily_costs,
    latest_replay_request,
    recent_replay_requests,
)
from evidence_app.validator.templates import list_templates
from project.diffs import DIFF_MAX_LINES, diff_lines
from project.health import run_checks
from project.views import operator_required, render_fragment, render_page, wants_fragment
from tasks_app.models import LLMRequestSnapshot, Task, TaskEvent
from tasks_app.workflow.states import TaskStatus

LLM_REQUESTS_PER_PAGE = 25
# The operator overview's cost window (issue 18).
COST_DAYS = 14


def _templates() -> list[Any]:
    return list_templates()


@operator_required
@require_GET
def ops_index(request: HttpRequest) -> HttpResponse:
    by_kind = dict(
        ValidationSnapshot.objects.order_by()
        .values_list("kind")
        .annotate(n=Count("id"))
        .values_list("kind", "n")
    )
    models = list(
        ValidationSnapshot.objects.order_by()
        .values("model_name", "template_version")
        .annotate(
            n=Count("id"), errors=Count("id", filter=Q(status=ValidationStatus.VALIDATOR_ERROR))
        )
        .order_by("-n")[:20]
    )
    recent = list(
        ValidationSnapshot.objects.without_bodies()
        .select_related("task")
        .order_by("-created_at", "-id")[:25]
    )
    spent, accepted, per_accepted = cost_per_accepted_answer(days=COST_DAYS)
    return render_page(
        request,
        "evidence_app/ops_index.html",
        {
            "by_kind": by_kind,
            "models": models,
            "recent": recent,
            "request_count": LLMRequestSnapshot.objects.count(),
            # Issue 18: the same checks as /ready and manage.py check_health.
            "checks": run_checks(),
            "cost_days": COST_DAYS,
            "daily_costs": daily_costs(days=COST_DAYS),
            "spent": spent,
            "accepted": accepted,
            "per_accepted": per_accepted,
            # The review team's panel: the queue's age and the audits waiting.
            "team_queue": queue_age(),
            "team_audits": audit_queue(),
        },
    )


@operator_required
@require_GET
def ops_templates(request: HttpRequest) -> HttpResponse:
    usage = dict(
        ValidationSnapshot.objects.order_by()
        .values_list("template_version")
        .annotate(n=Count("id"))
        .values_list("template_version", "n")
    )
    templates = [{"t": t, "uses": usage.get(t.version, 0)} for t in _templates()]
    return render_page(
        request,
        "evidence_app/ops_templates.html",
        {"templates": templates},
    )


@operator_required
@require_GET
def ops_task_inputs(request: HttpRequest, task_id: int) -> HttpResponse:
    """Every rendered validator input of a task, and the diff between two of them."""
    task = get_object_or_404(Task.objects.for_list(), pk=task_id)
    snapshots = list(
        ValidationSnapshot.objects.filter(task=task)
        .without_bodies()
        .annotate(input_len=Length("rendered_input"))
        .order_by("created_at", "id")
    )
    by_id = {s.pk: s for s in snapshots}
    originals = [s for s in snapshots if s.kind == SnapshotKind.VALIDATION]

    def pick(param: str, default: ValidationSnapshot | None) -> ValidationSnapshot | None:
        raw = request.GET.get(param, "")
        return by_id.get(int(raw), default) if raw.isdigit() else default

    a = pick("a", originals[-2] if len(originals) >= 2 else None)
    b = pick("b", originals[-1] if originals else None)
    diff: list[tuple[str, str]] = []
    system_diff: list[tuple[str, str]] = []
    diff_capped = system_capped = False
    if a is not None and b is not None and a.pk != b.pk:
        rows = {
            pk: (text, system)
            for pk, text, system in ValidationSnapshot.objects.filter(
                pk__in=[a.pk, b.pk]
            ).values_list("pk", "rendered_input", "system_prompt")
        }
        label_a = f"attempt {a.attempt_index} {a.kind} #{a.pk}"
        label_b = f"attempt {b.attempt_index} {b.kind} #{b.pk}"
        diff, diff_capped = diff_lines(
            rows[a.pk][0], rows[b.pk][0], label_a=label_a, label_b=label_b
        )
        # A replay with another template differs in the instructions, not the material.
        system_diff, system_capped = diff_lines(
            rows[a.pk][1], rows[b.pk][1], label_a=label_a, label_b=label_b
        )
    # Paged: a long task's requests were a 6,000 px table (issue 13); the validator's
    # requests are listed with the agent's (issue 26).
    requests_page, request_rows = llm_requests.request_page(
        task_id=task.pk, number=request.GET.get("rpage"), per_page=LLM_REQUESTS_PER_PAGE
    )
    return render_page(
        request,
        "evidence_app/ops_task_inputs.html",
        {
            "task": task,
            "snapshots": snapshots,
            "a": a,
            "b": b,
            "diff": diff,
            "diff_capped": diff_capped,
            "system_diff": system_diff,
            "system_capped": system_capped,
            "diff_max": DIFF_MAX_LINES,
            "llm_requests": request_rows,
            "requests_page": requests_page,
        },
    )


@operator_required
@require_GET
def ops_llm_requests(request: HttpRequest) -> HttpResponse:
    """The agent's and the validator's model requests, newest first (issue 26: the
    validator's were missing), filterable by task and model; each row opens its details."""
    task_id = request.GET.get("task", "")
    model = request.GET.get("model", "").strip()
    page, rows = llm_requests.request_page(
        task_id=int(task_id) if task_id.isdigit() else None,
        model=model,
        number=request.GET.get("page"),
        per_page=LLM_REQUESTS_PER_PAGE,
    )
    return render_page(
        request,
        "evidence_app/ops_llm_requests.html",
        {"page": page, "rows": rows, "task_filter": task_id, "model_filter": model},
    )


@operator_required
@require_GET
def ops_llm_request(request: HttpRequest, request_id: int) -> HttpResponse:
    """One agent request: its run, sizes, settings, tokens, cost and, when full request
    snapshots are on, the request itself as indented JSON."""
    return render_page(
        request,
        "evidence_app/ops_llm_request.html",
        {"r": llm_requests.agent_request(request_id)},
    )


@operator_required
@require_GET
def ops_validator_requests(request: HttpRequest, snapshot_id: int) -> HttpResponse:
    """The requests of one validation: model, template, counts, tokens, cost, and every
    raw response, pretty-printed and foldable, with the schema-retry failures."""
    snapshot = llm_requests.validator_requests(snapshot_id)
    return render_page(
        request,
        "evidence_app/ops_validator_requests.html",
        {"s": snapshot, "raw": snapshot.raw_responses},
    )


def _snapshot_or_404(snapshot_id: int) -> ValidationSnapshot:
    return get_object_or_404(
        ValidationSnapshot.objects.without_bodies().select_related("task", "requested_by"),
        pk=snapshot_id,
    )


def validation_context(
    request: HttpRequest, snapshot_id: int, *, form: ReplayForm | None = None
) -> dict[str, Any]:
    snap = _snapshot_or_404(snapshot_id)
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
        "form": form or ReplayForm(template_names=[t.name for t in _templates()]),
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
    category, score, each claim's verdict and the reasons given (issue 13, V9)."""
    ra, rb = a.result or {}, b.result or {}
    return _summary_changes(a, b) + _claim_changes(ra, rb) + _reason_changes(ra, rb)


@operator_required
@require_GET
def ops_validation(request: HttpRequest, snapshot_id: int) -> HttpResponse:
    """An original verdict and its replays, side by side, differences listed (V9)."""
    context = validation_context(request, snapshot_id)
    if wants_fragment(request, "side-by-side"):
        return render_fragment(request, "evidence_app/ops_validation.html#side_by_side", context)
    return render_page(request, "evidence_app/ops_validation.html", context)


@operator_required
@require_POST
def ops_replay(request: HttpRequest, snapshot_id: int) -> HttpResponse:
    """Queue a replay of a stored validation with another template or model. The web
    request never waits on the validator: the job runs in a worker and the page shows
    the result when it is stored, without a reload (X1, V9, issue 13)."""
    snap = _snapshot_or_404(snapshot_id)
    form = ReplayForm(request.POST, template_names=[t.name for t in _templates()])
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


@operator_required
@require_GET
def ops_agreement(request: HttpRequest) -> HttpResponse:
    groups = agreement_stats()
    decisions = ["satisfied", "revise", "abandon"]
    rows = []
    for g in groups:
        confusion = getattr(g, "confusion", {}) or {}
        # Every verdict row, even an empty one, so tables compare at a glance.
        statuses = list(ValidationStatus.values) + [
            s for s in confusion if s not in ValidationStatus.values
        ]
        rows.append(
            {
                "g": g,
                "matrix": [
                    (s, [confusion.get(s, {}).get(d, 0) for d in decisions]) for s in statuses
                ],
            }
        )
    return render_page(
        request,
        "evidence_app/ops_agreement.html",
        {
            "rows": rows,
            "decisions": decisions,
            "judge_pairs": judge_pair_stats(),
            **_claim_agreement_context(),
        },
    )


def _claim_agreement_context() -> dict[str, Any]:
    """The per-claim table: validator's claim verdict (rows) against the person's label."""
    stances = list(STANCES)
    return {
        "stances": stances,
        "claim_rows": [
            {"g": g, "matrix": [(s, [g.confusion[s][t] for t in stances]) for s in stances]}
            for g in claim_agreement_stats()
        ],
    }


# --- Charts --------------------------------------------------------------------------------

# Colours told apart by hue and lightness (Okabe-Ito based, safe for the common colour
# vision deficiencies); no two statuses share a near-identical green (issue 13).
STATUS_COLOURS: dict[str, str] = {
    TaskStatus.OPEN: "#56b4e9",
    TaskStatus.RUNNING: "#0072b2",
    TaskStatus.VALIDATING: "#a6cee3",
    TaskStatus.AWAITING_FEEDBACK: "#009e73",
    TaskStatus.NEEDS_REVIEW: "#e69f00",
    TaskStatus.NEEDS_REVISION: "#cc79a7",
    TaskStatus.FAILED: "#d55e00",
    TaskStatus.CLOSED: "#1b4d3e",
    TaskStatus.ABANDONED: "#999999",
    ValidationStatus.ACCEPTED: "#009e73",
    ValidationStatus.REJECTED: "#d55e00",
    ValidationStatus.INSUFFICIENT_EVIDENCE: "#e69f00",
    ValidationStatus.VALIDATOR_ERROR: "#6a3d9a",
}


def nice_step(top: int, *, max_ticks: int = 5) -> int:
    """A tick step of 1, 2 or 5 times a power of ten, so the axis reads 0/5/10/15/20
    rather than 0/4/9/14/18 (issue 13)."""
    raw = max(top, 1) / max_ticks
    power = 1
    while power * 10 <= raw:
        power *= 10
    for factor in (1, 2, 5):
        if factor * power >= raw:
            return factor * power
    return 10 * power


def task_status_by_day(days: list[date]) -> list[dict[str, int]]:
    """How many tasks were in each status at the end of each day, replayed from the
    append-only event log (S3) and the creation times."""
    tz = timezone.get_current_timezone()
    end = datetime.combine(days[-1] + timedelta(days=1), time.min, tzinfo=tz)
    current: dict[int, str] = {}
    changes: list[tuple[Any, int, str]] = [
        (created, pk, TaskStatus.OPEN)
        for pk, created in Task.objects.filter(created_at__lt=end)
        .values_list("pk", "created_at")
        .iterator()
    ]
    changes += [
        (at, task_id, to)
        for task_id, at, to in TaskEvent.objects.filter(at__lt=end)
        .order_by()
        .values_list("task_id", "at", "to_status")
        .iterator()
    ]
    changes.sort(key=lambda c: c[0])
    result: list[dict[str, int]] = []
    i = 0
    for day in days:
        while i < len(changes) and changes[i][0].astimezone(tz).date() <= day:
            _, pk, status = changes[i]
            current[pk] = status
            i += 1
        result.append(dict(Counter(current.values())))
    return result


def validator_status_by_day(days: list[date]) -> list[dict[str, int]]:
    rows = (
        ValidationSnapshot.objects.originals()
        .filter(created_at__date__gte=days[0], created_at__date__lte=days[-1])
        .annotate(day=TruncDate("created_at"))
        .order_by()
        .values_list("day", "status")
        .annotate(n=Count("id"))
    )
    per_day: dict[date, dict[str, int]] = defaultdict(dict)
    for day, status, n in rows:
        per_day[day][status] = n
    return [per_day.get(d, {}) for d in days]


def stacked_bars(
    days: list[date], series: list[dict[str, int]], keys: list[str], labels: dict[str, str]
) -> dict[str, Any]:
    """Geometry of a stacked bar chart, drawn as SVG by the template (no JS library)."""
    width, height, left, bottom, top = 960, 240, 44, 26, 10
    plot_h = height - bottom - top
    top_value = max([sum(s.values()) for s in series] + [1])
    step_value = nice_step(top_value)
    top_value = -(-top_value // step_value) * step_value  # up to a whole tick
    step = (width - left - 10) / max(len(days), 1)
    bar_w = max(step * 0.7, 2)
    bars = []
    for idx, (day, counts) in enumerate(zip(days, series, strict=True)):
        y: float = height - bottom
        x = left + idx * step + (step - bar_w) / 2
        for key in keys:
            n = counts.get(key, 0)
            if not n:
                continue
            h = plot_h * n / top_value
            y -= h
            bars.append(
                {
                    "x": round(x, 1),
                    "y": round(y, 1),
                    "w": round(bar_w, 1),
                    "h": round(h, 1),
                    "colour": STATUS_COLOURS.get(key, "#888"),
                    "title": f"{day:%Y-%m-%d} {labels.get(key, key)}: {n}",
                }
            )
    ticks = [
        {"y": round(height - bottom - plot_h * v / top_value, 1), "label": str(v)}
        for v in range(0, top_value + 1, step_value)
    ]
    every = max(1, len(days) // 10)
    xlabels = [
        {"x": round(left + i * step + step / 2, 1), "label": f"{d:%m-%d}"}
        for i, d in enumerate(days)
        if i % every == 0
    ]
    legend = [
        {"key": k, "label": labels.get(k, k), "colour": STATUS_COLOURS.get(k, "#888")} for k in keys
    ]
    return {
        "width": width,
        "height": height,
        "left": left,
        "bottom": height - bottom,
        "bars": bars,
        "ticks": ticks,
        "xlabels": xlabels,
        "legend": legend,
        # The same figures as a table beside the chart (issue 13): one row per day.
        "table_keys": [(k, labels.get(k, k)) for k in keys],
        "table_rows": [
            (f"{d:%Y-%m-%d}", [counts.get(k, 0) for k in keys], sum(counts.values()))
            for d, counts in zip(days, series, strict=True)
        ],
    }


@operator_required
@require_GET
def ops_charts(request: HttpRequest) -> HttpResponse:
    raw_days = request.GET.get("days", "30")
    n_days = min(max(int(raw_days), 2), 180) if raw_days.isdigit() else 30
    today = timezone.localdate()
    days = [today - timedelta(days=n_days - 1 - i) for i in range(n_days)]
    task_chart = stacked_bars(
        days, task_status_by_day(days), list(TaskStatus.values), dict(TaskStatus.choices)
    )
    validator_chart = stacked_bars(
        days,
        validator_status_by_day(days),
        list(ValidationStatus.values),
        dict(ValidationStatus.choices),
    )
    return render_page(
        request,
        "evidence_app/ops_charts.html",
        {"task_chart": task_chart, "validator_chart": validator_chart, "n_days": n_days},
    )


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
    """Replay the latest validation of many tasks (V9): the estimated input size is
    shown first, and more than ``REPLAY_BULK_MAX_TASKS`` tasks are refused."""
    cap = settings.REPLAY_BULK_MAX_TASKS
    data = request.POST if request.method == "POST" else request.GET
    form = BulkReplayForm(data or None, template_names=[t.name for t in _templates()])
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
