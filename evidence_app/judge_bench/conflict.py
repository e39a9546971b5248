"""The ``conflict`` cases' own targets (``conflict_cases.json``): an answer one tool result
states word for word, beside a second result that contradicts it (accepted at most 3
times in 60) or says the same in other words (a control: still accepted where the judge
accepts the answer with the first result alone)."""

from __future__ import annotations

from typing import Any, Protocol

DATASET = "conflict"
# At most this many answers accepted beside a contradicting source, per this many cases
# (3 of 60 per half; scaled, rounded down, for another count).
CONFLICTS_ACCEPTED_TARGET = (3, 60)
# Share of the controls the judge accepts alone that it must still accept beside a
# consistent second source.
CONTROLS_KEPT_TARGET = 0.80


class _Result(Protocol):
    dataset: str
    category: str
    got: str
    alone_got: str


def conflict_targets(results: list[Any]) -> list[tuple[str, str, str, bool]]:
    """(target, measured, wanted, met) for the conflict cases among ``results``."""
    cases: list[_Result] = [r for r in results if r.dataset == DATASET]
    if not cases:
        return []
    conflicting = [r for r in cases if r.category == "conflicting_source"]
    accepted = sum(1 for r in conflicting if r.got == "accepted")
    controls = [r for r in cases if r.category == "consistent_source" and r.alone_got == "accepted"]
    kept = sum(1 for r in controls if r.got == "accepted")
    share = kept / len(controls) if controls else None
    allowed, per = CONFLICTS_ACCEPTED_TARGET
    most = allowed * len(conflicting) // per
    return [
        (
            "conflict: accepted beside a conflicting source",
            f"{accepted}/{len(conflicting)}",
            f"<= {most}",
            accepted <= most,
        ),
        (
            "conflict: controls accepted (of those accepted alone)",
            f"{kept}/{len(controls)}" + ("" if share is None else f" {share:.0%}"),
            f">= {CONTROLS_KEPT_TARGET:.0%}",
            share is not None and share >= CONTROLS_KEPT_TARGET,
        ),
    ]
