"""Running one attempt of a task (SPEC X1, S4, S5, E2).

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

import logging
import secrets
import threading
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from tasks_app import services
from tasks_app.agents import prompts
from tasks_app.agents.db import db_turn
from tasks_app.agents.loop import AgentLoop, AgentResult
from tasks_app.agents.plans import SinglePlan, TeamPlan, parse_plan
from tasks_app.agents.recorder import Fence, LeaseLost
from tasks_app.agents.team import run_team
from tasks_app.agents.tools import DEFAULT_TOOLS
from tasks_app.errors import DomainError, StaleAction
from tasks_app.models import Feedback, FeedbackAction, Run, RunStatus, Task
from tasks_app.states import RUNNABLE_STATUSES, TaskStatus

log = logging.getLogger(__name__)

VALIDATE_JOB_NAME = "evidence_app.validate_attempt"


@dataclass(frozen=True)
class Claim:
    task_id: int
    attempt_index: int
    lease_token: str

    @property
    def fence(self) -> Fence:
        return Fence(task_id=self.task_id, lease_token=self.lease_token)


def attempt_claim(*, task_id: int, worker: str = "") -> Claim | None:
    """Claim the next attempt of a runnable task, or None if it is not runnable (already
    running, finished, abandoned, needs_review: S4) — a redelivered job does nothing."""
    token = secrets.token_hex(16)
    try:
        # The row lock inside task_transition plus expected_from make this the one
        # winner when two deliveries of the job start at the same moment.
        with db_turn(), transaction.atomic():
            current = Task.objects.select_for_update().only("attempt_count").get(pk=task_id)
            task = services.task_transition(
                task_id=task_id,
                to_status=TaskStatus.RUNNING,
                expected_from=RUNNABLE_STATUSES,
                reason=f"attempt {current.attempt_count + 1} started"
                + (f" on {worker}" if worker else ""),
                updates={
                    "attempt_count": current.attempt_count + 1,
                    "lease_token": token,
                    "heartbeat_at": timezone.now(),
                },
            )
    except (StaleAction, Task.DoesNotExist) as exc:
        log.info("task %s: not claimed (%s)", task_id, exc)
        return None
    return Claim(task_id=task_id, attempt_index=task.attempt_count, lease_token=token)


class Heartbeat:
    """Refreshes the lease's heartbeat from a thread while a long step (a slow model
    call) runs; steps refresh it too. Stops at the first lost lease."""

    def __init__(self, fence: Fence, interval: float) -> None:
        self.fence = fence
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="attempt-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    self.fence.beat()
                except LeaseLost:
                    return
                except Exception:
                    log.warning("heartbeat of task %s failed", self.fence.task_id, exc_info=True)
        finally:
            connection.close()


def _revision_context(task: Task, attempt_index: int) -> str:
    """For attempt N>1: the previous answer, the validator's feedback when it rejected it,
    and the requester's revise comments since."""
    if attempt_index <= 1:
        return ""
    from evidence_app.models import ValidationSnapshot, ValidationStatus

    previous = attempt_index - 1
    snapshot = (
        ValidationSnapshot.objects.originals()
        .filter(task=task, attempt_index=previous)
        .order_by("-created_at", "-id")
        .first()
    )
    validator_result = None
    if snapshot is not None and snapshot.status == ValidationStatus.REJECTED:
        validator_result = dict(snapshot.result or {})
        validator_result.setdefault("status", snapshot.status)
        if snapshot.failure_category and not validator_result.get("failure_category"):
            validator_result["failure_category"] = snapshot.failure_category
    comments = list(
        Feedback.objects.filter(
            task=task, action=FeedbackAction.REVISE, attempt_index__gte=previous
        )
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
        with db_turn(), transaction.atomic():
            if result is not None and result.usable:
                task = services.task_transition(
                    task_id=claim.task_id,
                    to_status=TaskStatus.VALIDATING,
                    lease_token=claim.lease_token,
                    expected_from=TaskStatus.RUNNING,
                    reason=(
                        f"attempt {claim.attempt_index} produced an answer ({result.finish_reason})"
                    ),
                    # The attempt is over: no lease while the validator works.
                    updates={
                        "final_answer": result.output_text,
                        "lease_token": "",
                        "heartbeat_at": None,
                    },
                )
                transaction.on_commit(lambda: _send_validation(claim.task_id, claim.attempt_index))
            else:
                why = (
                    error
                    or (result.error if result else "")
                    or (f"no usable answer ({result.finish_reason})" if result else "no answer")
                )
                task = services.task_transition(
                    task_id=claim.task_id,
                    to_status=TaskStatus.FAILED,
                    lease_token=claim.lease_token,
                    expected_from=TaskStatus.RUNNING,
                    reason=f"attempt {claim.attempt_index} failed: {why}"[:2000],
                )
    except StaleAction as exc:
        log.warning(
            "task %s attempt %s: result discarded: %s", claim.task_id, claim.attempt_index, exc
        )
        return None
    return task


def _send_validation(task_id: int, attempt_index: int) -> None:
    from project.celery import app

    app.send_task(VALIDATE_JOB_NAME, args=[task_id, attempt_index])


def attempt_run(*, task_id: int, worker: str = "") -> Task | None:
    """The whole attempt for the job: claim, run with heartbeat, finish. Returns the
    task after the finishing transition, or None when there was nothing to do or the
    lease was lost."""
    claim = attempt_claim(task_id=task_id, worker=worker)
    if claim is None:
        return None
    task = Task.objects.get(pk=task_id)
    interval = max(settings.ATTEMPT_LEASE_SECONDS / 3, 1)
    result: AgentResult | None = None
    error = ""
    try:
        with Heartbeat(claim.fence, interval):
            result = attempt_execute(task=task, claim=claim)
    except LeaseLost as exc:
        log.info("task %s attempt %s stopped: %s", task_id, claim.attempt_index, exc)
        return None
    except DomainError as exc:  # e.g. a bad plan or model configuration
        error = exc.message
    except (OperationalError, InterfaceError) as exc:
        # The database went away (restart, failover, a killed backend): an outage, not a
        # failed attempt. Every write so far was its own transaction, so nothing is
        # half-written; drop the broken connection and leave the lease to expire: the
        # reaper re-queues the attempt (bounded by ATTEMPT_MAX_REQUEUES).
        log.warning(
            "task %s attempt %s lost its database connection (%s); left to the reaper",
            task_id,
            claim.attempt_index,
            exc,
        )
        connection.close()
        return None
    except Exception as exc:
        log.exception("task %s attempt %s crashed", task_id, claim.attempt_index)
        error = f"{type(exc).__name__}: {exc}"
    return attempt_finish(claim=claim, result=result, error=error)


@dataclass
class ReapReport:
    requeued: list[int]
    failed: list[int]
    reenqueued: list[int] = field(default_factory=list)
    revalidated: list[int] = field(default_factory=list)


def attempt_reap(*, now: object = None) -> ReapReport:
    """Recover running attempts whose heartbeat is older than ATTEMPT_LEASE_SECONDS or
    missing: back to ``open`` and re-enqueued (at most ATTEMPT_MAX_REQUEUES times), else
    ``failed`` with the reason. Fresh attempts and needs_review are untouched. Runnable
    tasks left waiting a whole lease period get their job sent again."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.ATTEMPT_LEASE_SECONDS)  # type: ignore[operator]
    stale = list(
        Task.objects.filter(status=TaskStatus.RUNNING)
        .filter(Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=cutoff))
        .values_list("pk", "heartbeat_at", "requeue_count", "lease_token")
    )
    report = ReapReport(requeued=[], failed=[])
    for task_id, heartbeat_at, requeue_count, lease_token in stale:
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
                Run.objects.filter(
                    task_id=task_id, attempt_index=locked.attempt_count, status=RunStatus.RUNNING
                ).update(
                    status=RunStatus.FAILED,
                    finish_reason="lease_expired",
                    error=f"The worker stopped (last heartbeat: {seen}); the run was abandoned.",
                    finished_at=now,
                )
                if requeue_count < settings.ATTEMPT_MAX_REQUEUES:
                    services.task_transition(
                        task_id=task_id,
                        to_status=TaskStatus.OPEN,
                        lease_token=lease_token,
                        reason=f"attempt lease expired (last heartbeat: {seen}); re-queued",
                        updates={"requeue_count": requeue_count + 1},
                    )
                    services.attempt_enqueue(task_id)
                    report.requeued.append(task_id)
                else:
                    services.task_transition(
                        task_id=task_id,
                        to_status=TaskStatus.FAILED,
                        lease_token=lease_token,
                        reason=(
                            f"attempt lease expired (last heartbeat: {seen}) and the task was "
                            f"already re-queued {requeue_count} times"
                        ),
                    )
                    report.failed.append(task_id)
        except (StaleAction, Task.DoesNotExist):
            continue
    report.reenqueued = _reenqueue_waiting(cutoff=cutoff, now=now)
    report.revalidated = _resend_stale_validations(cutoff=cutoff, now=now)
    return report


def _reenqueue_waiting(*, cutoff: object, now: object) -> list[int]:
    """Runnable tasks (open/needs_revision, never needs_review) untouched for a whole
    lease period get their job sent again, in case the first was lost (broker down at
    commit time). A duplicate is harmless: only one delivery can claim the attempt.
    Touching updated_at sends at most one extra job per lease period."""
    waiting = list(
        Task.objects.filter(status__in=RUNNABLE_STATUSES, updated_at__lt=cutoff).values_list(
            "pk", "updated_at"
        )
    )
    sent: list[int] = []
    for task_id, updated_at in waiting:
        with db_turn(), transaction.atomic():
            touched = Task.objects.filter(
                pk=task_id, status__in=RUNNABLE_STATUSES, updated_at=updated_at
            ).update(updated_at=now)
            if touched:
                services.attempt_enqueue(task_id)
                sent.append(task_id)
    return sent


def _resend_stale_validations(*, cutoff: object, now: object) -> list[int]:
    """Tasks in ``validating`` for a whole lease period with no snapshot of their
    current attempt get the validation job sent again: the first one was lost (broker
    down at commit, or the message dropped). The validation job is idempotent, so a
    duplicate writes nothing; touching updated_at sends at most one per lease period."""
    from evidence_app.models import ValidationSnapshot

    waiting = list(
        Task.objects.filter(status=TaskStatus.VALIDATING, updated_at__lt=cutoff).values_list(
            "pk", "updated_at", "attempt_count"
        )
    )
    sent: list[int] = []
    for task_id, updated_at, attempt_index in waiting:
        if (
            ValidationSnapshot.objects.originals()
            .filter(task_id=task_id, attempt_index=attempt_index)
            .exists()
        ):
            continue
        with db_turn(), transaction.atomic():
            touched = Task.objects.filter(
                pk=task_id, status=TaskStatus.VALIDATING, updated_at=updated_at
            ).update(updated_at=now)
            if touched:
                transaction.on_commit(lambda t=task_id, a=attempt_index: _send_validation(t, a))
                sent.append(task_id)
    return sent
