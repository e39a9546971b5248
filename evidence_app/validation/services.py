"""Validation and replay (V2, V3, V6, V7, V8, V9, V11).

The validator model is called outside any database transaction (a model call can take
minutes; no row lock is held meanwhile). The result is written in one atomic block:
the ``ValidationSnapshot`` and the task's V2 transition through ``task_transition``,
under the task's row lock, after re-checking that the attempt is still being validated.
A second judge (``second_model_name``) judges the same rendered prompt, also outside the
transaction; its snapshot is stored in the same atomic block, and when the two disagree
on accepted versus not, the task goes to a person.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from evidence_app.models import (
    ReplayRequest,
    ReplayState,
    SnapshotKind,
    ValidationFailure,
    ValidationSnapshot,
    ValidationStatus,
)
from evidence_app.packets.task_packet import TaskEvidencePacket, build_packet
from evidence_app.trust.agreement import judges_disagree
from evidence_app.trust.audits import audit_draw, audit_probability, verdict_route
from evidence_app.validation.claims import disagreement_reason
from evidence_app.validation.current_judge import current_judge, shadow_enqueue
from evidence_app.validator.judging import Judgement, judge_prompt
from evidence_app.validator.prompt import (
    HistoryMessage,
    ValidationPrompt,
    build_prompt,
    format_feedback,
    system_prompt,
)
from evidence_app.validator.schema import ValidationResult, claim_summary
from evidence_app.validator.templates import DEFAULT_TEMPLATE, TemplateVersion, get_template
from project.costs import CURRENCY, CostTotal, estimate_cost
from project.db import MARKER_ID, MARKER_TIME, Prepared, insert_new, release_connection
from project.errors import StaleAction, first_line
from project.llm.registry import resolve_model
from tasks_app.models import (
    NO_USABLE_ANSWER,
    Feedback,
    FeedbackAction,
    Run,
    RunKind,
    Task,
    ValidationPolicy,
)
from tasks_app.workflow.services import (
    NO_SECOND_JUDGE,
    attempt_enqueue,
    job_enqueue,
    new_job_id,
    task_transition,
    validation_enqueue,
)
from tasks_app.workflow.states import TaskStatus
from tasks_app.workflow.validation_claims import (
    ClaimKeeper,
    validation_claim_and_read,
    validation_claim_release,
)

log = logging.getLogger(__name__)

__all__ = [
    "attempt_judge",
    "attempt_judge_pair",
    "replay_validation",
    "second_model_name",
    "shadow_validation",
    "validation_applies",
    "validation_attempt",
    "validation_run",
    "VALIDATE_JOB",
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


@functools.cache
def _prepared_feedback(*, before: bool) -> Prepared:
    """A task's feedback, oldest first, as plain values with the author's user name by
    a join (issue 16: no model instances, compiled once); ``before`` adds a time bound."""
    feedback = Feedback.objects.in_effect().filter(task_id=MARKER_ID)
    markers: dict[str, Any] = {"task_id": MARKER_ID}
    if before:
        feedback = feedback.filter(created_at__lt=MARKER_TIME)
        markers["before"] = MARKER_TIME
    username = f"author__{get_user_model().USERNAME_FIELD}"
    return Prepared(
        feedback.order_by("created_at", "id").values_list(
            "created_at", "action", "comment", username
        ),
        **markers,
    )


def _history(task: Task, *, attempt_index: int, before: datetime | None) -> list[HistoryMessage]:
    """The task's conversation before this attempt's verdict: earlier attempts' answers
    and people's feedback and notes, oldest first."""
    messages: list[HistoryMessage] = []
    # Attempt 1 has no earlier answers (skip the query: one statement less per task).
    runs: Iterable[Run] = (
        ()
        if attempt_index <= 1
        else Run.objects.filter(
            task=task, attempt_index__lt=attempt_index, kind__in=[RunKind.MAIN, RunKind.SYNTHESIS]
        ).order_by("attempt_index", "graph_index", "id")
    )
    latest_answer: dict[int, Run] = {}
    for run in runs:
        if run.output_text:
            latest_answer[run.attempt_index] = run
    for index, run in sorted(latest_answer.items()):
        messages.append(
            HistoryMessage(
                at=run.finished_at or run.started_at,
                role=f"agent (answer of attempt {index})",
                text=run.output_text,
            )
        )
    labels = dict(FeedbackAction.choices)
    rows = (
        _prepared_feedback(before=False).rows(task_id=task.pk)
        if before is None
        else _prepared_feedback(before=True).rows(task_id=task.pk, before=before)
    )
    for at, action, comment, who in rows:
        text = comment or str(labels.get(action, action))
        messages.append(HistoryMessage(at=at, role=f"{who or 'someone'} ({action})", text=text))
    messages.sort(key=lambda m: m.at)
    return messages


