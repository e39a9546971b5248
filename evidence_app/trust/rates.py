"""The certified false-accept and false-reject rates: how often a verdict that moved a
task without a person was wrong, measured on the blind audits.

Per template version × model × period, the *eligible* verdicts (those a certificate
covers) are the original validations routed ``auto_accepted`` (or ``auto_rejected``)
drawn with an audit probability above 0; the judged ones are those whose audit was judged
blind. Open audits are outstanding, never counted as judged; a judgement given after its
author had seen the task's verdict or status is *not blind*: counted apart, never as
judged. Verdicts drawn at probability 0 (an operator's recorded exception)
cannot be estimated: the report lists them as *uncovered* (how many, whose tasks, who set
the rate and why) instead of letting them turn the whole window unknown. Verdicts drawn
with the same probability form a stratum: one stratum gives the exact Clopper–Pearson
interval, several (the rate changed) the stratified estimate with a Bonferroni interval
(``evidence_app.trust.stats``). Where every eligible verdict has a second judge's score,
the prediction-powered estimate sits beside the plain one: the predictor is the second
judge's doubt (1 - score on an accept, its score on a reject)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Any, Literal

from django.conf import settings
from django.db.models import Count, F, Max, Q, QuerySet, Sum
from django.db.models.functions import TruncDay, TruncMonth, TruncWeek
from django.utils import timezone

from evidence_app.models import (
    AuditState,
    SnapshotKind,
    ValidationSnapshot,
    VerdictRoute,
)
from evidence_app.trust.stats import (
    Interval,
    PredictionStratum,
    Stratum,
    audits_needed,
    ppi_interval,
    stratified_interval,
)

__all__ = [
    "PERIODS",
    "Uncovered",
    "WINDOW_DAYS",
    "GroupTrust",
    "PeriodTrust",
    "RateTrust",
    "TrustReport",
    "trust_report",
    "trust_window",
]

Period = Literal["day", "week", "month"]
PERIODS: tuple[Period, ...] = ("day", "week", "month")
# The headline rows: the last 30 days as one period.
WINDOW_DAYS = 30
# How far back the per-period rows go.
PERIOD_SPAN_DAYS: dict[str, int] = {"day": 30, "week": 12 * 7, "month": 365}
_TRUNC = {"day": TruncDay, "week": TruncWeek, "month": TruncMonth}
ROUTES = (VerdictRoute.AUTO_ACCEPTED, VerdictRoute.AUTO_REJECTED)

_JUDGED = Q(audit__state=AuditState.DONE, audit__correct__isnull=False, audit__blind=True)
_NOT_BLIND = Q(audit__state=AuditState.DONE, audit__blind=False)


@dataclass(frozen=True)
class RateTrust:
    """One rate (false accepts or false rejects) of one group and period."""

    route: str
    eligible: int
    judged: int
    wrong: int
    # Judged by someone who had seen the verdict first: not counted as judged.
    not_blind: int
    strata: int
    interval: Interval
    ppi: Interval | None
    target: float
    # The probability the newest verdict was drawn with: the rate future audits come at.
    audit_rate: float
    audits_needed: int | None
    verdicts_needed: int | None
    # Eligible verdicts drawn at an audit rate none of whose audits is judged yet: while
    # there are any, the estimate is unknown (they could be anything).
    unaudited: int = 0

    @property
    def method(self) -> str:
        """ "exact" (one audit rate: Clopper–Pearson) or "stratified" (rates changed)."""
        return "exact" if self.strata <= 1 else "stratified"

    @property
    def certified(self) -> bool:
        """The 95 % upper bound is under the target."""
        return self.interval.high is not None and self.interval.high < self.target


@dataclass(frozen=True)
class PeriodTrust:
    start: date | None
    false_accepts: RateTrust | None
    false_rejects: RateTrust | None
    # Audits drawn on the period's verdicts and not judged yet, both routes together:
    # per route, one open audit's count would tell where its task went.
    outstanding: int = 0


@dataclass(frozen=True)
class GroupTrust:
    template_version: str
    model_name: str
    window: PeriodTrust
    periods: list[PeriodTrust] = field(default_factory=list)


@dataclass(frozen=True)
class Uncovered:
    """Automatic verdicts of the window no certificate covers: drawn at probability 0."""

    route: str
    count: int
    requester: str
    set_by: str
    reason: str


@dataclass(frozen=True)
class TrustReport:
    period: str
    target: float
    window_days: int
    since: datetime
    groups: list[GroupTrust]
    uncovered: list[Uncovered] = field(default_factory=list)


# --- Queries -----------------------------------------------------------------------------


def _eligible(since: datetime) -> QuerySet[ValidationSnapshot]:
    return ValidationSnapshot.objects.originals().filter(
        route__in=ROUTES, audit_probability__gt=0, created_at__gte=since
    )


def uncovered_verdicts(since: datetime) -> list[Uncovered]:
    """The automatic verdicts since ``since`` drawn at probability 0, grouped by route,
    requester and the operator's recorded exception."""
    rows = (
        ValidationSnapshot.objects.originals()
        .filter(route__in=ROUTES, audit_probability=0, created_at__gte=since)
        .values(
            "route",
            "task__owner__username",
            "task__audit_settings__audit_rate_set_by__username",
            "task__audit_settings__audit_rate_reason",
        )
        .annotate(n=Count("pk"))
        .order_by("-n", "route", "task__owner__username")
    )
    return [
        Uncovered(
            route=row["route"],
            count=row["n"],
            requester=row["task__owner__username"] or "",
            set_by=row["task__audit_settings__audit_rate_set_by__username"] or "",
            reason=row["task__audit_settings__audit_rate_reason"] or "",
        )
        for row in rows
    ]


