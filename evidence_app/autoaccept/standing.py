"""What Trust says first about each judge: one sentence a team lead can repeat (the
guarantee, or why there is none and the number that is missing), its state (certified,
not certified, stopped: since when and why), the next step, and the figures, each group
of figures naming the answers it counts so that no figure counts another population than
the sentence beside it. Built from the stored certifications
(``evidence_app.autoaccept.overview``) and counts of the judge's verdicts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count, Q
from django.utils import timezone

from evidence_app.autoaccept.gate import UNCERTIFIED_TO_A_PERSON
from evidence_app.autoaccept.overview import WINDOW_DAYS, JudgeAutoAccept
from evidence_app.autoaccept.selectors import judge_verdicts
from evidence_app.models import AutoAcceptThreshold, ThresholdState, VerdictRoute
from evidence_app.trust.stats import Stratum, audits_needed

__all__ = ["CERTIFIED", "NOT_CERTIFIED", "STOPPED", "Figure", "FigureGroup", "Standing", "standing"]

CERTIFIED, NOT_CERTIFIED, STOPPED = "certified", "not certified", "stopped"
DRIFT_LIMIT = 5


def percent(share: float | None) -> str:
    """0.0200 → "2 %", 0.8095 → "80.95 %"; None → "unknown"."""
    if share is None:
        return "unknown"
    return f"{100 * share:.2f}".rstrip("0").rstrip(".") + " %"


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    if minutes < 1:
        return f"{round(seconds)} s"
    return f"{minutes} min" if minutes < 120 else f"{minutes / 60:.1f} h"


def _when(at: datetime | None) -> str:
    return timezone.localtime(at).strftime("%Y-%m-%d %H:%M") if at else "an unknown time"


@dataclass(frozen=True)
class Figure:
    label: str
    value: str


@dataclass(frozen=True)
class FigureGroup:
    """Figures that all count the answers ``about`` names."""

    about: str
    figures: list[Figure]


@dataclass(frozen=True)
class Standing:
    judge: JudgeAutoAccept
    state: str
    since: datetime | None
    sentence: str
    state_line: str
    next_step: str
    groups: list[FigureGroup]


@dataclass(frozen=True)
class Routed:
    """A judge's accepted answers since a moment: how many, and how many of them went to
    the requester without a person."""

    since: datetime
    accepted: int
    auto: int

    def figures(self, *, saved: str | None = None) -> list[Figure]:
        share = f" ({percent(self.auto / self.accepted)})" if self.accepted else ""
        rows = [
            Figure("Accepted by the judge", f"{self.accepted:,}"),
            Figure("Sent to the requester without a person", f"{self.auto:,}{share}"),
            Figure("Sent to a person", f"{self.accepted - self.auto:,}"),
        ]
        if saved is not None:
            rows.append(Figure("Reviewer time saved", saved))
        return rows


def _routed(judge: JudgeAutoAccept, since: datetime) -> Routed:
    counts = (
        judge_verdicts(judge.key)
        .filter(created_at__gte=since)
        .aggregate(n=Count("pk"), auto=Count("pk", filter=Q(route=VerdictRoute.AUTO_ACCEPTED)))
    )
    return Routed(since, counts["n"] or 0, counts["auto"] or 0)


def _point(row: AutoAcceptThreshold, threshold: float | None) -> dict[str, Any] | None:
    return next((p for p in row.curve if p["threshold"] == threshold), None)


def _certified_on(row: AutoAcceptThreshold) -> FigureGroup:
    """The labelled answers a certification was computed on, at its threshold."""
    at = _point(row, row.threshold)
    figures = [Figure("Labelled answers", f"{row.labelled:,}")]
    if row.threshold is not None:
        scoring = f"{at['accepted']:,}, " if at else ""
        figures += [
            Figure(
                f"Scoring {row.threshold:.3f} or more",
                f"{scoring}{percent(row.automated)} weighed by how they were drawn",
            ),
            Figure("False accepts among them", percent(row.risk)),
            Figure("95 % upper bound", percent(row.upper)),
        ]
    elif row.curve:
        strictest = row.curve[0]
        figures += [
            Figure(
                f"Scoring {strictest['threshold']:.3f} or more (the strictest score)",
                f"{strictest['accepted']:,}",
            ),
            Figure("False accepts among them", percent(strictest["risk"])),
            Figure("95 % upper bound", percent(strictest["upper"])),
        ]
    figures.append(Figure("Target", percent(row.target)))
    what = (
        "it is certified on"
        if row.state == ThresholdState.APPROVED
        else "of its latest certification"
    )
    return FigureGroup(
        f"The {row.labelled:,} labelled answers {what} ({_when(row.computed_at)})", figures
    )


def _pending_step(pending: AutoAcceptThreshold | None, ready_at: datetime | None) -> str | None:
    """The next step a proposal asks for: run it in shadow, or approve it."""
    if pending is None or pending.threshold is None:
        return None
    if pending.state == ThresholdState.PROPOSED:
        return (
            f"Run threshold {pending.threshold:.3f} in shadow for "
            f"{settings.AUTOACCEPT_SHADOW_HOURS:g} h, then approve it."
        )
    if ready_at is not None and ready_at > timezone.now():
        return (
            f"Approve threshold {pending.threshold:.3f} from {_when(ready_at)}, when its "
            "shadow has run."
        )
    return f"Approve threshold {pending.threshold:.3f}: its shadow has run."


def _more_labels(row: AutoAcceptThreshold) -> str:
    """What would certify a judge whose strictest score is over the target."""
    if not row.curve:
        return "Label more of its answers: blind audits by someone other than the requester count."
    strictest = row.curve[0]
    n = int(strictest["accepted"])
    wrong = round(strictest["risk"] * n)
    more = audits_needed(
        [Stratum(n, n, wrong)], target=row.target, into=0, probability=1.0, level=1 - 2 * row.delta
    )
    if more is None:
        return (
            f"Compare a candidate judge on the Judge page: at the {percent(strictest['risk'])} "
            "wrong seen so far, more labels cannot bring this one under the target."
        )
    return (
        f"Audit about {more:,} more of its answers scoring {strictest['threshold']:.3f} or more: "
        f"if they are wrong as rarely as so far, the upper bound comes under {percent(row.target)}."
    )


def _certified(judge: JudgeAutoAccept, approved: AutoAcceptThreshold, window: datetime) -> Standing:
    tau = approved.threshold or 0.0
    by = f", by {approved.approved_by.get_username()}" if approved.approved_by else ""
    since = max(window, approved.approved_at or window)
    routed = _routed(judge, since)
    saved = (
        f"{_duration(judge.seconds_saved)} at the team's median time per answer"
        if judge.seconds_saved is not None
        else "not measured: no reviewer time per answer this month"
    )
    lower = [p for p in approved.curve if p["threshold"] < tau]
    next_step = _pending_step(judge.pending, judge.shadow_ready_at) or (
        f"To send more answers without a person, the next score down ({lower[0]['threshold']:.3f}, "
        f"{percent(lower[0]['coverage'])} of labelled answers) needs its 95 % upper bound under "
        f"{percent(approved.target)}; it is {percent(lower[0]['upper'])} now: label more answers "
        "at those scores."
        if lower
        else "Nothing to do: audits keep sampling its auto-accepts and stop them if it drifts."
    )
    return Standing(
        judge=judge,
        state=CERTIFIED,
        since=approved.approved_at,
        sentence=(
            f"At most {percent(approved.target)} of the answers this judge accepts on its own "
            f"are wrong, with {percent(1 - approved.delta)} confidence, for answers like the "
            f"{approved.labelled:,} labelled ones: it accepts on its own only answers scoring "
            f"{tau:.3f} or more."
        ),
        state_line=(
            f"Certified since {_when(approved.approved_at)}{by}: threshold {tau:.3f}. Drift "
            f"watch: {approved.drift_wrong} wrong of {approved.drift_audits} audits of its "
            f"auto-accepts (CUSUM {approved.drift_statistic:.2f}; it stops at {DRIFT_LIMIT})."
        ),
        next_step=next_step,
        groups=[
            _certified_on(approved),
            FigureGroup(
                f"Answers it accepted since {_when(since)}",
                [
                    *routed.figures(saved=saved),
                    Figure("Audits of those sent without a person", f"{approved.drift_audits:,}"),
                    Figure("Found wrong", f"{approved.drift_wrong:,}"),
                ],
            ),
        ],
    )


def _stopped(judge: JudgeAutoAccept, approved: AutoAcceptThreshold) -> Standing:
    stopped_at = approved.stopped_at or timezone.now()
    routed = _routed(judge, stopped_at)
    next_step = _pending_step(judge.pending, judge.shadow_ready_at)
    if next_step is None and judge.pending is not None:
        next_step = _more_labels(judge.pending)
    return Standing(
        judge=judge,
        state=STOPPED,
        since=stopped_at,
        sentence=(
            f"No guarantee: {approved.drift_wrong} of the {approved.drift_audits} audits of "
            f"the answers it accepted on its own were wrong, so its auto-accept stopped on "
            f"{_when(stopped_at)}; every answer it accepts now goes to a person."
        ),
        state_line=(
            f"Stopped since {_when(stopped_at)}: the drift watch (CUSUM "
            f"{approved.drift_statistic:.2f}, stops at {DRIFT_LIMIT}) found more wrong "
            f"auto-accepts than a judge at {percent(approved.target)} would give; threshold "
            f"{approved.threshold or 0:.3f} no longer applies."
        ),
        next_step=next_step
        or "Compare a candidate judge on the Judge page, or wait for a new certification.",
        groups=[
            FigureGroup(
                f"Answers it accepted since it stopped ({_when(stopped_at)})", routed.figures()
            ),
            FigureGroup(
                "Audits of its auto-accepts from approval to the stop",
                [
                    Figure("Judged", f"{approved.drift_audits:,}"),
                    Figure("Found wrong", f"{approved.drift_wrong:,}"),
                ],
            ),
            *([_certified_on(judge.pending)] if judge.pending else []),
        ],
    )


def _uncertified_route() -> str:
    """Where an uncertified judge's accepted answers go, by ``AUTOACCEPT_UNCERTIFIED``."""
    if settings.AUTOACCEPT_UNCERTIFIED == UNCERTIFIED_TO_A_PERSON:
        return (
            "every answer it accepts goes to a person (this deployment auto-accepts "
            "certified judges only: AUTOACCEPT_UNCERTIFIED=certified-only)"
        )
    return (
        "the answers it accepts go to the requester on its word alone "
        "(AUTOACCEPT_UNCERTIFIED=auto-accept)"
    )


