"""Running one attempt of a task (X1, S4, S5, E2).

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
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.db.models import Q
from django.utils import timezone

from project.broker import Held, held_jobs
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
    RUN_LEASE_EXPIRED,
    RUN_TAKEN_OVER,
    Run,
    RunStatus,
    ServiceHeartbeat,
)
from tasks_app.workflow import services, transitions
from tasks_app.workflow.fence import Fence, LeaseLost
from tasks_app.workflow.models import Feedback, FeedbackAction, Task, TaskAgent
from tasks_app.workflow.outbox import outbox_waiting_job_ids
from tasks_app.workflow.states import RUNNABLE_STATUSES, TaskStatus
from tasks_app.workflow.verdicts import validator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Claim:
    task_id: int
    attempt_index: int
    lease_token: str
    task: Task | None = field(default=None, compare=False, repr=False)
    # Claimed by taking over an attempt whose lease expired (issue 17).
    taken_over: bool = False

    @property
    def fence(self) -> Fence:
        return Fence(task_id=self.task_id, lease_token=self.lease_token)


class LeaseHeld(StaleAction):
    """Another worker holds a live lease on the attempt (issue 17)."""


def _refuse_external(locked: Task) -> dict[str, object]:
    """No extra writes; only a check on the locked row. External tasks are run by their
    own agent through the API (issue 14): a stray job never starts an attempt on one
    (checked here, on the row already locked, so the claim costs no extra statement)."""
    if locked.agent == TaskAgent.EXTERNAL:
        raise StaleAction(f"task {locked.pk} has an external agent; no job runs it")
    return {}


class JobResult:
    """What an attempt or validation job did, as its result and log word (issue 17).
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
    # The row lock inside task_transition plus expected_from make this the one
    # winner when two deliveries of the job start at the same moment; the attempt
    # number is read from the locked row.
    with db_turn():
        task = transitions.task_transition(
            transitions.Transition(
                task_id=task_id,
                to_status=TaskStatus.RUNNING,
                expected_from=RUNNABLE_STATUSES,
                reason=lambda locked: (
                    (
                        f"attempt {locked.attempt_count} re-run {locked.requeue_count} started"
                        if locked.attempt_interrupted
                        else f"attempt {locked.attempt_count + 1} started"
                    )
                    + (f" on {worker}" if worker else "")
                ),
                updates=_refuse_external,
            )
        )
    return Claim(
        task_id=task_id, attempt_index=task.attempt_count, lease_token=task.lease_token, task=task
    )


def attempt_takeover(
    *, task_id: int, worker: str = "", now: datetime | None = None
) -> Claim | Task:
    """Take over the running attempt of ``task_id`` whose lease expired (its heartbeat is
    older than ATTEMPT_LEASE_SECONDS or missing): a redelivered job of a dead worker
    (issue 17). The same attempt continues under a new lease token, which fences the
    previous worker out if it still lives; its unfinished runs are ended ``failed``
    (``taken_over``) and kept as evidence. A takeover is an infrastructure re-run
    (``requeue_count + 1``); past ATTEMPT_MAX_REQUEUES the task goes ``failed`` instead
    and is returned. Raises StaleAction (not running, an external agent's attempt, or
    the lease is still live: ``LeaseHeld``) or Task.DoesNotExist."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.ATTEMPT_LEASE_SECONDS)
    with db_turn(), transaction.atomic():
        # Row lock: the reaper, the old worker's heartbeat and a second redelivery are
        # serialised here; each re-reads status, token and heartbeat under the lock.
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
        seen = locked.heartbeat_at.isoformat() if locked.heartbeat_at else "never"
        by = f" by {worker}" if worker else ""
        for run in Run.objects.filter(
            task_id=task_id, attempt_index=locked.attempt_count, status=RunStatus.RUNNING
        ).only("pk"):
            runs.run_finish(
                run=run,
                status=RunStatus.FAILED,
                finish_reason=RUN_TAKEN_OVER,
                error=(
                    f"The worker stopped (last heartbeat: {seen}); the attempt was taken "
                    f"over{by} and this run abandoned."
                ),
                finished_at=now,
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
    one line (issue 17)."""
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
    # The attempt's lines name it, until it is over (issue 17: never the thread's later
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


@dataclass
class ReapReport:
    requeued: list[int]
    failed: list[int]
    reenqueued: list[int] = field(default_factory=list)
    revalidated: list[int] = field(default_factory=list)


