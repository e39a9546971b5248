"""Validating an attempt: the job's entry point.

The validator model is called outside any database transaction (a model call can take
minutes; no row lock is held meanwhile; ``judge_calls``). The result is written in one
atomic block: the task's V2 transition through ``task_transition`` (its target from
``routing``), under the task's row lock, after re-checking that the attempt is still being
validated, and with it ``_Verdict.store_and_draw_audit``: the ``ValidationSnapshot``
(and the second judge's, when one is configured) and the audit draw (``trust.audits``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction

from evidence_app.autoaccept.gate import approved_gate
from evidence_app.autoaccept.selectors import JudgeKey
from evidence_app.models import (
    SnapshotKind,
    TaskAuditSettings,
    ValidationFailure,
    ValidationSnapshot,
)
from evidence_app.packets.task_packet import build_packet
from evidence_app.trust.audits import audit_draw
from evidence_app.validation.current_judge import current_judge_of, current_judge_sql
from evidence_app.validation.judge_calls import (
    JudgePair,
    JudgePlan,
    judge_pair,
    judge_plan,
    second_model_name,
)
from evidence_app.validation.routing import pair_target, verdict_route
from evidence_app.validation.snapshots import snapshot_store
from evidence_app.validation.task_settings import settings_of, settings_read, settings_sql
from project.errors import StaleAction, first_line
from tasks_app.actions import (
    ClaimKeeper,
    Transition,
    attempt_enqueue,
    new_job_id,
    task_transition,
    validation_claim_and_read,
    validation_claim_release,
    validation_enqueue,
)
from tasks_app.records import Task, TaskStatus, ValidationPolicy

log = logging.getLogger(__name__)

__all__ = [
    "VALIDATE_JOB",
    "ValidationOutcome",
    "validation_applies",
    "validation_attempt",
    "validation_run",
]

# The validation job's name (evidence_app.jobs registers it under this name; the verdicts
# handed to tasks_app queue it by name).
VALIDATE_JOB = "evidence_app.validate_attempt"


def validation_applies(task: Task) -> bool:
    """V6 policy: ``always``; ``never``; ``keywords``: only when the request mentions one
    of the task's keywords (case-insensitive)."""
    if task.validation_policy == ValidationPolicy.NEVER:
        return False
    if task.validation_policy == ValidationPolicy.KEYWORDS:
        request = task.request.lower()
        return any(
            str(k).strip().lower() in request
            for k in task.validation_keywords or []
            if str(k).strip()
        )
    return True


def _existing(task_id: int, attempt_index: int) -> ValidationSnapshot | None:
    return (
        ValidationSnapshot.objects.originals()
        .filter(task_id=task_id, attempt_index=attempt_index)
        .order_by("-created_at", "-id")
        .first()
    )


# Result words of the validation job besides the verdict.
NO_VALIDATION = "no validation"  # the policy or an empty answer skips the validator
DUPLICATE = "duplicate"  # validated already, being validated by another job, or moved on
CRASHED = "crashed"  # the job crashed before a verdict; sent again
GAVE_UP = "gave_up"  # crashed JOB_MAX_TRIES times: the task went to a person with the error


@dataclass(frozen=True)
class ValidationOutcome:
    """What one validation job did: the verdict's status, ``no validation`` or
    ``duplicate``, and the attempt's snapshot (stored now, or earlier by another job)."""

    result: str
    snapshot: ValidationSnapshot | None = None


def validation_run(*, task_id: int, attempt_index: int) -> ValidationSnapshot | None:
    """Validate the answer of ``attempt_index`` per the task's policy, store the snapshot
    and apply the V2 transition. Idempotent: for a task no longer ``validating`` this
    attempt (a redelivered job) it changes nothing and returns the stored snapshot, if any.
    Returns None when no validation ran (policy ``never``/no keyword, empty answer).
    """
    return validation_attempt(task_id=task_id, attempt_index=attempt_index).snapshot


