"""The auto-accept gate the routing reads: what one judge may accept alone. Its approved
threshold, read from the database (``approved_gate``), and why an accepted verdict goes to
a person under it (``below_threshold_reason``). Without an approved threshold the judge
keeps its word (``AUTOACCEPT_UNCERTIFIED=auto-accept``) or every accept goes to a person
(``certified-only``). Database reads only: no numpy, no scipy."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from django.conf import settings

from evidence_app.autoaccept.selectors import JudgeKey
from evidence_app.models import AutoAcceptThreshold
from project.db import MARKER_TEXT, Prepared

__all__ = [
    "UNCERTIFIED_AUTO_ACCEPT",
    "UNCERTIFIED_TO_A_PERSON",
    "AutoAcceptGate",
    "approved_gate",
    "below_threshold_reason",
]

# AUTOACCEPT_UNCERTIFIED: what a judge without an approved, unstopped threshold may do.
UNCERTIFIED_AUTO_ACCEPT = "auto-accept"
UNCERTIFIED_TO_A_PERSON = "certified-only"


@dataclass(frozen=True)
class AutoAcceptGate:
    """What the routing lets one judge accept alone: an accepted verdict scoring at or
    above ``threshold`` goes to the requester, one below to a person; ``stopped``: the
    drift rule fired, or an operator stopped it, and every accepted verdict goes to a
    person. ``threshold`` None: the judge has no approved threshold and the deployment
    auto-accepts certified judges only (``AUTOACCEPT_UNCERTIFIED=certified-only``):
    every accept goes to a person."""

    threshold_id: int | None
    threshold: float | None
    stopped: bool
    # Stopped by an operator's switch rather than by the drift rule.
    stopped_by_operator: bool = False

    @property
    def certified(self) -> bool:
        return self.threshold is not None


# The second text marker of ``_approved_threshold`` (each marker needs its own value).
_MARKER_MODEL = MARKER_TEXT + "model"


@functools.cache
def _approved_threshold() -> Prepared:
    """A judge's approved threshold (id, threshold, stopped_at, stopped_by_id), compiled
    once: ``approved_gate`` runs for every verdict."""
    return Prepared(
        AutoAcceptThreshold.objects.approved()
        .for_judge(MARKER_TEXT, _MARKER_MODEL)
        .filter(threshold__isnull=False)
        .order_by("pk")
        .values_list("pk", "threshold", "stopped_at", "stopped_by_id")[:1],
        version=MARKER_TEXT,
        model=_MARKER_MODEL,
    )


def approved_gate(key: JudgeKey) -> AutoAcceptGate | None:
    """What the judge may accept alone: its approved threshold; without one, None when
    the deployment lets an uncertified judge keep its word (``AUTOACCEPT_UNCERTIFIED=
    auto-accept``: its accepted verdicts go to the requester, not certified), else a
    gate that sends every accept to a person."""
    rows = _approved_threshold().rows(version=key.template_version, model=key.model_name)
    if rows and rows[0][1] is not None:
        pk, threshold, stopped_at, stopped_by_id = rows[0]
        return AutoAcceptGate(
            threshold_id=pk,
            threshold=threshold,
            stopped=stopped_at is not None,
            stopped_by_operator=stopped_at is not None and stopped_by_id is not None,
        )
    if settings.AUTOACCEPT_UNCERTIFIED == UNCERTIFIED_TO_A_PERSON:
        return AutoAcceptGate(threshold_id=None, threshold=None, stopped=False)
    return None


def below_threshold_reason(summary: str, score: float | None, gate: AutoAcceptGate) -> str | None:
    """Why an accepted verdict goes to a person under the judge's gate, or None when it
    may go to the requester."""
    threshold = gate.threshold
    if threshold is None:
        return (
            f"{summary}; this judge has no certified threshold and only certified judges "
            "auto-accept here: a person decides"
        )
    if gate.stopped:
        why = (
            "an operator stopped it" if gate.stopped_by_operator else "its audits show it drifting"
        )
        return f"{summary}; auto-accept is stopped for this judge ({why}): a person decides"
    if score is None or score < threshold:
        shown = "no score" if score is None else f"score {score:.2f}"
        return (
            f"{summary} ({shown}), below the certified threshold {threshold:.2f}: a person decides"
        )
    return None
