"""Changing the judge: the gate and shadow mode.

A candidate template and model are compared with the current judge on the same labelled
cases (``gate_cases``) by a background job, a slice of cases per delivery, recording
progress; the figures and McNemar's test are in ``evidence_app.judges.figures``. Only a
finished comparison can make its candidate the default (``judge_default_make``), and
the change is recorded. A candidate in shadow judges every new original verdict's attempt
in the background (``shadow_verdict_run``) and never moves a task.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from evidence_app.judge_bench import DEFAULT_CASE_FILES, load_cases, run_case
from evidence_app.judge_bench.from_reviews import labelled_cases
from evidence_app.judges.figures import BETTER, comparison_figures
from evidence_app.models import (
    ComparisonState,
    JudgeComparison,
    JudgeDefault,
    ShadowJudge,
    ShadowState,
    ShadowVerdict,
    ValidationSnapshot,
)
from evidence_app.validation.current_judge import active_shadow, current_judge
from evidence_app.validation.shadow import shadow_validation
from evidence_app.validator.templates import get_template
from project.errors import InvalidInput, StaleAction, first_line
from tasks_app.actions import job_enqueue

log = logging.getLogger(__name__)

__all__ = [
    "COMPARISON_JOB",
    "MIN_COMPARED_CASES",
    "MIN_REASON_CHARS",
    "ShadowOfCurrentJudge",
    "DefaultChange",
    "comparison_is_stale",
    "comparison_request",
    "comparison_run",
    "gate_cases",
    "judge_default_make",
    "shadow_start",
    "shadow_stop",
    "shadow_verdict_run",
]

# The fewest compared cases a comparison needs before its candidate can become the
# judge. McNemar's exact test can call a difference significant (p < 0.05) only when the
# judges disagree on at least 6 cases (two-sided p = 2 * 0.5**6 = 0.031); two judges agree
# on most cases, so fewer than 30 rarely hold 6 disagreements, and on 30 cases an
# accuracy of 90 % still has a 95 % interval of 73-98 %. docs/validator.md says so.
MIN_COMPARED_CASES = 30
# A candidate the comparison did not find better becomes the judge only with a reason
# of at least this many characters, written on the page, and a second confirmation.
MIN_REASON_CHARS = 20

# The comparison job's name (evidence_app.jobs registers it under this name).
COMPARISON_JOB = "evidence_app.judge_comparison"
# One delivery judges cases for about this long, then queues the rest as a new job: a
# long comparison never meets the job time limit, and other validation jobs run between.
SLICE_SECONDS = 60.0


def gate_cases(case_filter: list[str] | None = None) -> list[dict[str, Any]]:
    """The labelled cases a candidate is judged on, held-out half: the shipped cases
    files and the team's own cases from decided tasks and judged audits
    (``labelled_cases``). ``case_filter`` keeps these ids or categories. The only source
    of gate cases."""
    shipped = load_cases(list(DEFAULT_CASE_FILES), case_filter or None, split="heldout")
    wanted = set(case_filter or [])
    team = [
        case
        for case in labelled_cases()
        if case["split"] == "heldout"
        and (not wanted or case["id"] in wanted or case["category"] in wanted)
    ]
    return shipped + team


def comparison_request(
    *, template: str, model: str, requested_by: Any, case_filter: list[str] | None = None
) -> JudgeComparison:
    """Record a comparison of ``template`` on ``model`` against the current judge and
    queue its job through the outbox, in the caller's transaction. An unknown template,
    or a filter no gate case matches, is refused here, not in the worker."""
    get_template(template)
    cases = gate_cases(case_filter)
    if not cases:
        raise InvalidInput(
            f"No held-out case matches {', '.join(case_filter or [])}: give case ids "
            "(e.g. supported-02) or categories (e.g. contradicted)."
        )
    baseline_template, baseline_model = current_judge()
    comparison = JudgeComparison.objects.create(
        template=template,
        model=model,
        baseline_template=baseline_template,
        baseline_model=baseline_model,
        case_filter=list(case_filter or []),
        total=len(cases),
        requested_by=requested_by if getattr(requested_by, "is_authenticated", False) else None,
    )
    job_enqueue(COMPARISON_JOB, (comparison.pk,))
    return comparison


def comparison_run(
    *, comparison_id: int, slice_seconds: float = SLICE_SECONDS
) -> JudgeComparison | None:
    """Judge the next slice of a comparison's cases with both judges and record them;
    queue the rest, or, with every case judged, store the figures and mark it
    ``succeeded``. A crash marks it ``failed`` with the reason; deliveries that never
    finish a case (the worker stopped each time) fail it after JOB_MAX_TRIES. A delivery
    of a finished comparison does nothing."""
    # Conditional claim: a finished comparison is never run again by a late delivery.
    claimed = JudgeComparison.objects.filter(
        pk=comparison_id,
        state__in=[ComparisonState.QUEUED, ComparisonState.RUNNING],
        tries__lt=settings.JOB_MAX_TRIES,
    ).update(state=ComparisonState.RUNNING, tries=F("tries") + 1)
    comparison = JudgeComparison.objects.filter(pk=comparison_id).first()
    if comparison is None:
        return None
    if not claimed:
        if comparison.pending:
            _comparison_finished(
                comparison,
                error=f"stopped after {comparison.tries} tries that judged no case: "
                "the worker never finished one",
            )
        return comparison
    try:
        remaining = _comparison_slice(comparison, slice_seconds)
    except (OperationalError, InterfaceError):
        raise  # the job tries again when the database is back
    except Exception as exc:
        log.exception("judge comparison %s crashed", comparison_id)
        _comparison_finished(comparison, error=f"{type(exc).__name__}: {first_line(exc)}")
        return comparison
    if remaining:
        job_enqueue(COMPARISON_JOB, (comparison.pk,))
        return comparison
    comparison.figures = _figures(comparison.outcomes)
    _comparison_finished(comparison)
    return comparison


def _figures(outcomes: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The comparison's figures, and both judges at a certified risk."""
    # Imported here: it loads scipy, which the web processes that import this module
    # (the judge page) never need; only this job computes it.
    from evidence_app.judges.at_target import at_target_figures

    figures = comparison_figures(outcomes)
    figures["at_target"] = at_target_figures(outcomes, target=settings.TRUST_TARGET_FALSE_ACCEPT)
    return figures