def _previous_feedback(task: Task, *, attempt_index: int) -> list[str]:
    if attempt_index <= 1:
        return []  # no earlier verdicts
    earlier = (
        ValidationSnapshot.objects.originals()
        .filter(task=task, attempt_index__lt=attempt_index)
        .order_by("attempt_index", "created_at", "id")
        .only("attempt_index", "result", "status")
    )
    return [
        format_feedback(s.attempt_index, {"status": s.status, **(s.result or {})}) for s in earlier
    ]


@dataclass(frozen=True)
class _Plan:
    packet: TaskEvidencePacket
    answer: str
    template: TemplateVersion
    model_name: str


def _judge_plan(
    packet: TaskEvidencePacket, answer: str, *, template: str | None, model: str | None
) -> _Plan:
    """The plan of a judgement by ``template`` and ``model``, each defaulting to the
    team's current judge (read once)."""
    if not template or not model:
        current_template, current_model = current_judge()
        template, model = template or current_template, model or current_model
    return _Plan(packet=packet, answer=answer, template=get_template(template), model_name=model)


def _prompt(plan: _Plan, *, task: Task, history_before: datetime | None) -> ValidationPrompt:
    return build_prompt(
        plan.packet,
        template=plan.template,
        answer=plan.answer,
        history=_history(task, attempt_index=plan.packet.attempt_index, before=history_before),
        previous_feedback=_previous_feedback(task, attempt_index=plan.packet.attempt_index),
    )


def _judge(plan: _Plan, *, task: Task, history_before: datetime | None) -> Judgement:
    return _judge_prompt(_prompt(plan, task=task, history_before=history_before), plan, task=task)


def _judge_prompt(prompt: ValidationPrompt, plan: _Plan, *, task: Task) -> Judgement:
    """Judge an already rendered prompt with ``plan``'s model: both judges of a pair see
    the same system prompt and input."""
    try:
        model = resolve_model(plan.model_name)
    except Exception as exc:  # ModelConfigurationError or an import problem: V8
        reason = f"The validator model '{plan.model_name}' cannot be used: {exc}"
        return Judgement(
            result=ValidationResult.validator_error(reason),
            system_prompt=prompt.system,
            rendered_input=prompt.user,
            error=reason,
        )
    release_connection()  # pooled: nobody holds a connection while the validator thinks
    try:
        return judge_prompt(
            prompt,
            model=model,
            model_name=plan.model_name,
            retries=settings.VALIDATOR_SCHEMA_RETRIES,
        )
    except Exception as exc:  # never lose the attempt over a validator bug (V8)
        log.exception("validator %s crashed on task %s", plan.model_name, task.pk)
        reason = f"The validator failed: {type(exc).__name__}: {exc}"
        return Judgement(
            result=ValidationResult.validator_error(reason),
            system_prompt=prompt.system,
            rendered_input=prompt.user,
            error=reason,
        )


def second_model_name(task: Task) -> str:
    """The second judge's model for ``task``: its own ``second_model``, else
    VALIDATOR_SECOND_MODEL; "" for none (a task's "none" turns the setting off)."""
    own = (task.second_model or "").strip()
    if own.lower() == NO_SECOND_JUDGE:
        return ""
    return own or settings.VALIDATOR_SECOND_MODEL.strip()


@dataclass(frozen=True)
class _Pair:
    """The first judge's verdict and, when a second judge is configured, its own on the
    same prompt (None: no second judge)."""

    first: Judgement
    second: Judgement | None = None
    second_plan: _Plan | None = None