def attempt_reap(*, now: datetime | None = None) -> ReapReport:
    """Recover running attempts whose heartbeat is older than ATTEMPT_LEASE_SECONDS or
    missing: back to ``open`` and re-enqueued (at most ATTEMPT_MAX_REQUEUES times), else
    ``failed`` with the reason. Fresh attempts and needs_review are untouched. Runnable
    tasks left waiting a whole lease period get their job sent again."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.ATTEMPT_LEASE_SECONDS)
    stale = list(
        Task.objects.filter(status=TaskStatus.RUNNING)
        .filter(Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=cutoff))
        .values_list("pk", "heartbeat_at", "requeue_count", "lease_token", "agent")
    )
    report = ReapReport(requeued=[], failed=[])
    for task_id, heartbeat_at, requeue_count, lease_token, agent in stale:
        external = agent == TaskAgent.EXTERNAL
        seen = heartbeat_at.isoformat() if heartbeat_at else "never"
        try:
            with db_turn(), transaction.atomic():
                # Fenced by the token we read: if the worker beat or finished in the
                # meantime, its token or status changed and we leave it alone.
                locked = Task.objects.select_for_update().get(pk=task_id)
                if locked.status != TaskStatus.RUNNING or locked.lease_token != lease_token:
                    continue
                if locked.heartbeat_at is not None and locked.heartbeat_at >= cutoff:
                    continue
                # The dead worker's runs would otherwise show "running" forever.
                for run in Run.objects.filter(
                    task_id=task_id, attempt_index=locked.attempt_count, status=RunStatus.RUNNING
                ).only("pk"):
                    runs.run_finish(
                        run=run,
                        status=RunStatus.FAILED,
                        finish_reason=RUN_LEASE_EXPIRED,
                        error=(
                            f"The external agent stopped (last heartbeat: {seen}); the run "
                            "is unfinished."
                            if external
                            else f"The worker stopped (last heartbeat: {seen}); the run was "
                            "abandoned."
                        ),
                        finished_at=now,
                    )
                # An external attempt (issue 14) goes back to open (its agent may submit
                # again; no job is queued) or to failed, as EXTERNAL_ATTEMPT_STALE_ACTION says.
                back_to_open = requeue_count < settings.ATTEMPT_MAX_REQUEUES and (
                    not external or settings.EXTERNAL_ATTEMPT_STALE_ACTION == "open"
                )
                if back_to_open:
                    # An internal attempt is re-run as the same attempt (issue 17: an
                    # outage does not spend the task's attempts); an external agent
                    # submits a new one.
                    transitions.task_transition(
                        transitions.Transition(
                            task_id=task_id,
                            to_status=TaskStatus.OPEN,
                            lease_token=lease_token,
                            reason=f"external attempt lease expired (last heartbeat: {seen}); "
                            "waiting for a new attempt"
                            if external
                            else f"attempt lease expired (last heartbeat: {seen}); attempt "
                            f"{locked.attempt_count} re-queued (re-run {requeue_count + 1} of "
                            f"at most {settings.ATTEMPT_MAX_REQUEUES})",
                            updates={"requeue_count": requeue_count + 1},
                            rerun=not external,
                        )
                    )
                    services.attempt_enqueue(task_id)
                    report.requeued.append(task_id)
                elif external and settings.EXTERNAL_ATTEMPT_STALE_ACTION == "failed":
                    transitions.task_transition(
                        transitions.Transition(
                            task_id=task_id,
                            to_status=TaskStatus.FAILED,
                            lease_token=lease_token,
                            reason=f"external attempt lease expired (last heartbeat: {seen})",
                        )
                    )
                    report.failed.append(task_id)
                else:
                    transitions.task_transition(
                        transitions.Transition(
                            task_id=task_id,
                            to_status=TaskStatus.FAILED,
                            lease_token=lease_token,
                            reason=(
                                f"attempt lease expired (last heartbeat: {seen}) and the "
                                f"task was already re-run {requeue_count} times"
                            ),
                        )
                    )
                    report.failed.append(task_id)
        except (StaleAction, Task.DoesNotExist):
            continue
    held = _HeldJobs()
    report.reenqueued = _reenqueue_waiting(cutoff=cutoff, now=now, held=held)
    report.revalidated = _resend_stale_validations(cutoff=cutoff, now=now, held=held)
    return report


class _HeldJobs:
    """The broker's queued and unacknowledged job ids, read at most once per sweep and
    only when some task is waiting (issue 16)."""

    def __init__(self) -> None:
        self._held: Held | None = None
        self._waiting: set[str] = set()
        self._live: set[str] | None = None
        self._read = False

    def holds(self, job_id: str) -> bool:
        """True when the broker still holds ``job_id`` for a live worker: queued, or
        delivered to a worker that is alive and not yet acknowledged (running). False
        when it is lost, when the worker it was delivered to died (issue 17: Redis would
        hand it back only after the visibility timeout), or when the broker cannot be
        inspected (then a re-send is the safe choice: duplicates are harmless)."""
        if not self._read:
            self._read = True
            self._held = held_jobs()
            # Recorded in the outbox and not published yet (the broker was down): the
            # relay sends it; a re-send now would only add a copy (issue 17).
            self._waiting = outbox_waiting_job_ids()
        if not job_id:
            return False
        if job_id in self._waiting:
            return True
        if self._held is None:
            return False
        if job_id in self._held.queued:
            return True
        if job_id not in self._held.unacked:
            return False
        delivered = self._held.unacked[job_id]
        grace = 2 * settings.OPS_HEARTBEAT_SECONDS
        if delivered is None or delivered > time.time() - grace:
            return True  # just delivered: its worker may not have reported it yet
        live = self._live_jobs()
        return live is None or job_id in live

    def _live_jobs(self) -> set[str] | None:
        """Jobs the live workers report holding (heartbeat rows younger than two
        periods); None when a live worker does not report them (an older version)."""
        if self._live is None:
            fresh = timezone.now() - timedelta(seconds=2 * settings.OPS_HEARTBEAT_SECONDS)
            jobs: set[str] = set()
            for detail in ServiceHeartbeat.objects.filter(
                kind=ServiceHeartbeat.Kind.WORKER, seen_at__gte=fresh
            ).values_list("detail", flat=True):
                listed = (detail or {}).get("jobs")
                if not isinstance(listed, list):
                    return None
                jobs.update(str(j) for j in listed)
            self._live = jobs
        return self._live


def _quiet_since(cutoff: datetime) -> Q:
    """Neither changed nor re-sent since ``cutoff`` (issue 11: ``resent_at`` is the
    re-send marker; ``updated_at`` only says the row changed)."""
    return Q(updated_at__lt=cutoff) & (Q(resent_at__isnull=True) | Q(resent_at__lt=cutoff))


def _resend_marked(
    task_id: int,
    *,
    statuses: frozenset[str],
    seen: tuple[datetime, datetime | None],
    now: datetime,
) -> str:
    """Record a re-send: a new job id and ``resent_at``, conditional on the row being as
    read (same status, ``seen`` = its updated_at and resent_at unchanged), so a
    transition or a second reaper in between means no send. Returns the new job id, or
    "" when the row moved on."""
    updated_at, resent_at = seen
    new_id = services.new_job_id()
    touched = Task.objects.filter(
        pk=task_id, status__in=statuses, updated_at=updated_at, resent_at=resent_at
    ).update(resent_at=now, job_id=new_id)
    return new_id if touched else ""


def _reenqueue_waiting(*, cutoff: datetime, now: datetime, held: _HeldJobs) -> list[int]:
    """Runnable tasks (open/needs_revision, never needs_review) neither changed nor
    re-sent for a whole lease period whose job the broker no longer holds get it sent
    again (it was lost: broker down at commit time, or a broker restart). A job still
    waiting in the queue is left alone, however long the backlog. A duplicate is harmless
    anyway: only one delivery can claim the attempt. ``resent_at`` spaces re-sends one
    lease period apart."""
    waiting = list(
        Task.objects.filter(_quiet_since(cutoff), status__in=RUNNABLE_STATUSES)
        .exclude(agent=TaskAgent.EXTERNAL)  # waits for its agent, never re-queued (issue 14)
        .values_list("pk", "updated_at", "resent_at", "job_id")
    )
    sent: list[int] = []
    for task_id, updated_at, resent_at, job_id in waiting:
        if held.holds(job_id):
            continue
        with db_turn(), transaction.atomic():
            new_id = _resend_marked(
                task_id, statuses=RUNNABLE_STATUSES, seen=(updated_at, resent_at), now=now
            )
            if new_id:
                services.attempt_enqueue(task_id, job_id=new_id)
                sent.append(task_id)
    return sent


def _resend_stale_validations(*, cutoff: datetime, now: datetime, held: _HeldJobs) -> list[int]:
    """Tasks in ``validating`` for a whole lease period with no snapshot of their
    current attempt, whose validation job the broker no longer holds, get it sent again:
    the first one was lost (broker down at commit, or the message dropped). A second
    copy never calls the model twice (the validation claims first); ``resent_at`` sends
    at most one per lease period."""
    waiting = list(
        Task.objects.filter(_quiet_since(cutoff), status=TaskStatus.VALIDATING).values_list(
            "pk", "updated_at", "resent_at", "attempt_count", "job_id"
        )
    )
    sent: list[int] = []
    for task_id, updated_at, resent_at, attempt_index, job_id in waiting:
        if held.holds(job_id):
            continue  # still queued or running: never a second copy (issue 16)
        if validator().verdict(task_id, attempt_index) is not None:
            continue
        with db_turn(), transaction.atomic():
            new_id = _resend_marked(
                task_id,
                statuses=frozenset({TaskStatus.VALIDATING}),
                seen=(updated_at, resent_at),
                now=now,
            )
            if new_id:
                services.validation_enqueue(task_id, attempt_index, job_id=new_id)
                sent.append(task_id)
    return sent