def _comparison_slice(comparison: JudgeComparison, slice_seconds: float) -> int:
    """Judge cases not yet judged until ``slice_seconds`` have passed (at least one);
    returns how many are left."""
    cases = gate_cases(comparison.case_filter)
    done_ids = {o["id"] for o in comparison.outcomes}
    todo = [c for c in cases if c["id"] not in done_ids]
    started = time.monotonic()
    for index, case in enumerate(todo):
        if index and time.monotonic() - started >= slice_seconds:
            return len(todo) - index
        comparison.outcomes.append(_paired_outcome(comparison, case))
        comparison.done = len(comparison.outcomes)
        comparison.total = len(cases)
        comparison.tries = 0  # progress: only deliveries that judge nothing count
        comparison.save(update_fields=["outcomes", "done", "total", "tries"])
    return 0


def _paired_outcome(comparison: JudgeComparison, case: dict[str, Any]) -> dict[str, Any]:
    baseline = run_case(
        case, model=comparison.baseline_model, template=comparison.baseline_template
    )
    candidate = run_case(case, model=comparison.model, template=comparison.template)
    return {
        "id": case["id"],
        "dataset": baseline.dataset,
        "category": baseline.category,
        "kind": baseline.kind,
        "expected": baseline.expected,
        "baseline": baseline.got,
        "candidate": candidate.got,
        "baseline_correct": baseline.correct,
        "candidate_correct": candidate.correct,
        "baseline_score": baseline.score,
        "candidate_score": candidate.score,
        "errors": [e for e in (baseline.error, candidate.error) if e],
    }