def _judge_pair(plan: _Plan, *, task: Task, second_model: str) -> _Pair:
    """Judge once per configured model on one rendered prompt. The calls run one after
    the other, outside any transaction: each releases the database connection first."""
    prompt = _prompt(plan, task=task, history_before=None)
    first = _judge_prompt(prompt, plan, task=task)
    if not second_model:
        return _Pair(first)
    second_plan = replace(plan, model_name=second_model)
    return _Pair(first, _judge_prompt(prompt, second_plan, task=task), second_plan)


def _pair_target(
    task: Task, pair: _Pair, answer: str, *, first_model: str
) -> tuple[str, dict[str, Any], str]:
    """The V2 target of the first verdict, unless the second judge disagrees on accepted
    versus not: then a person decides, with both verdicts named."""
    second, first = pair.second, pair.first.result
    if (
        second is None
        or pair.second_plan is None
        or not judges_disagree(first.status, second.result.status)
    ):
        return _v2_target(task, first, answer)
    reason = disagreement_reason(
        first_model, first.status, pair.second_plan.model_name, second.result.status
    )
    return TaskStatus.NEEDS_REVIEW, {"validation_outcome": None}, reason


def _snapshot(
    *,
    task: Task,
    plan: _Plan,
    judgement: Judgement,
    kind: str = SnapshotKind.VALIDATION,
    replay_of: ValidationSnapshot | None = None,
    requested_by: Any = None,
    route: str = "",
    companion_of: ValidationSnapshot | None = None,
) -> ValidationSnapshot:
    packet = plan.packet
    result = judgement.result
    store = settings.VALIDATION_STORE_PROMPT
    result_json = result.model_dump(mode="json")
    snapshot = ValidationSnapshot(
        task=task,
        attempt_index=packet.attempt_index,
        kind=kind,
        replay_of=replay_of,
        requested_by=requested_by if getattr(requested_by, "is_authenticated", False) else None,
        status=result.status,
        score=result.score,
        failure_category=result.failure_category,
        result=result_json,
        model_status=result.model_status or result.status,
        claim_summary=claim_summary(result_json),
        evidence_run_ids=[run.run_id for run in packet.all_runs],
        session_ids=[run.session_id for run in packet.all_runs],
        tool_result_count=packet.tool_result_count,
        evidence_chars=packet.evidence_chars,
        raw_responses=judgement.raw_responses,
        system_prompt=judgement.system_prompt if store else "",
        rendered_input=judgement.rendered_input if store else "",
        rendered_input_chars=len(judgement.rendered_input),
        prompt_stored=store,
        template_name=plan.template.name,
        template_version=plan.template.version,
        model_name=plan.model_name,
        latency_ms=judgement.latency_ms,
        input_tokens=judgement.input_tokens,
        output_tokens=judgement.output_tokens,
        request_count=judgement.request_count,
        cost=judgement.cost.value,
        cost_currency=CURRENCY if judgement.cost.known else "",
        schema_retry_count=judgement.schema_retry_count,
        schema_errors=judgement.schema_errors,
        error=judgement.error,
        chunk_verdicts=judgement.chunk_verdicts,
        route=route,
        audit_probability=audit_probability(task, route) if route else None,
        companion_of=companion_of,
    )
    insert_new(snapshot)
    if kind == SnapshotKind.VALIDATION:
        # In the verdict's transaction: a candidate in shadow judges it too, later.
        shadow_enqueue(snapshot)
    return snapshot


def _answer_is_usable(answer: str, result: ValidationResult) -> bool:
    """A usable answer: non-empty, not the runtime's "could not produce" fallback, and
    not judged a refusal."""
    if not answer.strip() or result.failure_category == "refusal":
        return False
    return answer.strip() != NO_USABLE_ANSWER.strip()


