"""The embedded judge's confidence: a graded score in [0, 1] from what
``offline:judge`` already computes, instead of accept-or-abstain. It orders verdicts by
how sure the judge can be that the answer is supported and does what was asked, so that
a threshold certified on labelled verdicts (``evidence_app.autoaccept``) can let the
surest accepts through alone.

Per claim, from its finding:

- stated by an evidence sentence, word for word: ``STATED`` (0.85), plus up to
  ``TIGHT_BONUS`` (0.05) as the claim covers more of that sentence (a claim lifted from
  the middle of a long sentence leaves more unread context), plus ``SOURCES_BONUS``
  (0.10) when another, independent source states it too;
- a short answer (a name, a figure) found in the evidence: ``SHORT`` (0.75): it names
  something, it does not state it;
- stated but disputed (another sentence states another figure, date or name):
  ``DISPUTED`` (0.40);
- not stated: ``UNSTATED`` (0.30) times the share of its words found in the closest
  sentence; contradicted: 0.

The answer's score is its weakest claim's, times the share of the request it answers
(each requirement met counts 1, partly ``PARTLY`` 0.6, not met ``UNMET`` 0.2). No claim:
0. The constants are an ordering, not a probability: the certification decides how far
down the order the judge may go alone."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["ClaimSignal", "answer_confidence", "claim_confidence"]

STATED = 0.85
TIGHT_BONUS = 0.05
SOURCES_BONUS = 0.10
SHORT = 0.75
DISPUTED = 0.40
UNSTATED = 0.30
PARTLY = 0.6
UNMET = 0.2
MET_WEIGHT = {"yes": 1.0, "partly": PARTLY, "no": UNMET}


@dataclass(frozen=True)
class ClaimSignal:
    """What the embedded judge found for one claim."""

    verdict: str  # supported, contradicted or unsupported
    # The share of the claim's words found in the best evidence sentence (1 when stated),
    # and the share of that sentence's words the claim covers.
    coverage: float = 0.0
    tightness: float = 0.0
    # Distinct sources (tool results) that state it.
    sources: int = 0
    disputed: bool = False
    short: bool = False
    # The entailment model's reading, where it read the claim: the best premise's
    # entailment probability, the most contradicting sentence's contradiction
    # probability, and whether the claim is supported by that reading (a paraphrase)
    # rather than word for word.
    entailment: float | None = None
    contradiction: float = 0.0
    entailed: bool = False


def claim_confidence(signal: ClaimSignal) -> float:
    if signal.verdict == "contradicted":
        return 0.0
    if signal.verdict != "supported":
        return UNSTATED * min(1.0, max(0.0, signal.coverage))
    if signal.disputed:
        return DISPUTED
    undisputed = 1.0 - min(1.0, max(0.0, signal.contradiction))
    if signal.entailed and signal.entailment is not None:
        return signal.entailment * undisputed
    if signal.short:
        return SHORT
    tight = TIGHT_BONUS * min(1.0, max(0.0, signal.tightness))
    corroborated = SOURCES_BONUS if signal.sources >= 2 else 0.0
    stated = STATED + tight + corroborated
    # Stated word for word: the rules' grade (corroboration, how much of the sentence it
    # covers) orders these; the model's reading only lowers it by a contradiction.
    return stated * undisputed


def answer_confidence(claims: Iterable[ClaimSignal], requirements_met: Iterable[str]) -> float:
    """The answer's score: its weakest claim's confidence times the share of the request
    it answers; rounded to three places."""
    per_claim = [claim_confidence(c) for c in claims]
    if not per_claim:
        return 0.0
    met = [MET_WEIGHT.get(str(m), UNMET) for m in requirements_met]
    answered = sum(met) / len(met) if met else 1.0
    return round(min(per_claim) * answered, 3)