def _stratum_rows(since: datetime, period: str | None) -> list[dict[str, Any]]:
    """One aggregate row per group × route × audit probability (× period start)."""
    keys = ["template_version", "model_name", "route", "audit_probability"]
    rows = _eligible(since)
    if period:
        rows = rows.annotate(start=_TRUNC[period]("created_at"))
        keys.append("start")
    return list(
        rows.values(*keys)
        .annotate(
            eligible=Count("pk"),
            judged=Count("audit", filter=_JUDGED),
            judged_correct=Count("audit", filter=_JUDGED & Q(audit__correct=True)),
            outstanding=Count("audit", filter=Q(audit__state=AuditState.OPEN)),
            not_blind=Count("audit", filter=_NOT_BLIND),
            last_at=Max("created_at"),
        )
        .order_by()
    )


def _prediction_rows(since: datetime, period: str | None) -> list[dict[str, Any]]:
    """The second judge's scores per stratum, read from the companion snapshots: their
    count, sums over every eligible verdict and over the judged ones."""
    original = "companion_of__"
    judged = Q(
        companion_of__audit__state=AuditState.DONE,
        companion_of__audit__correct__isnull=False,
        companion_of__audit__blind=True,
        score__isnull=False,
    )
    correct = judged & Q(companion_of__audit__correct=True)
    names = ("template_version", "model_name", "route", "audit_probability")
    keys = [original + name for name in names]
    rows = ValidationSnapshot.objects.filter(
        kind=SnapshotKind.SECOND,
        companion_of__kind=SnapshotKind.VALIDATION,
        companion_of__route__in=ROUTES,
        companion_of__audit_probability__gt=0,
        companion_of__created_at__gte=since,
    )
    if period:
        rows = rows.annotate(start=_TRUNC[period](original + "created_at"))
        keys.append("start")
    squares = F("score") * F("score")
    found: Iterable[Any] = (
        rows.values(*keys)
        .annotate(
            seconds=Count("pk"),
            scored=Count("pk", filter=Q(score__isnull=False)),
            score_sum=Sum("score"),
            score_squares=Sum(squares),
            judged=Count("pk", filter=judged),
            judged_score=Sum("score", filter=judged),
            judged_squares=Sum(squares, filter=judged),
            correct=Count("pk", filter=correct),
            correct_score=Sum("score", filter=correct),
        )
        .order_by()
    )
    # Named as the originals' rows are, so both group the same way.
    return [{key.removeprefix(original): value for key, value in row.items()} for row in found]


