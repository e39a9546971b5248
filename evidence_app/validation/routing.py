"""Where a verdict routes a task: accepted to the requester, rejected to a
revision or a person, and a person when the two judges disagree on accepted versus not.

Auto-accept at a certified risk: when the judge has an approved threshold
(``evidence_app.autoaccept.gate``), an accepted verdict goes to the
requester only when its score is at or above it, else to a person ("below the certified
threshold"); once the drift rule stopped the judge's auto-accept, every accepted verdict
goes to a person. A judge without an approved threshold keeps the judge's word (its
accepted verdicts go to the requester, the Trust page says they are not certified)
unless the deployment auto-accepts certified judges only (``AUTOACCEPT_UNCERTIFIED=
certified-only``): then a person decides. The gate is the first judge's, whose verdict
the route follows; a second judge only adds caution."""

from __future__ import annotations

from typing import Any

from evidence_app.autoaccept.gate import AutoAcceptGate, below_threshold_reason
from evidence_app.models import ValidationStatus, VerdictRoute
from evidence_app.validation.judge_calls import JudgePair
from evidence_app.validator.schema import ValidationResult
from tasks_app.records import NO_USABLE_ANSWER, Task, TaskStatus


def judges_disagree(first_status: str, second_status: str) -> bool:
    """Two judges disagree when one accepts and the other does not (a second judge that
    failed does not accept)."""
    return (first_status == "accepted") != (second_status == "accepted")


def disagreement_reason(
    first_model: str, first_status: str, second_model: str, second_status: str
) -> str:
    """The reason a disagreement sends a task to a person, naming both verdicts."""
    return (
        f"judges disagree: {first_model} says {first_status}, {second_model} says {second_status}"
    )


def pair_target(
    task: Task,
    pair: JudgePair,
    answer: str,
    *,
    first_model: str,
    gate: AutoAcceptGate | None = None,
) -> tuple[str, dict[str, Any], str]:
    """The V2 target of the first verdict, unless the second judge disagrees on accepted
    versus not: then a person decides, with both verdicts named."""
    second, first = pair.second, pair.first.result
    if (
        second is None
        or pair.second_plan is None
        or not judges_disagree(first.status, second.result.status)
    ):
        return verdict_target(task, first, answer, gate=gate)
    reason = disagreement_reason(
        first_model, first.status, pair.second_plan.model_name, second.result.status
    )
    return TaskStatus.NEEDS_REVIEW, {"validation_outcome": None}, reason


def _answer_is_usable(answer: str, result: ValidationResult) -> bool:
    """A usable answer: non-empty, not the runtime's "could not produce" fallback, and
    not judged a refusal."""
    if not answer.strip() or result.failure_category == "refusal":
        return False
    return answer.strip() != NO_USABLE_ANSWER.strip()


def verdict_target(
    task: Task, result: ValidationResult, answer: str, *, gate: AutoAcceptGate | None = None
) -> tuple[str, dict[str, Any], str]:
    """(to_status, updates, reason) for a verdict on the task's current attempt;
    ``gate`` is the judge's approved auto-accept threshold (None: none approved)."""
    status = ValidationStatus(result.status)
    summary = f"validator: {status}" + (
        f" ({result.failure_category})" if result.failure_category else ""
    )
    if status == ValidationStatus.ACCEPTED:
        held = None if gate is None else below_threshold_reason(summary, result.score, gate)
        if held is not None:
            return TaskStatus.NEEDS_REVIEW, {"validation_outcome": None}, held
        if gate is not None:
            summary += f" (score {result.score:.2f}, at or above the certified threshold)"
        return TaskStatus.AWAITING_FEEDBACK, {"validation_outcome": "accepted"}, summary
    if status == ValidationStatus.REJECTED:
        if task.attempt_count < task.max_attempts:
            return (
                TaskStatus.NEEDS_REVISION,
                {"validation_outcome": None},
                f"{summary}; retrying (attempt {task.attempt_count + 1} of {task.max_attempts})",
            )
        if _answer_is_usable(answer, result):
            return (
                TaskStatus.NEEDS_REVIEW,
                {"validation_outcome": None},
                f"{summary} on the last attempt; a person decides",
            )
        return (
            TaskStatus.FAILED,
            {"validation_outcome": None},
            f"{summary} on the last attempt with no usable answer",
        )
    # insufficient_evidence, validator_error: a person looks; never silently passed.
    reason = summary + (
        f": {result.issues[0]}"
        if status == ValidationStatus.VALIDATOR_ERROR and result.issues
        else ""
    )
    return TaskStatus.NEEDS_REVIEW, {"validation_outcome": None}, reason


def verdict_route(status: str, to_status: str) -> str:
    """Where a verdict sent the task: accepted straight to the requester, rejected back
    for another attempt (or to failed with no usable answer), or to a person."""
    if status == ValidationStatus.ACCEPTED and to_status == TaskStatus.AWAITING_FEEDBACK:
        return VerdictRoute.AUTO_ACCEPTED
    if status == ValidationStatus.REJECTED and to_status in (
        TaskStatus.NEEDS_REVISION,
        TaskStatus.FAILED,
    ):
        return VerdictRoute.AUTO_REJECTED
    return VerdictRoute.TO_PERSON
