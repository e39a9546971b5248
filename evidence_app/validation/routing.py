"""Where a verdict routes a task (V2, V3, V8): accepted to the requester, rejected to a
revision or a person, and a person when the two judges disagree on accepted versus not."""

from __future__ import annotations

from typing import Any

from evidence_app.models import ValidationStatus
from evidence_app.trust.agreement import judges_disagree
from evidence_app.validation.claims import disagreement_reason
from evidence_app.validation.judge_calls import JudgePair
from evidence_app.validator.schema import ValidationResult
from tasks_app.records import NO_USABLE_ANSWER, Task, TaskStatus


def pair_target(
    task: Task, pair: JudgePair, answer: str, *, first_model: str
) -> tuple[str, dict[str, Any], str]:
    """The V2 target of the first verdict, unless the second judge disagrees on accepted
    versus not: then a person decides, with both verdicts named."""
    second, first = pair.second, pair.first.result
    if (
        second is None
        or pair.second_plan is None
        or not judges_disagree(first.status, second.result.status)
    ):
        return verdict_target(task, first, answer)
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
    task: Task, result: ValidationResult, answer: str
) -> tuple[str, dict[str, Any], str]:
    """(to_status, updates, reason) for a verdict on the task's current attempt (V2, V3)."""
    status = ValidationStatus(result.status)
    summary = f"validator: {status}" + (
        f" ({result.failure_category})" if result.failure_category else ""
    )
    if status == ValidationStatus.ACCEPTED:
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
    # insufficient_evidence, validator_error: a person looks; never silently passed (V8).
    reason = summary + (
        f": {result.issues[0]}"
        if status == ValidationStatus.VALIDATOR_ERROR and result.issues
        else ""
    )
    return TaskStatus.NEEDS_REVIEW, {"validation_outcome": None}, reason
