"""Running one attempt of a task.

``attempt_run`` is what the Celery job calls:

1. ``attempt_claim``: one conditional transition ``open``/``needs_revision`` →
   ``running`` that also writes a new lease token, the heartbeat and ``attempt_count+1``.
   Two deliveries of the same job (redelivery, two workers) race here and one loses.
2. the agent (single or team) runs; every write is fenced by the token and each step
   refreshes the heartbeat (a background thread does too, for long model calls);
3. ``attempt_finish``: a usable answer → ``validating`` and, after commit, the
   validation job; none → ``failed``. The transition is fenced by the token, so a worker
   whose lease was taken over changes nothing.

``attempt_reap`` is the periodic recovery of attempts whose worker died.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from project.db import Keeper, close_quietly
from project.dbturn import db_turn
from project.errors import DomainError, StaleAction
from project.errors import first_line as _first_line
from project.logs import extended as log_context
from tasks_app.runtime import runs
from tasks_app.runtime.agents import prompts
from tasks_app.runtime.agents.loop import AgentLoop, AgentResult
from tasks_app.runtime.agents.plans import SinglePlan, TeamPlan, parse_plan
from tasks_app.runtime.agents.team import run_team
from tasks_app.runtime.agents.tools import DEFAULT_TOOLS
from tasks_app.runtime.models import (
    RUN_TAKEN_OVER,
    Run,
    RunStatus,
)
from tasks_app.workflow import services, transitions
from tasks_app.workflow.fence import Fence, LeaseLost
from tasks_app.workflow.models import Feedback, FeedbackAction, Task, TaskAgent
from tasks_app.workflow.states import RUNNABLE_STATUSES, TaskStatus
from tasks_app.workflow.verdicts import validator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    task_id: int
    attempt_index: int
    lease_token: str
    task: Task | None = field(default=None, compare=False, repr=False)
    # Claimed by taking over an attempt whose lease expired.
    taken_over: bool = False

    @property
    def fence(self) -> Fence:
        return Fence(task_id=self.task_id, lease_token=self.lease_token)


class LeaseHeld(StaleAction):
    """Another worker holds a live lease on the attempt."""


class JobResult:
    """What an attempt or validation job did, as its result and log word.
    The normal paths return the task's new status (``validating``, ``failed``, ...)."""

    DUPLICATE = "duplicate"  # the work was done, or the task is not in the expected state
    LEASE_HELD = "lease_held"  # another worker holds a live lease on the attempt
    TAKEN_OVER = "taken_over"  # took over an attempt whose lease expired, and ran it
    LEASE_LOST = "lease_lost"  # this job's lease was taken over meanwhile; nothing written
    DB_LOST = "db_lost"  # the database connection was lost; the reaper or a redelivery recovers


@dataclass(frozen=True)
class AttemptOutcome:
    """The result word of one attempt job and the task after its last transition."""

    result: str
    task: Task | None = None


def attempt_claim(*, task_id: int, worker: str = "") -> Claim | None:
    """Claim the next attempt of a runnable task, or None if it is not runnable (already
    running, finished, abandoned, needs_review: S4) — a redelivered job does nothing.
    The transition to ``running`` writes the attempt number and the new lease."""
    try:
        return _claim_next(task_id=task_id, worker=worker)
    except (StaleAction, Task.DoesNotExist) as exc:
        log.info("task %s: not claimed (%s)", task_id, exc)
        return None


def _claim_next(*, task_id: int, worker: str) -> Claim:
    # expected_from makes this the one winner when two deliveries of the job start at
    # the same moment (task_transition serialises them on the row); the attempt number
    # is the row's. An external task is run by its own agent through the API: a stray
    # job never starts an attempt on one.
    with db_turn():
        task = transitions.task_transition(
            transitions.Transition(
                task_id=task_id,
                to_status=TaskStatus.RUNNING,
                expected_from=RUNNABLE_STATUSES,
                expected_agent=TaskAgent.INTERNAL,
                reason=transitions.AttemptStarted(f" on {worker}" if worker else ""),
            )
        )
    return Claim(
        task_id=task_id, attempt_index=task.attempt_count, lease_token=task.lease_token, task=task
    )