def _comparison_finished(comparison: JudgeComparison, *, error: str = "") -> None:
    comparison.state = ComparisonState.FAILED if error else ComparisonState.SUCCEEDED
    comparison.error = error
    comparison.finished_at = timezone.now()
    comparison.save(update_fields=["state", "error", "finished_at", "figures"])


def comparison_is_stale(comparison: JudgeComparison, current: tuple[str, str]) -> bool:
    """The comparison was made against a judge that is no longer the current one: its
    figures say nothing about a change from the judge of today."""
    return (comparison.baseline_template, comparison.baseline_model) != tuple(current)


@dataclass(frozen=True)
class DefaultChange:
    """A change of the default judge and what it did to shadow mode: ``shadow_stopped``
    (the candidate in shadow is now the judge), ``shadow_restarted`` (its figures start
    afresh against the new judge), or neither (no shadow was running)."""

    default: JudgeDefault
    shadow_stopped: ShadowJudge | None = None
    shadow_restarted: ShadowJudge | None = None


def _default_refusal(comparison: JudgeComparison, *, note: str, override: bool) -> str | None:
    """Why the comparison's candidate cannot become the judge now, or None."""
    if comparison_is_stale(comparison, current_judge()):
        return (
            f"comparison #{comparison.pk} was made against {comparison.baseline_template} on "
            f"{comparison.baseline_model}, which is no longer the judge: compare again."
        )
    if comparison.done < MIN_COMPARED_CASES:
        return (
            f"comparison #{comparison.pk} judged {comparison.done} cases; a new judge needs "
            f"at least {MIN_COMPARED_CASES} compared cases."
        )
    verdict = (comparison.figures or {}).get("verdict")
    if verdict != BETTER and (len(note.strip()) < MIN_REASON_CHARS or not override):
        return (
            f"the comparison found the candidate {verdict or 'not better'}: making it the "
            f"judge needs a written reason (at least {MIN_REASON_CHARS} characters) and "
            "the second confirmation."
        )
    return None


@transaction.atomic
def judge_default_make(
    *, comparison_id: int, chosen_by: Any, note: str = "", override: bool = False
) -> DefaultChange:
    """Make a finished comparison's candidate the team's judge from now on, recorded
    with who chose it and the comparison. Refused (nothing changes) unless the
    comparison succeeded on at least ``MIN_COMPARED_CASES`` cases against the current
    judge; a candidate it did not find better also needs a written reason (``note``) and
    ``override`` (the second confirmation). A candidate in shadow is stopped when it is
    the new judge, else restarted so that its figures compare it with the new judge."""
    # Row lock: a delivery finishing or failing it meanwhile is seen as it ends.
    comparison = JudgeComparison.objects.select_for_update().filter(pk=comparison_id).first()
    if comparison is None:
        raise StaleAction(f"Comparison #{comparison_id} does not exist.")
    if not comparison.finished:
        raise StaleAction(
            f"Comparison #{comparison.pk} is {comparison.get_state_display().lower()}: only "
            "a finished comparison can make its candidate the default."
        )
    refusal = _default_refusal(comparison, note=note, override=override)
    if refusal:
        raise InvalidInput(refusal[0].upper() + refusal[1:])
    get_template(comparison.template)  # a template file removed since: refused
    default = JudgeDefault.objects.create(
        template=comparison.template,
        model=comparison.model,
        chosen_by=chosen_by if getattr(chosen_by, "is_authenticated", False) else None,
        comparison=comparison,
        note=note,
    )
    return _shadow_after_change(default, chosen_by)