def _why_not(pending: AutoAcceptThreshold | None) -> str:
    if pending is None:
        return (
            "No guarantee: no certification has been computed for this judge yet (the "
            f"background job certifies it once its answers have labels), so {_uncertified_route()}."
        )
    if pending.threshold is not None:
        return (
            f"No guarantee yet: threshold {pending.threshold:.3f} is certified on "
            f"{pending.labelled:,} labelled answers (at most {percent(pending.target)} wrong, "
            f"{percent(1 - pending.delta)} confidence) but not approved, so "
            f"{_uncertified_route()}."
        )
    if not pending.curve:
        return (
            f"No guarantee: its {pending.labelled:,} labelled answers have no score to "
            f"certify, so {_uncertified_route()}."
        )
    strictest = pending.curve[0]
    return (
        f"No guarantee: on its {pending.labelled:,} labelled answers even the strictest "
        f"score ({strictest['threshold']:.3f}) has a 95 % upper bound of "
        f"{percent(strictest['upper'])} false accepts, above the target of "
        f"{percent(pending.target)}; {_uncertified_route()}."
    )


def _not_certified(judge: JudgeAutoAccept, window: datetime) -> Standing:
    pending = judge.pending
    routed = _routed(judge, window)
    groups = [FigureGroup(f"Answers it accepted in the last {WINDOW_DAYS} days", routed.figures())]
    if pending is not None:
        groups.append(_certified_on(pending))
    next_step = _pending_step(pending, judge.shadow_ready_at)
    if next_step is None:
        next_step = (
            _more_labels(pending)
            if pending
            else "Label its answers: blind audits by someone other than the requester count."
        )
    return Standing(
        judge=judge,
        state=NOT_CERTIFIED,
        since=None,
        sentence=_why_not(pending),
        state_line=(
            "Not certified: no threshold is approved"
            + (f"; latest certification {_when(pending.computed_at)}." if pending else ".")
        ),
        next_step=next_step,
        groups=groups,
    )


def standing(judges: list[JudgeAutoAccept], now: datetime | None = None) -> list[Standing]:
    """Each judge's standing, in the order of ``judges``."""
    window = (now or timezone.now()) - timedelta(days=WINDOW_DAYS)
    result = []
    for judge in judges:
        approved = judge.approved
        if approved is not None and approved.stopped:
            result.append(_stopped(judge, approved))
        elif approved is not None and approved.threshold is not None:
            result.append(_certified(judge, approved, window))
        else:
            result.append(_not_certified(judge, window))
    return result