def attempt_takeover(
    *, task_id: int, worker: str = "", now: datetime | None = None
) -> Claim | Task:
    """Take over the running attempt of ``task_id`` whose lease expired (its heartbeat is
    older than ATTEMPT_LEASE_SECONDS or missing): a redelivered job of a dead worker.
    The same attempt continues under a new lease token, which fences the
    previous worker out if it still lives; its unfinished runs are ended ``failed``
    (``taken_over``) and kept as evidence. A takeover is an infrastructure re-run
    (``requeue_count + 1``); past ATTEMPT_MAX_REQUEUES the task goes ``failed`` instead
    and is returned. Raises StaleAction (not running, an external agent's attempt, or
    the lease is still live: ``LeaseHeld``) or Task.DoesNotExist."""
    now = now or timezone.now()
    with db_turn(), transaction.atomic():
        # Row lock: the reaper, the old worker's heartbeat and a second redelivery are
        # serialised here; each re-reads status, token and heartbeat under the lock.
        locked = _expired_lease(task_id, now)
        seen = locked.heartbeat_at.isoformat() if locked.heartbeat_at else "never"
        by = f" by {worker}" if worker else ""
        _abandon_runs(
            locked,
            error=f"The worker stopped (last heartbeat: {seen}); the attempt was taken "
            f"over{by} and this run abandoned.",
            now=now,
        )
        if locked.requeue_count >= settings.ATTEMPT_MAX_REQUEUES:
            return transitions.task_transition(
                transitions.Transition(
                    task_id=task_id,
                    to_status=TaskStatus.FAILED,
                    expected_from=TaskStatus.RUNNING,
                    lease_token=locked.lease_token,
                    reason=f"attempt lease expired (last heartbeat: {seen}) and the task was "
                    f"already re-run {locked.requeue_count} times",
                )
            )
        task = transitions.task_transition(
            transitions.Transition(
                task_id=task_id,
                to_status=TaskStatus.RUNNING,
                expected_from=TaskStatus.RUNNING,
                lease_token=locked.lease_token,
                reason=f"attempt lease expired (last heartbeat: {seen}); attempt "
                f"{locked.attempt_count} taken over{by} (re-run {locked.requeue_count + 1} "
                f"of at most {settings.ATTEMPT_MAX_REQUEUES})",
                updates={"requeue_count": locked.requeue_count + 1},
            )
        )
    return Claim(
        task_id=task_id,
        attempt_index=task.attempt_count,
        lease_token=task.lease_token,
        task=task,
        taken_over=True,
    )


def _expired_lease(task_id: int, now: datetime) -> Task:
    """The task, row-locked, when its running attempt's lease expired (its heartbeat is
    older than ATTEMPT_LEASE_SECONDS or missing); else StaleAction or LeaseHeld."""
    cutoff = now - timedelta(seconds=settings.ATTEMPT_LEASE_SECONDS)
    locked = Task.objects.select_for_update().get(pk=task_id)
    if locked.status != TaskStatus.RUNNING:
        raise StaleAction(f"task {task_id} is '{locked.status}', not running")
    if locked.agent == TaskAgent.EXTERNAL:
        raise StaleAction(f"task {task_id} has an external agent; no job runs it")
    if locked.heartbeat_at is not None and locked.heartbeat_at >= cutoff:
        raise LeaseHeld(
            f"task {task_id} attempt {locked.attempt_count}: the lease is live "
            f"(last heartbeat {locked.heartbeat_at.isoformat()})"
        )
    return locked


def _abandon_runs(locked: Task, *, error: str, now: datetime) -> None:
    """End the attempt's unfinished runs ``failed`` (``taken_over``), kept as evidence."""
    for run in Run.objects.filter(
        task_id=locked.pk, attempt_index=locked.attempt_count, status=RunStatus.RUNNING
    ).only("pk"):
        runs.run_finish(
            run=run,
            status=RunStatus.FAILED,
            finish_reason=RUN_TAKEN_OVER,
            error=error,
            finished_at=now,
        )


def _beat(fence: Fence) -> bool:
    try:
        fence.beat()
    except LeaseLost:
        return False
    return True


