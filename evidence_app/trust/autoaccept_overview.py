"""What the Trust page shows of auto-accept at a certified risk, per judge: its
approved threshold and guarantee (or that its accepts are not certified), the latest
proposal and its shadow, the coverage–risk curve as a small chart, the share of its
accepted verdicts automated and the reviewer time that saved. Stored figures only (the
background job computes them): no statistics library is loaded here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone

from evidence_app.models import AutoAcceptThreshold, ThresholdState, VerdictRoute
from evidence_app.trust.team import team_figures
from evidence_app.trust.thresholds import (
    JudgeKey,
    SeenVerdictLabels,
    ShadowReport,
    judge_verdicts,
    seen_verdict_labels,
    shadow_report,
)

__all__ = ["Chart", "JudgeAutoAccept", "autoaccept_overview", "curve_chart"]

WINDOW_DAYS = 30
CHART_WIDTH, CHART_HEIGHT, CHART_PAD = 380, 180, 44


@dataclass(frozen=True)
class Chart:
    """The coverage–risk curve in SVG coordinates: x the share automated, y the
    false-accept rate (0 at the bottom, ``y_max`` at the top)."""

    width: int
    height: int
    # The plot area: x from ``left`` to ``right``, y from ``bottom`` up to ``top``.
    left: int
    right: int
    bottom: int
    top: int
    y_max: float
    risk: str  # polyline points "x,y x,y ..."
    upper: str
    # Each point of the rate, as (x, y): one label level draws a dot, not a line.
    risk_points: list[tuple[float, float]]
    target_y: float
    tau_x: float | None
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]


def _scale(value: float, top: float, length: int) -> float:
    return round(value / top * length, 1) if top else 0.0


def curve_chart(curve: list[dict[str, Any]], *, target: float, tau: float | None) -> Chart | None:
    """The chart of a stored (downsampled) curve; None without points."""
    if not curve:
        return None
    inner_w, inner_h = CHART_WIDTH - 2 * CHART_PAD, CHART_HEIGHT - 2 * CHART_PAD
    y_max = min(1.0, max(2 * target, max(p["upper"] for p in curve)))

    def xy(coverage: float, rate: float) -> tuple[float, float]:
        x = CHART_PAD + _scale(coverage, 1.0, inner_w)
        return x, CHART_HEIGHT - CHART_PAD - _scale(min(rate, y_max), y_max, inner_h)

    def point(coverage: float, rate: float) -> str:
        x, y = xy(coverage, rate)
        return f"{x},{y}"

    at_tau = [p for p in curve if tau is not None and p["threshold"] == tau]
    return Chart(
        width=CHART_WIDTH,
        height=CHART_HEIGHT,
        left=CHART_PAD,
        right=CHART_WIDTH - CHART_PAD,
        bottom=CHART_HEIGHT - CHART_PAD,
        top=CHART_PAD,
        y_max=y_max,
        risk=" ".join(point(p["coverage"], p["risk"]) for p in curve),
        upper=" ".join(point(p["coverage"], p["upper"]) for p in curve),
        risk_points=[xy(p["coverage"], p["risk"]) for p in curve],
        target_y=CHART_HEIGHT - CHART_PAD - _scale(target, y_max, inner_h),
        tau_x=CHART_PAD + _scale(at_tau[0]["coverage"], 1.0, inner_w) if at_tau else None,
        x_ticks=[(CHART_PAD + _scale(s, 1.0, inner_w), f"{s:.0%}") for s in (0, 0.5, 1)],
        y_ticks=[
            (CHART_HEIGHT - CHART_PAD - _scale(s * y_max, y_max, inner_h), f"{s * y_max:.1%}")
            for s in (0, 0.5, 1)
        ],
    )


@dataclass(frozen=True)
class JudgeAutoAccept:
    key: JudgeKey
    approved: AutoAcceptThreshold | None
    pending: AutoAcceptThreshold | None
    shadow: ShadowReport | None
    shadow_ready_at: datetime | None
    # Accepted verdicts of the last WINDOW_DAYS, and of them those sent to the requester
    # without a person.
    accepted: int
    auto_accepted: int
    # Reviewer time the auto-accepts under the approved threshold saved in the window, at
    # the team's median time per item (None: no threshold, or no time measured).
    seconds_saved: float | None
    chart: Chart | None
    # People's calls on its accepts after seeing the verdict: shown, never certifying.
    seen: SeenVerdictLabels = SeenVerdictLabels()

    @property
    def shown(self) -> AutoAcceptThreshold | None:
        """The certification the chart and curve table show: the pending one, else the
        approved one."""
        return self.pending or self.approved

    @property
    def automated_share(self) -> float | None:
        return self.auto_accepted / self.accepted if self.accepted else None


def _judge_rows() -> dict[JudgeKey, dict[str, AutoAcceptThreshold]]:
    rows: dict[JudgeKey, dict[str, AutoAcceptThreshold]] = {}
    for row in AutoAcceptThreshold.objects.exclude(state=ThresholdState.RETIRED).order_by(
        "computed_at", "id"
    ):
        slot = "approved" if row.state == ThresholdState.APPROVED else "pending"
        rows.setdefault(JudgeKey.of(row), {})[slot] = row
    return rows


def _window_counts(since: datetime) -> dict[JudgeKey, tuple[int, int, int]]:
    """judge -> (accepted, auto-accepted, auto-accepted after its approval) in the window."""
    counts: dict[JudgeKey, tuple[int, int, int]] = {}
    approvals = {
        JudgeKey.of(row): row.approved_at
        for row in AutoAcceptThreshold.objects.approved().filter(approved_at__isnull=False)
    }
    grouped = (
        judge_verdicts()
        .filter(created_at__gte=since)
        .values("template_version", "model_name")
        .annotate(
            n=Count("pk"),
            auto=Count("pk", filter=Q(route=VerdictRoute.AUTO_ACCEPTED)),
        )
        .order_by()
    )
    for g in grouped:
        key = JudgeKey(g["template_version"], g["model_name"])
        counts[key] = (g["n"], g["auto"], 0)
    for key, approved_at in approvals.items():
        if key in counts and approved_at is not None:
            under = (
                judge_verdicts(key)
                .filter(created_at__gte=max(since, approved_at), route=VerdictRoute.AUTO_ACCEPTED)
                .count()
            )
            counts[key] = (*counts[key][:2], under)
    return counts


def autoaccept_overview(now: datetime | None = None) -> list[JudgeAutoAccept]:
    """One entry per judge with a threshold row or an accepted verdict in the window."""
    now = now or timezone.now()
    since = now - timedelta(days=WINDOW_DAYS)
    rows = _judge_rows()
    counts = _window_counts(since)
    seen = seen_verdict_labels()
    per_item = team_figures("month", now).item_time.p50 if rows else None
    judges = []
    for key in sorted(set(rows) | set(counts) | set(seen)):
        slots = rows.get(key, {})
        approved, pending = slots.get("approved"), slots.get("pending")
        accepted, auto, under = counts.get(key, (0, 0, 0))
        shown = pending or approved
        judges.append(
            JudgeAutoAccept(
                key=key,
                approved=approved,
                pending=pending,
                shadow=shadow_report(pending) if pending else None,
                shadow_ready_at=(
                    pending.shadow_started_at + timedelta(hours=settings.AUTOACCEPT_SHADOW_HOURS)
                    if pending and pending.shadow_started_at
                    else None
                ),
                accepted=accepted,
                auto_accepted=auto,
                seconds_saved=under * per_item if approved and per_item is not None else None,
                chart=(
                    curve_chart(shown.curve, target=shown.target, tau=shown.threshold)
                    if shown
                    else None
                ),
                seen=seen.get(key, SeenVerdictLabels()),
            )
        )
    return judges