def _v2_target(
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


def _existing(task_id: int, attempt_index: int) -> ValidationSnapshot | None:
    return (
        ValidationSnapshot.objects.originals()
        .filter(task_id=task_id, attempt_index=attempt_index)
        .order_by("-created_at", "-id")
        .first()
    )


# Result words of the validation job besides the verdict (issue 17).
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
    ``duplicate`` and logs one INFO line, never the verdict of the first one (issue 17)."""
    claimed = validation_claim_and_read(task_id=task_id, attempt_index=attempt_index)
    if claimed is not None:
        task, stamp = claimed
        try:
            with ClaimKeeper(task_id=task_id, attempt_index=attempt_index, stamp=stamp):
                return _validate_claimed(task, attempt_index)
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
        task_id=task_id,
        to_status=TaskStatus.NEEDS_REVIEW,
        actor_kind="system",
        reason=(
            f"the validation failed {tries} times in a row and was stopped; a person "
            f"decides. Last error: {error}"
        ),
        expected_from=TaskStatus.VALIDATING,
        expected_attempt=attempt_index,
    )
    return ValidationOutcome(GAVE_UP)


def _validate_claimed(task: Task, attempt_index: int) -> ValidationOutcome:

    task_id = task.pk
    if not validation_applies(task):
        with transaction.atomic():
            task_transition(
                task_id=task_id,
                to_status=TaskStatus.AWAITING_FEEDBACK,
                actor_kind="validator",
                reason=f"validation skipped (policy '{task.validation_policy}')",
                expected_from=TaskStatus.VALIDATING,
                updates={"validation_outcome": None},
            )
        return ValidationOutcome(NO_VALIDATION)

    packet = build_packet(task, attempt_index)
    answer = packet.final_output or task.final_answer
    if not answer.strip():
        # V6: nothing to validate, no model call; the attempt has no usable answer.
        with transaction.atomic():
            task_transition(
                task_id=task_id,
                to_status=TaskStatus.FAILED,
                actor_kind="validator",
                reason="empty answer: no usable answer, validation skipped",
                expected_from=TaskStatus.VALIDATING,
            )
        return ValidationOutcome(NO_VALIDATION)

    plan = _judge_plan(packet, answer, template=None, model=None)
    pair = _judge_pair(plan, task=task, second_model=second_model_name(task))
    judgement = pair.first

    # One transaction (task_transition's): row lock, then re-check (still validating this
    # attempt): a second delivery that judged in parallel, or an abandon meanwhile, finds
    # the task moved on and writes nothing. The snapshots commit with the transition.
    to_status, updates, reason = _pair_target(task, pair, answer, first_model=plan.model_name)
    if to_status == TaskStatus.NEEDS_REVISION:
        updates["job_id"] = new_job_id()
    written: list[ValidationSnapshot] = []

    route = verdict_route(judgement.result.status, to_status)

    def record(locked: Task) -> None:
        snapshot = _snapshot(task=locked, plan=plan, judgement=judgement, route=route)
        written.append(snapshot)
        if pair.second is not None and pair.second_plan is not None:
            _snapshot(
                task=locked,
                plan=pair.second_plan,
                judgement=pair.second,
                kind=SnapshotKind.SECOND,
                companion_of=snapshot,
            )
        audit_draw(snapshot)
        if to_status == TaskStatus.NEEDS_REVISION:
            # The retry prompt reads this snapshot's result (issues, category, revision).
            attempt_enqueue(task_id, job_id=updates["job_id"])

    try:
        task_transition(
            task_id=task_id,
            to_status=to_status,
            actor_kind="validator",
            reason=reason,
            expected_from=TaskStatus.VALIDATING,
            expected_attempt=attempt_index,
            updates=updates,
            on_applied=record,
        )
    except StaleAction as exc:
        # Judged in parallel with another delivery, or abandoned meanwhile: nothing
        # stored; the model call was spent, the verdict is the other one's.
        log.info("task %s attempt %s: %s: %s", task_id, attempt_index, DUPLICATE, exc)
        return ValidationOutcome(DUPLICATE, _existing(task_id, attempt_index))
    snapshot = written[0]
    return ValidationOutcome(snapshot.status, snapshot)


def attempt_judge(
    *, task: Task, attempt_index: int, template: str | None = None, model: str | None = None
) -> Judgement:
    """Judge an attempt exactly as ``validation_run`` would (prompt, model, citation
    check, reconciliation) but store nothing and move nothing: for ``judge_bench`` and
    the judge gate. ``template`` and ``model`` default to the current judge."""
    packet = build_packet(task, attempt_index)
    plan = _judge_plan(
        packet, packet.final_output or task.final_answer, template=template, model=model
    )
    return _judge(plan, task=task, history_before=None)


def attempt_judge_pair(
    *,
    task: Task,
    attempt_index: int,
    second_model: str,
    template: str | None = None,
    model: str | None = None,
) -> tuple[Judgement, Judgement]:
    """``attempt_judge`` with a second judge on the same rendered prompt, as
    ``validation_run`` would judge it; stores nothing: for ``judge_bench``."""
    if not second_model.strip():
        raise ValueError("attempt_judge_pair needs a second model")
    packet = build_packet(task, attempt_index)
    plan = _judge_plan(
        packet, packet.final_output or task.final_answer, template=template, model=model
    )
    pair = _judge_pair(plan, task=task, second_model=second_model)
    assert pair.second is not None  # a second model was named
    return pair.first, pair.second


def replay_validation(
    *,
    snapshot: ValidationSnapshot,
    template: str | None = None,
    model: str | None = None,
    requested_by: Any = None,
) -> ValidationSnapshot:
    """Re-run the validator on the stored packet of ``snapshot``'s attempt with another
    template and/or model (V9). Stores a ``replay`` snapshot linked to the original and
    never changes the task."""
    original = snapshot.replay_of or snapshot
    plan, judgement = _judge_again(
        original,
        template=template or original.template_name or DEFAULT_TEMPLATE,
        model=model or original.model_name or settings.VALIDATOR_MODEL,
    )
    return _snapshot(
        task=original.task,
        plan=plan,
        judgement=judgement,
        kind=SnapshotKind.REPLAY,
        replay_of=original,
        requested_by=requested_by,
    )


def _judge_again(
    original: ValidationSnapshot, *, template: str, model: str
) -> tuple[_Plan, Judgement]:
    """Judge the stored attempt of ``original`` again with ``template`` and ``model``, on
    the history the original saw (nothing said after it was made)."""
    task = original.task
    packet = build_packet(task, original.attempt_index)
    answer = packet.final_output or (
        task.final_answer if original.attempt_index == task.attempt_count else ""
    )
    plan = _Plan(packet=packet, answer=answer, template=get_template(template), model_name=model)
    if not answer.strip():
        reason = "The stored attempt has no answer to validate."
        judgement = Judgement(
            result=ValidationResult.validator_error(reason),
            system_prompt="",
            rendered_input="",
            error=reason,
        )
        return plan, judgement
    return plan, _judge(plan, task=task, history_before=original.created_at)


def shadow_validation(
    *,
    original: ValidationSnapshot,
    template: str,
    model: str,
    on_stored: Callable[[ValidationSnapshot], None] | None = None,
) -> ValidationSnapshot:
    """A candidate's verdict on ``original``'s attempt, stored as a ``shadow`` snapshot
    beside it (``companion_of``), with ``on_stored`` in the same transaction. Like a
    replay it never changes the task: no transition, no event, no audit draw, no
    webhook."""
    plan, judgement = _judge_again(original, template=template, model=model)
    with transaction.atomic():
        snapshot = _snapshot(
            task=original.task,
            plan=plan,
            judgement=judgement,
            kind=SnapshotKind.SHADOW,
            companion_of=original,
        )
        if on_stored is not None:
            on_stored(snapshot)
    return snapshot


# The replay job's name (evidence_app.jobs registers it under this name).
REPLAY_JOB = "evidence_app.replay_validation"


def replay_request(
    *,
    snapshot: ValidationSnapshot,
    template: str | None = None,
    model: str | None = None,
    requested_by: Any = None,
) -> ReplayRequest:
    """Record a replay of ``snapshot``'s original validation and queue its job through
    the outbox, both in the caller's transaction (V9): the request's ``state`` says
    where it stands from then on."""

    request = ReplayRequest.objects.create(
        original_id=snapshot.replay_of_id or snapshot.pk,
        template=template or "",
        model=model or "",
        requested_by=requested_by if getattr(requested_by, "is_authenticated", False) else None,
    )
    job_enqueue(REPLAY_JOB, (request.pk,), task_ref=snapshot.task_id)
    return request


def replay_request_run(*, request_id: int) -> ReplayRequest | None:
    """Run a queued replay request and record how it ended: ``succeeded`` with its
    replay snapshot, or ``failed`` with the reason. Each delivery counts as a try; a
    request whose deliveries never finished (the worker stopped each time) is failed
    after JOB_MAX_TRIES. A delivery of a finished request does nothing."""
    limit = settings.JOB_MAX_TRIES
    # Conditional claim: a finished request is never run again by a late delivery.
    claimed = ReplayRequest.objects.filter(
        pk=request_id,
        state__in=[ReplayState.QUEUED, ReplayState.RUNNING],
        tries__lt=limit,
    ).update(state=ReplayState.RUNNING, tries=F("tries") + 1)
    request = (
        ReplayRequest.objects.select_related("original__task", "requested_by")
        .filter(pk=request_id)
        .first()
    )
    if request is None:
        return None
    if not claimed:
        if request.pending:
            _replay_finished(
                request,
                error=f"stopped after {request.tries} tries: the worker never finished it",
            )
        return request
    try:
        replay = replay_validation(
            snapshot=request.original,
            template=request.template or None,
            model=request.model or None,
            requested_by=request.requested_by,
        )
    except (OperationalError, InterfaceError):
        raise  # the job tries again when the database is back
    except Exception as exc:
        log.exception("replay request %s of validation %s crashed", request_id, request.original_id)
        _replay_finished(request, error=f"{type(exc).__name__}: {first_line(exc)}")
        return request
    _replay_finished(request, result=replay)
    return request


def _replay_finished(
    request: ReplayRequest, *, result: ValidationSnapshot | None = None, error: str = ""
) -> None:
    request.state = ReplayState.FAILED if result is None else ReplayState.SUCCEEDED
    request.result = result
    request.error = error
    request.finished_at = timezone.now()
    request.save(update_fields=["state", "result", "error", "finished_at"])


# --- Bulk replay (V9) ---------------------------------------------------------------------


@dataclass(frozen=True)
class ReplayEstimate:
    tasks: int
    input_chars: int
    # Estimated input tokens x the chosen model's input price (issue 18); output is not
    # known before the replay runs. Unknown for a model genai-prices does not price.
    cost: CostTotal = field(default_factory=CostTotal)

    @property
    def input_tokens(self) -> int:
        """Rough token estimate: four characters per token."""
        return self.input_chars // 4


def replay_candidates(
    *,
    task_ids: list[int] | None = None,
    task_statuses: list[str] | None = None,
    validator_statuses: list[str] | None = None,
    since: datetime | None = None,
) -> list[ValidationSnapshot]:
    """The latest original validation of every task matching the filters, newest first."""
    snapshots = ValidationSnapshot.objects.originals().without_bodies().select_related("task")
    if task_ids:
        snapshots = snapshots.filter(task_id__in=task_ids)
    if task_statuses:
        snapshots = snapshots.filter(task__status__in=task_statuses)
    if since is not None:
        snapshots = snapshots.filter(created_at__gte=since)
    latest: dict[int, ValidationSnapshot] = {}
    for snapshot in snapshots.order_by("task_id", "-created_at", "-id"):
        latest.setdefault(snapshot.task_id, snapshot)
    chosen = list(latest.values())
    if validator_statuses:
        chosen = [s for s in chosen if s.status in validator_statuses]
    chosen.sort(key=lambda s: (s.created_at, s.pk), reverse=True)
    return chosen


def replay_estimate(
    snapshots: list[ValidationSnapshot], *, template: str | None = None, model: str | None = None
) -> ReplayEstimate:
    """Input size of replaying these snapshots: the size of the input each one sent
    (recorded even when the input itself is not stored) plus the system prompt, and its
    estimated input cost on ``model`` (else each snapshot's own model)."""

    chars = 0
    cost = CostTotal()
    for snapshot in snapshots:
        name = template or snapshot.template_name or DEFAULT_TEMPLATE
        snapshot_chars = snapshot.rendered_input_chars + len(system_prompt(get_template(name)))
        chars += snapshot_chars
        cost.add(
            estimate_cost(
                model or snapshot.model_name or settings.VALIDATOR_MODEL,
                input_tokens=snapshot_chars // 4,
            )
        )
    return ReplayEstimate(tasks=len({s.task_id for s in snapshots}), input_chars=chars, cost=cost)