class Heartbeat(Keeper):
    """Refreshes the lease's heartbeat from a thread while a long step (a slow model
    call) runs; steps refresh it too. Stops at the first lost lease."""

    def __init__(self, fence: Fence, interval: float) -> None:
        super().__init__(
            functools.partial(_beat, fence),
            interval=interval,
            name="attempt-heartbeat",
            logger=log,
            subject=f"task {fence.task_id}",
            what="the heartbeat",
        )


def _revision_context(task: Task, attempt_index: int) -> str:
    """For attempt N>1: the previous answer, the validator's feedback when it rejected it,
    and the requester's revise comments since."""
    if attempt_index <= 1:
        return ""
    previous = attempt_index - 1
    verdict = validator().verdict(task.pk, previous)
    validator_result = None
    if verdict is not None and verdict.rejected:
        validator_result = dict(verdict.result)
        validator_result.setdefault("status", verdict.status)
        if verdict.failure_category and not validator_result.get("failure_category"):
            validator_result["failure_category"] = verdict.failure_category
    comments = list(
        Feedback.objects.in_effect()
        .filter(task=task, action=FeedbackAction.REVISE, attempt_index__gte=previous)
        .order_by("created_at", "id")
        .values_list("comment", flat=True)
    )
    return prompts.revision_block(
        previous_answer=task.final_answer,
        validator_result=validator_result,
        revise_comments=comments,
    )


def attempt_execute(*, task: Task, claim: Claim) -> AgentResult:
    """Run the task's plan for the claimed attempt; returns the answer-bearing result
    (the main run, or the team's synthesis)."""
    plan = parse_plan(task.plan)
    default_model = plan.model or settings.AGENT_MODEL
    base = prompts.request_block(task.request, task.rules)
    revision = _revision_context(task, claim.attempt_index)
    if revision:
        base += "\n" + revision
    if isinstance(plan, TeamPlan):
        outcome = run_team(
            task=task,
            attempt_index=claim.attempt_index,
            plan=plan,
            base_prompt=base,
            fence=claim.fence,
            default_model=default_model,
        )
        return outcome.synthesis
    assert isinstance(plan, SinglePlan)
    loop = AgentLoop(
        model_name=default_model,
        system_prompt=prompts.RESEARCHER_SYSTEM,
        tools=DEFAULT_TOOLS,
        max_tool_iterations=(
            plan.max_tool_iterations
            if plan.max_tool_iterations is not None
            else settings.MAX_TOOL_ITERATIONS
        ),
        fence=claim.fence,
    )
    return loop.run(task_id=task.pk, attempt_index=claim.attempt_index, user_prompt=base)


def attempt_finish(*, claim: Claim, result: AgentResult | None, error: str = "") -> Task | None:
    """Hand a usable answer to validation, or fail the attempt. Fenced by the lease
    token: a worker whose lease was taken over gets None and nothing is written."""
    try:
        # One transaction: task_transition's own (no outer block, no savepoint).
        with db_turn():
            if result is not None and result.usable:
                job_id = services.new_job_id()
                task = transitions.task_transition(
                    transitions.Transition(
                        task_id=claim.task_id,
                        to_status=TaskStatus.VALIDATING,
                        lease_token=claim.lease_token,
                        expected_from=TaskStatus.RUNNING,
                        reason=(
                            f"attempt {claim.attempt_index} produced an answer "
                            f"({result.finish_reason})"
                        ),
                        updates={"final_answer": result.output_text, "job_id": job_id},
                    ),
                    on_applied=lambda moved: services.validation_enqueue(
                        moved.pk, claim.attempt_index, job_id=job_id
                    ),
                )
            else:
                why = (
                    error
                    or (result.error if result else "")
                    or (f"no usable answer ({result.finish_reason})" if result else "no answer")
                )
                task = transitions.task_transition(
                    transitions.Transition(
                        task_id=claim.task_id,
                        to_status=TaskStatus.FAILED,
                        lease_token=claim.lease_token,
                        expected_from=TaskStatus.RUNNING,
                        reason=f"attempt {claim.attempt_index} failed: {why}"[:2000],
                    )
                )
    except StaleAction as exc:
        log.warning(
            "task %s attempt %s: %s: result discarded: %s",
            claim.task_id,
            claim.attempt_index,
            JobResult.LEASE_LOST,
            exc,
        )
        return None
    return task


