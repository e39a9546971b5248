"""The operator's charts: tasks by status and verdicts by status per day, drawn as
stacked bars in SVG on the server."""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Count
from django.db.models.functions import TruncDate
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET

from evidence_app.models import ValidationSnapshot, ValidationStatus
from project.views import operator_required, render_page
from tasks_app.records import Task, TaskEvent, TaskStatus

# Colours told apart by hue and lightness (Okabe-Ito based, safe for the common colour
# vision deficiencies); no two statuses share a near-identical green.
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
    rather than 0/4/9/14/18."""
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
    append-only event log and the creation times."""
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


def _bar(x: float, y: float, w: float, h: float, *, colour: str, title: str) -> dict[str, Any]:
    return {
        "x": round(x, 1),
        "y": round(y, 1),
        "w": round(w, 1),
        "h": round(h, 1),
        "colour": colour,
        "title": title,
    }


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
            title = f"{day:%Y-%m-%d} {labels.get(key, key)}: {n}"
            bars.append(_bar(x, y, bar_w, h, colour=STATUS_COLOURS.get(key, "#888"), title=title))
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
        # The same figures as a table beside the chart: one row per day.
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