def validation_attempt(*, task_id: int, attempt_index: int) -> ValidationOutcome:
    """``validation_run`` saying what happened, for the job: a duplicate delivery is
    ``duplicate`` and logs one INFO line, never the verdict of the first one."""
    # The current judge and the task's own settings are read with the claim (on
    # PostgreSQL), where each was read next.
    claimed = validation_claim_and_read(
        task_id=task_id, attempt_index=attempt_index, also=_claim_reads(task_id)
    )
    if claimed is not None:
        task, stamp, also = claimed
        try:
            with ClaimKeeper(task_id=task_id, attempt_index=attempt_index, stamp=stamp):
                judge, own = (
                    (None, settings_of(task))  # not read with the claim (SQLite): one query
                    if also is None
                    else (current_judge_of(also[0]), settings_read(task, also[1]))
                )
                return _validate_claimed(task, attempt_index, judge, own)
        except (OperationalError, InterfaceError):
            # The database went away: the job says db_lost and the reaper re-sends it.
            validation_claim_release(task_id, attempt_index)
            raise
        except Exception as exc:
            # Crashed before the verdict (not a validator error, which is a verdict: V8):
            # release the claim, then try again or, after JOB_MAX_TRIES, hand it to a person.
            log.exception("task %s attempt %s: the validation crashed", task_id, attempt_index)
            validation_claim_release(task_id, attempt_index)
            return _validation_crashed(task_id, attempt_index, exc)
        except BaseException:
            validation_claim_release(task_id, attempt_index)
            raise
    # Not claimed: say why (a duplicate, or the task moved on); only this path reads.
    current = Task.objects.filter(pk=task_id).first()
    if current is None:
        log.info("task %s: %s: the task no longer exists", task_id, DUPLICATE)
        return ValidationOutcome(DUPLICATE)
    if current.status != TaskStatus.VALIDATING or current.attempt_count != attempt_index:
        log.info(
            "task %s attempt %s: %s: the task is '%s' at attempt %s; nothing to validate",
            task_id,
            attempt_index,
            DUPLICATE,
            current.status,
            current.attempt_count,
        )
        return ValidationOutcome(DUPLICATE, _existing(task_id, attempt_index))
    log.info(
        "task %s attempt %s: %s: another job is validating this attempt",
        task_id,
        attempt_index,
        DUPLICATE,
    )
    return ValidationOutcome(DUPLICATE, _existing(task_id, attempt_index))


@transaction.atomic
def _validation_crashed(task_id: int, attempt_index: int, exc: Exception) -> ValidationOutcome:
    """Record the crash; send the job again a little later, or, when this attempt's
    validation has crashed JOB_MAX_TRIES times (a poison job), move the task to a person
    with the error: it never stays ``validating`` with nobody told."""

    error = f"{type(exc).__name__}: {first_line(exc)}"
    current = Task.objects.filter(
        pk=task_id, status=TaskStatus.VALIDATING, attempt_count=attempt_index
    )
    if not current.exists():
        return ValidationOutcome(DUPLICATE)
    ValidationFailure.objects.create(task_id=task_id, attempt_index=attempt_index, error=error)
    tries = ValidationFailure.objects.filter(task_id=task_id, attempt_index=attempt_index).count()
    if tries < settings.JOB_MAX_TRIES:
        # Without a job id, job_send_on_commit records the new one on the task itself.
        validation_enqueue(task_id, attempt_index, countdown=5 * tries)
        return ValidationOutcome(CRASHED)
    task_transition(
        Transition(
            task_id=task_id,
            to_status=TaskStatus.NEEDS_REVIEW,
            actor_kind="system",
            reason=f"the validation failed {tries} times in a row and was stopped; a person "
            f"decides. Last error: {error}",
            expected_from=TaskStatus.VALIDATING,
            expected_attempt=attempt_index,
        )
    )
    return ValidationOutcome(GAVE_UP)


def _claim_reads(task_id: int) -> tuple[str, list[Any]]:
    """What the validation claim reads besides the task (on PostgreSQL, in its own
    statement): a JSON pair of the current judge (``current_judge_sql``) and the task's
    own settings (``settings_sql``)."""
    judge_sql, judge_params = current_judge_sql()
    own_sql, own_params = settings_sql(task_id)
    return f"json_build_array({judge_sql}, {own_sql})", [*judge_params, *own_params]


