"""Operator pages (SPEC U5, V5, V9, V10): validator templates, rendered inputs with a
diff between attempts, LLM request snapshots, replay side by side, agreement, charts.

The validator's modules are imported lazily: the pages say so plainly when a piece is
not installed, instead of failing.
"""

from __future__ import annotations

import difflib
from collections import Counter, defaultdict
from datetime import date, datetime, time, timedelta
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Count, Q
from django.db.models.functions import Length, TruncDate
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_POST

from evidence_app.models import SnapshotKind, ValidationSnapshot, ValidationStatus
from tasks_app.forms import BulkReplayForm, ReplayForm
from tasks_app.models import LLMRequestSnapshot, Task, TaskEvent
from tasks_app.states import TaskStatus
from tasks_app.views_common import operator_required, render_page

# Diffs are for reading: past this many output lines the page says so and points to the
# downloads, which are always complete.
DIFF_MAX_LINES = 5000
REPLAY_JOB = "evidence_app.replay_validation"


def _templates() -> list[Any]:
    try:
        from evidence_app.validator.templates import list_templates
    except ImportError:
        return []
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
    return render_page(
        request,
        "tasks_app/ops_index.html",
        {
            "by_kind": by_kind,
            "models": models,
            "recent": recent,
            "request_count": LLMRequestSnapshot.objects.count(),
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
        "tasks_app/ops_templates.html",
        {"templates": templates, "installed": bool(templates)},
    )


def diff_lines(a: str, b: str, *, label_a: str, label_b: str) -> tuple[list[tuple[str, str]], bool]:
    """Unified diff of two texts as (css class, line) pairs; escaped by the template."""
    out: list[tuple[str, str]] = []
    for line in difflib.unified_diff(
        a.splitlines(), b.splitlines(), fromfile=label_a, tofile=label_b, lineterm="", n=3
    ):
        if line.startswith(("+++", "---")):
            cls = "hunk"
        elif line.startswith("@@"):
            cls = "hunk"
        elif line.startswith("+"):
            cls = "add"
        elif line.startswith("-"):
            cls = "del"
        else:
            cls = "ctx"
        out.append((cls, line))
        if len(out) >= DIFF_MAX_LINES:
            return out, True
    return out, False


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
    requests_ = list(
        LLMRequestSnapshot.objects.filter(run__task=task)
        .defer("full_request")
        .select_related("run")
        .order_by("run__attempt_index", "run_id", "iteration")
    )
    return render_page(
        request,
        "tasks_app/ops_task_inputs.html",
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
            "llm_requests": requests_,
        },
    )


@operator_required
@require_GET
def ops_llm_requests(request: HttpRequest) -> HttpResponse:
    qs = (
        LLMRequestSnapshot.objects.defer("full_request")
        .select_related("run")
        .order_by("-created_at", "-id")
    )
    task_id = request.GET.get("task", "")
    if task_id.isdigit():
        qs = qs.filter(run__task_id=int(task_id))
    model = request.GET.get("model", "")
    if model:
        qs = qs.filter(model_name=model)
    page = Paginator(qs, 100).get_page(request.GET.get("page"))
    return render_page(
        request,
        "tasks_app/ops_llm_requests.html",
        {"page": page, "rows": page.object_list, "task_filter": task_id, "model_filter": model},
    )


def _snapshot_or_404(snapshot_id: int) -> ValidationSnapshot:
    return get_object_or_404(
        ValidationSnapshot.objects.without_bodies().select_related("task", "requested_by"),
        pk=snapshot_id,
    )


@operator_required
@require_GET
def ops_validation(request: HttpRequest, snapshot_id: int) -> HttpResponse:
    """An original verdict and its replays, side by side (V9)."""
    snap = _snapshot_or_404(snapshot_id)
    original = snap.replay_of if snap.kind == SnapshotKind.REPLAY and snap.replay_of_id else snap
    if original is not snap:
        original = _snapshot_or_404(original.pk)
    replays = list(
        original.replays.without_bodies()
        .select_related("requested_by")
        .order_by("-created_at", "-id")
    )
    chosen = replays[0] if replays else None
    wanted = request.GET.get("replay", "")
    if wanted.isdigit():
        chosen = next((r for r in replays if r.pk == int(wanted)), chosen)
    form = ReplayForm(template_names=[t.name for t in _templates()])
    return render_page(
        request,
        "tasks_app/ops_validation.html",
        {"original": original, "replays": replays, "chosen": chosen, "form": form},
    )