# --- Figures -----------------------------------------------------------------------------


def _wrong(route: str, row: dict[str, Any]) -> int:
    """Audits that contradict the verdict: an accepted answer judged not correct, a
    rejected one judged correct."""
    if route == VerdictRoute.AUTO_ACCEPTED:
        return int(row["judged"] - row["judged_correct"])
    return int(row["judged_correct"])


def _prediction_stratum(
    route: str, row: dict[str, Any], scores: dict[str, Any] | None
) -> PredictionStratum | None:
    """The PPI sums of one stratum, or None when a verdict lacks a second judge's score.
    Label y (1: the verdict was wrong) and predictor f: on an accept y = 1 - correct and
    f = 1 - score, on a reject y = correct and f = score; the residual y - f is
    ±(score - correct) and its square score² - 2·score·correct + correct."""
    eligible = row["eligible"]
    if scores is None or scores["seconds"] != eligible or scores["scored"] != eligible:
        return None
    total = float(scores["score_sum"] or 0.0)
    squares = float(scores["score_squares"] or 0.0)
    judged_score = float(scores["judged_score"] or 0.0)
    correct = int(scores["correct"])
    residual = judged_score - correct
    residual_squares = (
        float(scores["judged_squares"] or 0.0) - 2 * float(scores["correct_score"] or 0.0) + correct
    )
    if route == VerdictRoute.AUTO_ACCEPTED:
        return PredictionStratum(
            eligible=eligible,
            predicted_sum=eligible - total,
            predicted_squares=eligible - 2 * total + squares,
            judged=int(scores["judged"]),
            residual_sum=residual,
            residual_squares=residual_squares,
        )
    return PredictionStratum(
        eligible=eligible,
        predicted_sum=total,
        predicted_squares=squares,
        judged=int(scores["judged"]),
        residual_sum=-residual,
        residual_squares=residual_squares,
    )


def _rate(
    route: str,
    rows: list[dict[str, Any]],
    scores: dict[Any, dict[str, Any]] | None,
    *,
    target: float,
    outlook: bool = True,
) -> RateTrust:
    """The figures of one route from its strata rows (one per audit probability);
    without ``outlook`` the audits needed are not searched for (None)."""
    rows = sorted(rows, key=lambda r: r["audit_probability"])
    strata = [Stratum(r["eligible"], r["judged"], _wrong(route, r)) for r in rows]
    newest = max(range(len(rows)), key=lambda i: rows[i]["last_at"])
    rate = float(rows[newest]["audit_probability"])
    needed = (
        audits_needed(strata, target=target, into=newest, probability=rate) if outlook else None
    )
    ppi: Interval | None = None
    if scores is not None:
        parts = [_prediction_stratum(route, r, scores.get(r["audit_probability"])) for r in rows]
        if all(p is not None for p in parts):
            found = ppi_interval([p for p in parts if p is not None])
            ppi = found if found.known else None
    return RateTrust(
        route=route,
        eligible=sum(s.eligible for s in strata),
        judged=sum(s.judged for s in strata),
        wrong=int(sum(s.events for s in strata)),
        not_blind=sum(r["not_blind"] for r in rows),
        strata=len(strata),
        interval=stratified_interval(strata),
        ppi=ppi,
        target=target,
        audit_rate=rate,
        audits_needed=needed,
        verdicts_needed=None if needed is None else math.ceil(needed / rate),
        unaudited=sum(s.eligible for s in strata if not s.judged),
    )


Key = tuple[Any, ...]