@dataclass
class _Verdict:
    """A verdict judged outside the transaction, stored under the task's row lock."""

    plan: JudgePlan
    pair: JudgePair
    route: str
    own: TaskAuditSettings
    retry_job_id: str = ""
    stored: list[ValidationSnapshot] = field(default_factory=list)

    def store_and_draw_audit(self, locked: Task) -> None:
        """Store the verdict (and the second judge's beside it), draw its audit, and
        queue the next attempt when the verdict asks for a revision."""
        snapshot = snapshot_store(
            task=locked, plan=self.plan, judgement=self.pair.first, route=self.route, own=self.own
        )
        self.stored.append(snapshot)
        if self.pair.second is not None and self.pair.second_plan is not None:
            snapshot_store(
                task=locked,
                plan=self.pair.second_plan,
                judgement=self.pair.second,
                kind=SnapshotKind.SECOND,
                companion_of=snapshot,
            )
        audit_draw(snapshot)
        if self.retry_job_id:
            # The retry prompt reads this snapshot's result (issues, category, revision).
            attempt_enqueue(locked.pk, job_id=self.retry_job_id)


def _validation_skipped(
    task_id: int, *, to_status: str, reason: str, updates: dict[str, Any] | None = None
) -> ValidationOutcome:
    """Move the task on without a verdict (the policy, or an empty answer: V6)."""
    _validator_transition(task_id, to_status=to_status, reason=reason, updates=updates)
    return ValidationOutcome(NO_VALIDATION)


def _validator_transition(
    task_id: int,
    *,
    to_status: str,
    reason: str,
    updates: dict[str, Any] | None,
    attempt_index: int | None = None,
    on_applied: Callable[[Task], object] | None = None,
) -> None:
    """The validator moves a task it is validating on (``attempt_index``'s, when given);
    ``on_applied`` stores the verdict in the transition's transaction."""
    task_transition(
        Transition(
            task_id=task_id,
            to_status=to_status,
            actor_kind="validator",
            reason=reason,
            expected_from=TaskStatus.VALIDATING,
            expected_attempt=attempt_index,
            updates=updates,
        ),
        on_applied=on_applied,
    )


def _validate_claimed(
    task: Task, attempt_index: int, judge: tuple[str, str] | None, own: TaskAuditSettings
) -> ValidationOutcome:
    task_id = task.pk
    if not validation_applies(task):
        return _validation_skipped(
            task_id,
            to_status=TaskStatus.AWAITING_FEEDBACK,
            reason=f"validation skipped (policy '{task.validation_policy}')",
            updates={"validation_outcome": None},
        )
    packet = build_packet(task, attempt_index)
    answer = packet.final_output or task.final_answer
    if not answer.strip():
        # V6: nothing to validate, no model call; the attempt has no usable answer.
        return _validation_skipped(
            task_id,
            to_status=TaskStatus.FAILED,
            reason="empty answer: no usable answer, validation skipped",
        )
    template, model = judge if judge is not None else (None, None)
    plan = judge_plan(packet, answer, template=template, model=model)
    second_model = second_model_name(own)
    pair = judge_pair(plan, task=task, second_model=second_model)
    # The first judge's gate: its verdict is the one the route follows. The task's own
    # second judge never picks another judge's threshold (nor none): it only adds caution.
    gate = approved_gate(JudgeKey(plan.template.version, plan.model_name))

    # One transaction (task_transition's): row lock, then re-check (still validating this
    # attempt): a second delivery that judged in parallel, or an abandon meanwhile, finds
    # the task moved on and writes nothing. The snapshots commit with the transition.
    to_status, updates, reason = pair_target(
        task, pair, answer, first_model=plan.model_name, gate=gate
    )
    if to_status == TaskStatus.NEEDS_REVISION:
        updates["job_id"] = new_job_id()
    verdict = _Verdict(
        plan=plan,
        pair=pair,
        route=verdict_route(pair.first.result.status, to_status),
        own=own,
        retry_job_id=updates.get("job_id", ""),
    )
    try:
        _validator_transition(
            task_id,
            to_status=to_status,
            reason=reason,
            updates=updates,
            attempt_index=attempt_index,
            on_applied=verdict.store_and_draw_audit,
        )
    except StaleAction as exc:
        # Judged in parallel with another delivery, or abandoned meanwhile: nothing
        # stored; the model call was spent, the verdict is the other one's.
        log.info("task %s attempt %s: %s: %s", task_id, attempt_index, DUPLICATE, exc)
        return ValidationOutcome(DUPLICATE, _existing(task_id, attempt_index))
    snapshot = verdict.stored[0]
    return ValidationOutcome(snapshot.status, snapshot)


# --- Bulk replay ---------------------------------------------------------------------