def attempt_run(*, task_id: int, worker: str = "") -> AttemptOutcome:
    """The whole attempt for the job: claim (or take over an attempt whose lease
    expired), run with heartbeat, finish. The outcome's result is the task's status
    after the finishing transition, ``taken_over`` for a finished takeover, or a
    ``JobResult`` word saying why nothing (more) was done; each of those is logged as
    one line."""
    try:
        return _attempt_run(task_id=task_id, worker=worker)
    except (OperationalError, InterfaceError) as exc:
        # The database went away (restart, failover, a killed backend): an outage, not a
        # failed attempt. Every write so far was its own transaction, so nothing is
        # half-written; drop the broken connection and leave the lease to expire: a
        # redelivery takes the attempt over, or the reaper re-queues it.
        log.warning(
            "task %s: %s: the job lost its database connection (%s); a redelivery or the "
            "reaper recovers the attempt",
            task_id,
            JobResult.DB_LOST,
            _first_line(exc),
        )
        close_quietly()
        return AttemptOutcome(JobResult.DB_LOST)


def _claim_or_take_over(*, task_id: int, worker: str) -> Claim | AttemptOutcome:
    try:
        return _claim_next(task_id=task_id, worker=worker)
    except Task.DoesNotExist:
        log.info("task %s: %s: the task no longer exists", task_id, JobResult.DUPLICATE)
        return AttemptOutcome(JobResult.DUPLICATE)
    except StaleAction as exc:
        not_runnable = exc
    try:
        claim = attempt_takeover(task_id=task_id, worker=worker)
    except LeaseHeld as exc:
        log.info("task %s: %s: %s; this delivery does nothing", task_id, JobResult.LEASE_HELD, exc)
        return AttemptOutcome(JobResult.LEASE_HELD)
    except (StaleAction, Task.DoesNotExist):
        log.info("task %s: %s: %s", task_id, JobResult.DUPLICATE, not_runnable)
        return AttemptOutcome(JobResult.DUPLICATE)
    if isinstance(claim, Task):
        log.warning(
            "task %s: %s: attempt %s's lease had expired and its re-runs are spent",
            task_id,
            claim.status,
            claim.attempt_count,
        )
        return AttemptOutcome(claim.status, claim)
    log.warning(
        "task %s: %s: attempt %s's lease had expired; this delivery runs it",
        task_id,
        JobResult.TAKEN_OVER,
        claim.attempt_index,
    )
    return claim


def _attempt_run(*, task_id: int, worker: str) -> AttemptOutcome:
    claimed = _claim_or_take_over(task_id=task_id, worker=worker)
    if isinstance(claimed, AttemptOutcome):
        return claimed
    # The attempt's lines name it, until it is over (never the thread's later
    # lines, in a worker or wherever the job function is called).
    with log_context(task_id=task_id, attempt=claimed.attempt_index):
        return _attempt_run_claimed(claimed, task_id=task_id)


def _attempt_run_claimed(claim: Claim, *, task_id: int) -> AttemptOutcome:
    task = claim.task or Task.objects.get(pk=task_id)
    interval = max(settings.ATTEMPT_LEASE_SECONDS / 3, 1)
    result: AgentResult | None = None
    error = ""
    try:
        with Heartbeat(claim.fence, interval):
            result = attempt_execute(task=task, claim=claim)
    except LeaseLost as exc:
        log.info(
            "task %s attempt %s: %s: %s", task_id, claim.attempt_index, JobResult.LEASE_LOST, exc
        )
        return AttemptOutcome(JobResult.LEASE_LOST)
    except DomainError as exc:  # e.g. a bad plan or model configuration
        error = exc.message
    except (OperationalError, InterfaceError):
        raise  # attempt_run: db_lost
    except Exception as exc:
        log.exception("task %s attempt %s crashed", task_id, claim.attempt_index)
        error = f"{type(exc).__name__}: {exc}"
    finished = attempt_finish(claim=claim, result=result, error=error)
    if finished is None:
        return AttemptOutcome(JobResult.LEASE_LOST)
    return AttemptOutcome(JobResult.TAKEN_OVER if claim.taken_over else finished.status, finished)