@operator_required
@require_POST
def ops_replay(request: HttpRequest, snapshot_id: int) -> HttpResponse:
    """Queue a replay of a stored validation with another template or model. The web
    request never waits on the validator: the job runs in a worker (X1, V9)."""
    snap = _snapshot_or_404(snapshot_id)
    form = ReplayForm(request.POST, template_names=[t.name for t in _templates()])
    if not form.is_valid():
        messages.error(
            request, "Replay not queued: " + "; ".join(" ".join(v) for v in form.errors.values())
        )
        return redirect("ops_validation", snapshot_id=snap.pk)
    template = form.cleaned_data["template"] or None
    model = form.cleaned_data["model"].strip() or None
    args = [snap.pk, template, model, request.user.pk]

    def send() -> None:
        from project.celery import app as celery_app

        celery_app.send_task(REPLAY_JOB, args=args)

    transaction.on_commit(send)
    messages.success(
        request,
        f"Replay of validation #{snap.pk} queued (template {template or 'as original'}, "
        f"model {model or 'as original'}). "
        "It appears here when the worker has run it.",
    )
    return redirect("ops_validation", snapshot_id=snap.pk)


@operator_required
@require_GET
def ops_agreement(request: HttpRequest) -> HttpResponse:
    try:
        from evidence_app.agreement import agreement_stats
    except ImportError:
        groups: list[Any] = []
        installed = False
    else:
        groups = agreement_stats()
        installed = True
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
        "tasks_app/ops_agreement.html",
        {"rows": rows, "decisions": decisions, "installed": installed},
    )


# --- Charts --------------------------------------------------------------------------------

STATUS_COLOURS = {
    TaskStatus.OPEN: "#9db4d6",
    TaskStatus.RUNNING: "#4a7fd0",
    TaskStatus.VALIDATING: "#7aa5e8",
    TaskStatus.AWAITING_FEEDBACK: "#48a868",
    TaskStatus.NEEDS_REVIEW: "#e0a800",
    TaskStatus.NEEDS_REVISION: "#c07ad8",
    TaskStatus.FAILED: "#d24b4b",
    TaskStatus.CLOSED: "#2e7d4f",
    TaskStatus.ABANDONED: "#9aa3ad",
    ValidationStatus.ACCEPTED: "#2e9d5b",
    ValidationStatus.REJECTED: "#d24b4b",
    ValidationStatus.INSUFFICIENT_EVIDENCE: "#e0a800",
    ValidationStatus.VALIDATOR_ERROR: "#8e3aa1",
}


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
    step = (width - left - 10) / max(len(days), 1)
    bar_w = max(step * 0.7, 2)
    bars = []
    for idx, (day, counts) in enumerate(zip(days, series, strict=True)):
        y = height - bottom
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
    ticks = []
    for frac in (0, 0.25, 0.5, 0.75, 1):
        value = top_value * frac
        ticks.append(
            {
                "y": round(height - bottom - plot_h * frac, 1),
                "label": f"{value:.0f}" if top_value >= 4 or frac in (0, 1) else "",
            }
        )
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
        "tasks_app/ops_charts.html",
        {"task_chart": task_chart, "validator_chart": validator_chart, "n_days": n_days},
    )


@operator_required
def ops_bulk_replay(request: HttpRequest) -> HttpResponse:
    """Replay the latest validation of many tasks (V9): the estimated input size is
    shown first, and more than ``REPLAY_BULK_MAX_TASKS`` tasks are refused."""
    from evidence_app.services import replay_candidates, replay_estimate

    cap = settings.REPLAY_BULK_MAX_TASKS
    data = request.POST if request.method == "POST" else request.GET
    form = BulkReplayForm(data or None, template_names=[t.name for t in _templates()])
    context: dict[str, Any] = {"form": form, "cap": cap, "previewed": False}
    if not form.is_bound or not form.is_valid():
        return render_page(request, "tasks_app/ops_bulk_replay.html", context)
    f = form.cleaned_data
    since = timezone.now() - timedelta(days=f["since_days"]) if f["since_days"] else None
    candidates = replay_candidates(
        task_ids=f["task_ids"] or None,
        task_statuses=f["task_statuses"] or None,
        validator_statuses=f["validator_statuses"] or None,
        since=since,
    )
    template = f["template"] or None
    estimate = replay_estimate(candidates[:cap], template=template) if candidates else None
    context.update(
        previewed=True,
        candidates=candidates[:100],
        total=len(candidates),
        estimate=estimate,
        over_cap=len(candidates) > cap,
        query=data.urlencode(),
    )
    if request.method == "POST":
        if not candidates:
            messages.error(request, "Nothing to replay: no validation matches these filters.")
        elif len(candidates) > cap:
            messages.error(
                request,
                f"{len(candidates)} tasks match, more than REPLAY_BULK_MAX_TASKS ({cap}). "
                "Narrow the filters.",
            )
        else:
            model = f["model"].strip() or None
            jobs = [[s.pk, template, model, request.user.pk] for s in candidates]

            def send() -> None:
                from project.celery import app as celery_app

                for args in jobs:
                    celery_app.send_task(REPLAY_JOB, args=args)

            transaction.on_commit(send)
            messages.success(
                request,
                f"Queued {len(jobs)} replays (~{estimate.input_tokens if estimate else 0:,} input "
                "tokens). Each shows beside its original when the worker has run it.",
            )
            return redirect(reverse("ops_bulk_replay") + "?" + data.urlencode())
        return render_page(request, "tasks_app/ops_bulk_replay.html", context, status=409)
    return render_page(request, "tasks_app/ops_bulk_replay.html", context)
