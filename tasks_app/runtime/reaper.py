"""The reaper: running attempts whose worker stopped beating go back to ``open``
(re-run as the same attempt, at most ATTEMPT_MAX_REQUEUES times) or to ``failed`` with the
reason; runnable tasks and validations left waiting a whole lease period have their job
sent again, unless the broker still holds it."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from project.broker import Held, held_jobs
from project.dbturn import db_turn
from project.errors import StaleAction
from tasks_app.runtime import runs
from tasks_app.runtime.models import (
    RUN_LEASE_EXPIRED,
    Run,
    RunStatus,
    ServiceHeartbeat,
)
from tasks_app.workflow import services, transitions
from tasks_app.workflow.models import Task, TaskAgent
from tasks_app.workflow.outbox import outbox_waiting_job_ids
from tasks_app.workflow.states import RUNNABLE_STATUSES, TaskStatus
from tasks_app.workflow.verdicts import validator

log = logging.getLogger(__name__)


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
        attempt = _StaleAttempt(
            task_id=task_id,
            seen=heartbeat_at.isoformat() if heartbeat_at else "never",
            requeue_count=requeue_count,
            lease_token=lease_token,
            external=agent == TaskAgent.EXTERNAL,
        )
        try:
            with db_turn(), transaction.atomic():
                outcome = _reap_one(attempt, cutoff=cutoff, now=now)
        except (StaleAction, Task.DoesNotExist):
            continue
        if outcome == "requeued":
            report.requeued.append(task_id)
        elif outcome == "failed":
            report.failed.append(task_id)
    held = _HeldJobs()
    report.reenqueued = _reenqueue_waiting(cutoff=cutoff, now=now, held=held)
    report.revalidated = _resend_stale_validations(cutoff=cutoff, now=now, held=held)
    return report


@dataclass(frozen=True)
class _StaleAttempt:
    """A running attempt read as stale, with the lease token it was read with."""

    task_id: int
    seen: str  # its last heartbeat, or "never"
    requeue_count: int
    lease_token: str
    external: bool


def _reap_one(attempt: _StaleAttempt, *, cutoff: datetime, now: datetime) -> str:
    """In the caller's transaction: fail the dead worker's runs and move the task back to
    ``open`` (``requeued``) or to ``failed``; "" when the worker beat or finished meanwhile.
    Fenced by the token read: a changed token or status leaves the task alone."""
    task_id, seen, requeue_count = attempt.task_id, attempt.seen, attempt.requeue_count
    locked = Task.objects.select_for_update().get(pk=task_id)
    if locked.status != TaskStatus.RUNNING or locked.lease_token != attempt.lease_token:
        return ""
    if locked.heartbeat_at is not None and locked.heartbeat_at >= cutoff:
        return ""
    _fail_dead_runs(attempt, attempt_index=locked.attempt_count, now=now)
    # An external attempt goes back to open (its agent may submit again; no
    # job is queued) or to failed, as EXTERNAL_ATTEMPT_STALE_ACTION says.
    back_to_open = requeue_count < settings.ATTEMPT_MAX_REQUEUES and (
        not attempt.external or settings.EXTERNAL_ATTEMPT_STALE_ACTION == "open"
    )
    if back_to_open:
        # An internal attempt is re-run as the same attempt (an outage does not
        # spend the task's attempts); an external agent submits a new one.
        reason = (
            f"external attempt lease expired (last heartbeat: {seen}); waiting for a new attempt"
            if attempt.external
            else f"attempt lease expired (last heartbeat: {seen}); attempt "
            f"{locked.attempt_count} re-queued (re-run {requeue_count + 1} of "
            f"at most {settings.ATTEMPT_MAX_REQUEUES})"
        )
        transitions.task_transition(
            transitions.Transition(
                task_id=task_id,
                to_status=TaskStatus.OPEN,
                lease_token=attempt.lease_token,
                reason=reason,
                updates={"requeue_count": requeue_count + 1},
                rerun=not attempt.external,
            )
        )
        services.attempt_enqueue(task_id)
        return "requeued"
    reason = (
        f"external attempt lease expired (last heartbeat: {seen})"
        if attempt.external and settings.EXTERNAL_ATTEMPT_STALE_ACTION == "failed"
        else f"attempt lease expired (last heartbeat: {seen}) and the task was already "
        f"re-run {requeue_count} times"
    )
    transitions.task_transition(
        transitions.Transition(
            task_id=task_id,
            to_status=TaskStatus.FAILED,
            lease_token=attempt.lease_token,
            reason=reason,
        )
    )
    return "failed"


def _fail_dead_runs(attempt: _StaleAttempt, *, attempt_index: int, now: datetime) -> None:
    """The dead worker's runs would otherwise show "running" forever."""
    seen = attempt.seen
    for run in Run.objects.filter(
        task_id=attempt.task_id, attempt_index=attempt_index, status=RunStatus.RUNNING
    ).only("pk"):
        runs.run_finish(
            run=run,
            status=RunStatus.FAILED,
            finish_reason=RUN_LEASE_EXPIRED,
            error=(
                f"The external agent stopped (last heartbeat: {seen}); the run is unfinished."
                if attempt.external
                else f"The worker stopped (last heartbeat: {seen}); the run was abandoned."
            ),
            finished_at=now,
        )


class _HeldJobs:
    """The broker's queued and unacknowledged job ids, read at most once per sweep and
    only when some task is waiting."""

    def __init__(self) -> None:
        self._held: Held | None = None
        self._waiting: set[str] = set()
        self._live: set[str] | None = None
        self._read = False

    def holds(self, job_id: str) -> bool:
        """True when the broker still holds ``job_id`` for a live worker: queued, or
        delivered to a worker that is alive and not yet acknowledged (running). False
        when it is lost, when the worker it was delivered to died (Redis would
        hand it back only after the visibility timeout), or when the broker cannot be
        inspected (then a re-send is the safe choice: duplicates are harmless)."""
        if not self._read:
            self._read = True
            self._held = held_jobs()
            # Recorded in the outbox and not published yet (the broker was down): the
            # relay sends it; a re-send now would only add a copy.
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
    """Neither changed nor re-sent since ``cutoff`` (``resent_at`` is the
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
        .exclude(agent=TaskAgent.EXTERNAL)  # waits for its agent, never re-queued
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
            continue  # still queued or running: never a second copy
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
