"""The certified threshold and the drift rule on synthetic judges: how often the
guarantee holds over many simulated deployments, how much each judge automates, how
fast a degrading judge is stopped. ``python -m evidence_app.autoaccept.simulate`` prints
the tables of docs/validator.md ("Auto-accept at a certified risk").

A synthetic judge accepts every answer it sees with a score uniform on [0, 1]; the
answer is wrong with probability ``c (1 - s)^k`` at score ``s``, ``c = base (k + 1)``, so
that ``base`` of all its accepts are wrong and, exactly, the false-accept rate among
scores ≥ τ is ``base (1 - τ)^k`` and the share of scores ≥ τ is ``1 - τ``. ``k`` says how
much the score knows: 3 strongly, 1 weakly, 0 nothing."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evidence_app.autoaccept.certify import (
    DELTA,
    FloatArray,
    binomial_pvalues,
    certify_batch,
    min_accepts_needed,
)
from evidence_app.autoaccept.drift import DriftRule, drift_stops

__all__ = [
    "JUDGES",
    "CertificationRun",
    "DriftRun",
    "SyntheticJudge",
    "simulate_certification",
    "simulate_drift",
    "simulation_tables",
]

TARGET = 0.02
SEED = 38


@dataclass(frozen=True)
class SyntheticJudge:
    name: str
    # The share of its accepts that are wrong, and how sharply the score orders them.
    base: float
    power: int

    def wrong_probability(self, scores: FloatArray) -> FloatArray:
        return self.base * (self.power + 1) * (1 - scores) ** self.power

    def risk(self, thresholds: FloatArray) -> FloatArray:
        """The exact false-accept rate among scores ≥ τ."""
        return self.base * (1 - thresholds) ** self.power

    def draw(
        self, rng: np.random.Generator, shape: tuple[int, ...]
    ) -> tuple[FloatArray, np.ndarray]:
        scores = rng.random(shape)
        return scores, rng.random(shape) < self.wrong_probability(scores)


JUDGES = (
    SyntheticJudge("strong", base=0.10, power=3),
    SyntheticJudge("weak", base=0.10, power=1),
    SyntheticJudge("useless", base=0.10, power=0),
    SyntheticJudge("useless, just above the target", base=0.021, power=0),
)


@dataclass(frozen=True)
class CertificationRun:
    """Many deployments of one judge: calibrate on ``labelled`` fresh labelled verdicts,
    then auto-accept ``verdicts`` fresh ones at the certified threshold."""

    judge: str
    labelled: int
    deployments: int
    # Deployments with a certified threshold.
    certified: float
    # The share of verdicts auto-accepted, median and 5th percentile over deployments
    # (0 in a deployment without a threshold).
    automated_median: float
    automated_p5: float
    # Deployments whose realised false-accept rate among the auto-accepts was at most
    # the target (trivially so without auto-accepts), and those whose true rate at the
    # certified threshold was.
    realised_ok: float
    true_ok: float
    realised_p95: float


def _deploy(
    judge: SyntheticJudge, thresholds: FloatArray, verdicts: int, rng: np.random.Generator
) -> tuple[FloatArray, FloatArray]:
    """Auto-accepts and wrong ones among ``verdicts`` fresh verdicts per threshold: the
    count at or above τ is binomial with the share ``1 - τ``, the wrong among them
    binomial with the exact rate there."""
    certified = np.isfinite(thresholds)
    tau = np.where(certified, thresholds, 1.0)
    accepted = np.where(certified, rng.binomial(verdicts, 1 - tau), 0)
    wrong = rng.binomial(accepted, np.clip(judge.risk(tau), 0, 1))
    return accepted.astype(float), wrong.astype(float)


def calibrate(
    judge: SyntheticJudge,
    *,
    labelled: int,
    deployments: int,
    rng: np.random.Generator,
    target: float = TARGET,
    discipline: bool = True,
) -> FloatArray:
    """The threshold of each deployment from its own labelled verdicts; without the
    fixed-sequence ``discipline``, the lowest threshold whose bound is under the target
    (a control: choosing freely among the thresholds that look good)."""
    scores, wrong = judge.draw(rng, (deployments, labelled))
    if discipline:
        return certify_batch(scores, wrong, target=target)
    order = np.argsort(-scores, axis=-1)
    s = np.take_along_axis(scores, order, axis=-1)
    errors = np.cumsum(np.take_along_axis(wrong, order, axis=-1), axis=-1)
    good = binomial_pvalues(errors, np.arange(1, labelled + 1), target) <= DELTA
    good[..., : min_accepts_needed(target) - 1] = False
    last = labelled - 1 - np.argmax(good[..., ::-1], axis=-1)
    return np.where(good.any(axis=-1), s[np.arange(deployments), last], np.nan)


def simulate_certification(
    judge: SyntheticJudge,
    *,
    labelled: int = 1000,
    deployments: int = 1000,
    verdicts: int = 10_000,
    target: float = TARGET,
    seed: int = SEED,
    discipline: bool = True,
) -> CertificationRun:
    rng = np.random.default_rng(seed)
    thresholds = calibrate(
        judge,
        labelled=labelled,
        deployments=deployments,
        rng=rng,
        target=target,
        discipline=discipline,
    )
    accepted, wrong = _deploy(judge, thresholds, verdicts, rng)
    realised = wrong / np.maximum(accepted, 1)
    certified = np.isfinite(thresholds)
    true_risk = np.where(certified, judge.risk(np.where(certified, thresholds, 1.0)), 0.0)
    automated = accepted / verdicts
    return CertificationRun(
        judge=judge.name,
        labelled=labelled,
        deployments=deployments,
        certified=float(certified.mean()),
        automated_median=float(np.median(automated)),
        automated_p5=float(np.percentile(automated, 5)),
        realised_ok=float((realised <= target).mean()),
        true_ok=float((true_risk <= target).mean()),
        realised_p95=float(np.percentile(realised, 95)),
    )


@dataclass(frozen=True)
class DriftRun:
    """Many runs of the drift rule over ``audits`` live audits whose false-accept rate
    changes at audit ``change`` (never when ``change`` is None)."""

    scenario: str
    runs: int
    audits: int
    change: int | None
    # Runs stopped before the change (false alarms), and stopped at all.
    stopped_before_change: float
    stopped: float
    # Audits from the change to the stop, median and 95th percentile over the runs
    # (a run never stopped counts as beyond the horizon); None without a change.
    to_stop_median: float | None
    to_stop_p95: float | None


def simulate_drift(
    scenario: str,
    before: FloatArray,
    after: float | None,
    *,
    rule: DriftRule,
    audits: int = 1000,
    change: int = 300,
    seed: int = SEED,
) -> DriftRun:
    """The drift rule on runs whose audits are wrong at the rate ``before`` (one per run)
    and, from audit ``change`` on, at ``after`` (no change when None)."""
    rng = np.random.default_rng(seed)
    runs = before.size
    switch = audits if after is None else change
    rates = np.where(np.arange(audits) < switch, before[:, None], after or 0.0)
    stopped_at, _ = drift_stops(rng.random((runs, audits)) < rates, rule)
    stopped = stopped_at > 0
    early = stopped & (stopped_at <= switch)
    median = p95 = None
    if after is not None:
        delay = np.where(stopped, stopped_at - change, audits + 1 - change)[~early]
        median, p95 = (float(x) for x in np.percentile(delay, [50, 95]))
    return DriftRun(
        scenario=scenario,
        runs=runs,
        audits=audits,
        change=None if after is None else change,
        stopped_before_change=float(early.mean()),
        stopped=float(stopped.mean()),
        to_stop_median=median,
        to_stop_p95=p95,
    )


def drift_runs(
    rule: DriftRule, *, deployments: int = 1000, labelled: int = 1000, seed: int = SEED
) -> list[DriftRun]:
    """The drift table: a strong judge at its certified threshold (its true rate there,
    deployments without a threshold left out) left alone, then degrading; and judges
    running at exactly the target and at half of it."""
    strong = JUDGES[0]
    rng = np.random.default_rng(seed)
    tau = calibrate(strong, labelled=labelled, deployments=deployments, rng=rng)
    healthy = strong.risk(tau[np.isfinite(tau)])
    target = rule.target
    at = np.full(deployments, target)
    return [
        simulate_drift("strong judge, stays healthy", healthy, None, rule=rule, seed=seed),
        simulate_drift("at the target throughout", at, None, rule=rule, seed=seed),
        simulate_drift("at half the target", at / 2, None, rule=rule, seed=seed),
        simulate_drift("strong, then useless (10 %)", healthy, 0.10, rule=rule, seed=seed),
        simulate_drift(
            f"strong, then {_percent(3 * target)}", healthy, 3 * target, rule=rule, seed=seed
        ),
    ]


def _percent(share: float) -> str:
    return f"{100 * share:.3g} %"


def _share(share: float) -> str:
    return f"{100 * share:.1f} %"


def certification_table(runs: Sequence[CertificationRun], *, target: float) -> list[str]:
    lines = [
        "| judge | labelled | runs with a τ | automated: median (5th pct) "
        f"| realised ≤ {_percent(target)} | true rate ≤ {_percent(target)} | realised, 95th pct |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r.judge} | {r.labelled} | {_share(r.certified)} "
            f"| {_share(r.automated_median)} ({_share(r.automated_p5)}) "
            f"| {_share(r.realised_ok)} | {_share(r.true_ok)} "
            f"| {_share(r.realised_p95)} |"
        )
    return lines


def drift_table(runs: Sequence[DriftRun]) -> list[str]:
    lines = [
        "| live audits | runs | stopped before the change | stopped in all "
        "| audits from the change to the stop: median (95th pct) |",
        "|---|---|---|---|---|",
    ]
    for r in runs:
        delay = "-" if r.to_stop_median is None else f"{r.to_stop_median:.0f} ({r.to_stop_p95:.0f})"
        change = "" if r.change is None else f", changes at audit {r.change}"
        lines.append(
            f"| {r.scenario}{change} ({r.audits} audits) | {r.runs} "
            f"| {_share(r.stopped_before_change)} | {_share(r.stopped)} | {delay} |"
        )
    return lines


def simulation_tables(
    *,
    labelled: Sequence[int] = (500, 1000, 3000),
    deployments: int = 1000,
    target: float = TARGET,
    seed: int = SEED,
) -> str:
    """The tables of docs/validator.md: every synthetic judge at each count of labels,
    the control without the fixed sequence, and the drift rule."""
    runs = [
        simulate_certification(judge, labelled=n, deployments=deployments, target=target, seed=seed)
        for judge in JUDGES
        for n in labelled
    ]
    control = [
        simulate_certification(
            JUDGES[3],
            labelled=3000,
            deployments=deployments,
            target=target,
            seed=seed,
            discipline=discipline,
        )
        for discipline in (True, False)
    ]
    rule = DriftRule(target)
    drift = drift_runs(rule, deployments=deployments, seed=seed)
    parts = [
        *certification_table(runs, target=target),
        "",
        "Control: the lowest threshold whose bound is under the target, without stopping "
        "at the first failure (first row: the procedure; second: the free choice).",
        "",
        *certification_table(control, target=target),
        "",
        f"Drift rule: CUSUM of {_percent(rule.degraded_factor * target)} against "
        f"{_percent(target)}, stop at {rule.threshold:g}.",
        "",
        *drift_table(drift),
    ]
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--labelled", type=int, nargs="+", default=[500, 1000, 3000])
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--target", type=float, default=TARGET)
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    print(
        simulation_tables(
            labelled=args.labelled,
            deployments=args.deployments,
            target=args.target,
            seed=args.seed,
        )
    )


if __name__ == "__main__":
    main()