def _by_key(rows: Iterable[dict[str, Any]], with_start: bool) -> dict[Key, list[dict[str, Any]]]:
    grouped: dict[Key, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        start = row["start"] if with_start else None
        grouped[(row["template_version"], row["model_name"], start, row["route"])].append(row)
    return grouped


def _periods(
    strata: list[dict[str, Any]],
    scores: list[dict[str, Any]],
    *,
    with_start: bool,
    target: float,
    outlook: bool = True,
) -> dict[tuple[str, str], list[PeriodTrust]]:
    """Figures per (template version, model), one PeriodTrust per period start."""
    by_key = _by_key(strata, with_start)
    score_by_key: dict[Key, dict[Any, dict[str, Any]]] = defaultdict(dict)
    for key, scored in _by_key(scores, with_start).items():
        score_by_key[key] = {row["audit_probability"]: row for row in scored}
    starts: dict[tuple[str, str], set[Any]] = defaultdict(set)
    for template_version, model_name, start, _route in by_key:
        starts[(template_version, model_name)].add(start)
    result: dict[tuple[str, str], list[PeriodTrust]] = {}
    for group, group_starts in starts.items():
        rows = []
        for start in group_starts:
            rates = []
            for route in ROUTES:
                key = (*group, start, route)
                rates.append(
                    _rate(route, by_key[key], score_by_key.get(key), target=target, outlook=outlook)
                    if by_key.get(key)
                    else None
                )
            day = timezone.localdate(start) if isinstance(start, datetime) else start
            open_audits = sum(
                row["outstanding"]
                for route in ROUTES
                for row in by_key.get((*group, start, route), [])
            )
            rows.append(
                PeriodTrust(
                    start=day,
                    false_accepts=rates[0],
                    false_rejects=rates[1],
                    outstanding=open_audits,
                )
            )
        result[group] = rows
    return result


def trust_window(*, now: datetime | None = None) -> list[GroupTrust]:
    """The last ``WINDOW_DAYS`` days as one period per group, without the second judge's
    estimate nor the audits needed: one aggregate query, cheap enough for every /metrics
    scrape."""
    since = (now or timezone.now()) - timedelta(days=WINDOW_DAYS)
    window = _periods(
        _stratum_rows(since, None),
        [],
        with_start=False,
        target=settings.TRUST_TARGET_FALSE_ACCEPT,
        outlook=False,
    )
    return [
        GroupTrust(template_version=tv, model_name=model, window=rows[0])
        for (tv, model), rows in sorted(window.items())
    ]


def trust_report(
    *, period: str = "week", target: float | None = None, now: datetime | None = None
) -> TrustReport:
    """The figures of the last ``WINDOW_DAYS`` days per group, with the second judge's
    estimate where it applies, and the same per ``period`` (day, week or month)."""
    if period not in PERIODS:
        raise ValueError(f"period must be one of {', '.join(PERIODS)}")
    moment = now or timezone.now()
    chosen = settings.TRUST_TARGET_FALSE_ACCEPT if target is None else target
    since = moment - timedelta(days=WINDOW_DAYS)
    window = _periods(
        _stratum_rows(since, None), _prediction_rows(since, None), with_start=False, target=chosen
    )
    span = moment - timedelta(days=PERIOD_SPAN_DAYS[period])
    periods = _periods(
        _stratum_rows(span, period), _prediction_rows(span, period), with_start=True, target=chosen
    )
    empty = PeriodTrust(start=None, false_accepts=None, false_rejects=None)
    groups = [
        GroupTrust(
            template_version=tv,
            model_name=model,
            window=window[(tv, model)][0] if (tv, model) in window else empty,
            periods=sorted(
                periods.get((tv, model), []), key=lambda p: p.start or date.min, reverse=True
            ),
        )
        for tv, model in set(window) | set(periods)
    ]
    groups.sort(key=lambda g: (-_eligible_count(g.window), g.template_version, g.model_name))
    return TrustReport(
        period=period,
        target=chosen,
        window_days=WINDOW_DAYS,
        since=since,
        groups=groups,
        uncovered=uncovered_verdicts(since),
    )


def _eligible_count(row: PeriodTrust) -> int:
    return sum(r.eligible for r in (row.false_accepts, row.false_rejects) if r is not None)