def _shadow_after_change(default: JudgeDefault, chosen_by: Any) -> DefaultChange:
    shadow = ShadowJudge.objects.select_for_update().filter(active=True).first()
    if shadow is None:
        return DefaultChange(default=default)
    stopped = shadow_stop(stopped_by=chosen_by)
    if (shadow.template, shadow.model) == (default.template, default.model):
        return DefaultChange(default=default, shadow_stopped=stopped)
    restarted = shadow_start(template=shadow.template, model=shadow.model, started_by=chosen_by)
    return DefaultChange(default=default, shadow_stopped=stopped, shadow_restarted=restarted)


class ShadowOfCurrentJudge(StaleAction):
    """A shadow of the current judge itself: a conflict with which judge is current (409),
    as another candidate in shadow is."""


def shadow_start(*, template: str, model: str, started_by: Any) -> ShadowJudge:
    """Start ``template`` on ``model`` judging every new attempt in shadow. Refused
    while another candidate is in shadow (stop it first), and for the current judge
    itself (it would only be compared with itself)."""
    get_template(template)
    if active_shadow() is None and (template, model) == current_judge():
        raise ShadowOfCurrentJudge(
            f"{template} on {model} is the current judge: in shadow it would only be compared "
            "with itself. Choose another prompt template or validator model."
        )
    try:
        with transaction.atomic():
            return ShadowJudge.objects.create(
                template=template,
                model=model,
                started_by=started_by if getattr(started_by, "is_authenticated", False) else None,
            )
    except IntegrityError:
        # The partial unique index: another operator's candidate is already in shadow.
        current = active_shadow()
        what = f"{current.template} on {current.model}" if current else "another candidate"
        raise StaleAction(f"{what} is already judging in shadow: stop it first.") from None


@transaction.atomic
def shadow_stop(*, stopped_by: Any) -> ShadowJudge:
    """Stop the candidate in shadow: no verdict made from now on queues a shadow job
    (those already queued still run). Its figures stay on the page."""
    shadow = ShadowJudge.objects.select_for_update().filter(active=True).first()
    if shadow is None:
        raise StaleAction("No candidate is judging in shadow.")
    shadow.active = False
    shadow.stopped_at = timezone.now()
    shadow.stopped_by = stopped_by if getattr(stopped_by, "is_authenticated", False) else None
    shadow.save(update_fields=["active", "stopped_at", "stopped_by"])
    return shadow


def shadow_verdict_run(*, pending_id: int) -> ShadowVerdict | None:
    """Judge one queued shadow verdict's attempt with its candidate and store the
    ``shadow`` snapshot beside the original; a crash records ``failed`` with the reason
    and is not tried again; deliveries that never finish stop after JOB_MAX_TRIES. Moves
    no task, draws no audit, sends no webhook."""
    claimed = ShadowVerdict.objects.filter(
        pk=pending_id, state=ShadowState.QUEUED, tries__lt=settings.JOB_MAX_TRIES
    ).update(tries=F("tries") + 1)
    pending = (
        ShadowVerdict.objects.select_related("shadow", "original__task")
        .filter(pk=pending_id)
        .first()
    )
    if pending is None:
        return None
    if not claimed:
        if pending.state == ShadowState.QUEUED:
            _shadow_failed(
                pending, f"stopped after {pending.tries} tries: the worker never finished it"
            )
        return pending

    def stored(snapshot: ValidationSnapshot) -> None:
        pending.snapshot = snapshot
        pending.state = ShadowState.DONE
        pending.save(update_fields=["snapshot", "state"])

    try:
        shadow_validation(
            original=pending.original,
            template=pending.shadow.template,
            model=pending.shadow.model,
            on_stored=stored,
        )
    except (OperationalError, InterfaceError):
        raise  # the job tries again when the database is back
    except Exception as exc:
        log.exception("shadow verdict %s crashed", pending_id)
        _shadow_failed(pending, f"{type(exc).__name__}: {first_line(exc)}")
    return pending


def _shadow_failed(pending: ShadowVerdict, error: str) -> None:
    pending.state = ShadowState.FAILED
    pending.error = error
    pending.save(update_fields=["state", "error"])
