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

from evidence_app.autoaccept.selectors import (
    JudgeKey,
    SeenVerdictLabels,
    ShadowReport,
    judge_verdicts,
    seen_verdict_labels,
    shadow_report,
)
from evidence_app.models import AutoAcceptThreshold, ThresholdState, VerdictRoute
from evidence_app.trust.team import team_figures

__all__ = ["Chart", "ChartPoint", "JudgeAutoAccept", "autoaccept_overview", "curve_chart"]

WINDOW_DAYS = 30
# The curve's drawing box: narrow enough that its 12-unit text stays legible when a
# phone shrinks it to the screen, wide enough for a laptop (the stylesheet caps it).
CHART_WIDTH, CHART_HEIGHT = 360, 240
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 44, 16, 14, 26


def _percent(share: float) -> str:
    return f"{100 * share:.2f}".rstrip("0").rstrip(".") + " %"


@dataclass(frozen=True)
class ChartPoint:
    """One score level of the curve: where it is drawn and what it says in words (its
    ``<title>`` and label, read on hover, keyboard focus and touch)."""

    x: float
    y: float
    threshold: float
    text: str
    short: str
    # The point's label is drawn left of the point when it would run off the right edge.
    anchor: str
    selected: bool


@dataclass(frozen=True)
class Chart:
    """The coverage–risk curve in SVG coordinates: x the share of labelled answers
    automated, y the false-accept rate among them (0 at the bottom, ``y_max`` at the
    top)."""

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
    points: list[ChartPoint]
    target_y: float
    target_label: str
    tau_x: float | None
    tau_label: str
    x_ticks: list[tuple[float, str]]
    y_ticks: list[tuple[float, str]]


def _scale(value: float, top: float, length: int) -> float:
    return round(value / top * length, 1) if top else 0.0


def _y_step(top: float) -> float:
    """A tick step of 1, 2 or 5 times a power of ten (in shares), about four ticks."""
    raw, power = top / 4, 1e-4
    while power * 10 <= raw:
        power *= 10
    return next((f * power for f in (1, 2, 5) if f * power >= raw), 10 * power)


def _point_text(p: dict[str, Any]) -> str:
    return (
        f"Score {p['threshold']:.3f} or more: {_percent(p['coverage'])} automated "
        f"({p['accepted']} labelled answers), {_percent(p['risk'])} false accepts among "
        f"them, 95 % upper bound {_percent(p['upper'])}"
    )


def curve_chart(
    curve: list[dict[str, Any]], *, target: float, tau: float | None, tau_label: str = ""
) -> Chart | None:
    """The chart of a stored (downsampled) curve; None without points. ``tau`` is the
    threshold marked on it, named ``tau_label`` ("approved threshold 0.950")."""
    if not curve:
        return None
    inner_w = CHART_WIDTH - PAD_LEFT - PAD_RIGHT
    inner_h = CHART_HEIGHT - PAD_TOP - PAD_BOTTOM
    top = min(1.0, max(1.5 * target, max(p["upper"] for p in curve)))
    step = _y_step(top)
    y_max = min(1.0, step * -(-round(top / step, 6) // 1))
    bottom = CHART_HEIGHT - PAD_BOTTOM

    def xy(coverage: float, rate: float) -> tuple[float, float]:
        return PAD_LEFT + _scale(coverage, 1.0, inner_w), bottom - _scale(
            min(rate, y_max), y_max, inner_h
        )

    def line(key: str) -> str:
        return " ".join("{},{}".format(*xy(p["coverage"], p[key])) for p in curve)

    at_tau = [p for p in curve if tau is not None and p["threshold"] == tau]
    ticks, value = [], 0.0
    while value <= y_max + 1e-9:
        ticks.append((bottom - _scale(value, y_max, inner_h), _percent(round(value, 6))))
        value += step
    return Chart(
        width=CHART_WIDTH,
        height=CHART_HEIGHT,
        left=PAD_LEFT,
        right=CHART_WIDTH - PAD_RIGHT,
        bottom=bottom,
        top=PAD_TOP,
        y_max=y_max,
        risk=line("risk"),
        upper=line("upper"),
        points=[
            ChartPoint(
                *xy(p["coverage"], p["risk"]),
                threshold=p["threshold"],
                text=_point_text(p),
                short=(
                    f"≥ {p['threshold']:.3f}: {_percent(p['coverage'])} automated, "
                    f"{_percent(p['risk'])} wrong"
                ),
                anchor="end" if p["coverage"] > 0.5 else "start",
                selected=p["threshold"] == tau,
            )
            for p in curve
        ],
        target_y=bottom - _scale(target, y_max, inner_h),
        target_label=f"target {_percent(target)}",
        tau_x=PAD_LEFT + _scale(at_tau[0]["coverage"], 1.0, inner_w) if at_tau else None,
        tau_label=tau_label,
        x_ticks=[
            (PAD_LEFT + _scale(s, 1.0, inner_w), _percent(s)) for s in (0, 0.25, 0.5, 0.75, 1)
        ],
        y_ticks=ticks,
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


def _chart(shown: AutoAcceptThreshold | None) -> Chart | None:
    if shown is None:
        return None
    kind = "approved" if shown.state == ThresholdState.APPROVED else "proposed"
    label = f"{kind} threshold {shown.threshold:.3f}" if shown.threshold is not None else ""
    return curve_chart(shown.curve, target=shown.target, tau=shown.threshold, tau_label=label)


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
                chart=_chart(shown),
                seen=seen.get(key, SeenVerdictLabels()),
            )
        )
    return judges
