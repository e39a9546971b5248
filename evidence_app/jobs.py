"""Celery jobs of the validator. Thin: ids in, one service call.

``validate_attempt_job`` is sent by the runtime (by name) after an attempt produced an
answer. A redelivered or duplicated job finds the task no longer ``validating`` that
attempt, or the validation claimed, and does nothing: its result is ``duplicate``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection

from evidence_app.autoaccept.services import CERTIFY_JOB
from evidence_app.judges.gate import COMPARISON_JOB, comparison_run, shadow_verdict_run
from evidence_app.validation.current_judge import SHADOW_JOB
from evidence_app.validation.replay import REPLAY_JOB, replay_request_run
from evidence_app.validation.services import VALIDATE_JOB, validation_attempt
from project.errors import first_line
from project.queues import MAINTENANCE, VALIDATION, PeriodicJob

log = logging.getLogger(__name__)


@shared_task(name=VALIDATE_JOB)
def validate_attempt_job(task_id: int, attempt_index: int) -> str:
    """Validate ``attempt_index`` of ``task_id`` and apply the V2 transition. Returns the
    verdict's status, ``no validation``, ``duplicate`` (a redelivery: nothing stored) or
    ``db_lost`` (the database connection was lost: one WARNING line; the reaper re-sends
    the job)."""
    try:
        outcome = validation_attempt(task_id=int(task_id), attempt_index=int(attempt_index))
    except (OperationalError, InterfaceError) as exc:
        log.warning(
            "task %s attempt %s: db_lost: the validation lost its database connection (%s); "
            "the reaper re-sends it",
            task_id,
            attempt_index,
            first_line(exc),
        )
        connection.close()
        return "db_lost"
    return outcome.result


def _state_or_retry(job: Any, what: str, ref: Any, run: Callable[[], Any]) -> str:
    """Run ``run`` and return the state of the row it returns, or ``gone``. A lost
    database connection tries the job again a little later, at most JOB_MAX_TRIES times
    in all; then ``db_lost``."""
    try:
        row = run()
    except (OperationalError, InterfaceError) as exc:
        connection.close()
        if job.request.retries + 1 >= settings.JOB_MAX_TRIES:
            log.warning("%s %s: db_lost, not tried again (%s)", what, ref, exc)
            return "db_lost"
        raise job.retry(countdown=5 * (job.request.retries + 1)) from exc
    return str(row.state) if row is not None else "gone"


@shared_task(name=REPLAY_JOB, bind=True, max_retries=None)
def replay_validation_job(self: Any, request_id: int) -> str:
    """Run one replay request; returns its state (``succeeded``, ``failed``) or
    ``gone``. A lost database connection tries again a little later, at most
    JOB_MAX_TRIES times in all; then the request says it failed."""
    return _state_or_retry(
        self, "replay request", request_id, lambda: replay_request_run(request_id=int(request_id))
    )


@shared_task(name=COMPARISON_JOB, bind=True, max_retries=None)
def judge_comparison_job(self: Any, comparison_id: int) -> str:
    """Judge the next slice of a judge comparison's cases (the rest is queued as a new
    job); returns its state or ``gone``. A lost database connection tries again a
    little later, at most JOB_MAX_TRIES times in all."""
    return _state_or_retry(
        self,
        "judge comparison",
        comparison_id,
        lambda: comparison_run(comparison_id=int(comparison_id)),
    )


@shared_task(name=SHADOW_JOB, bind=True, max_retries=None)
def shadow_validation_job(self: Any, pending_id: int) -> str:
    """Judge one original verdict's attempt with the candidate in shadow; returns the
    shadow verdict's state (``done``, ``failed``) or ``gone``. Moves no task."""
    return _state_or_retry(
        self, "shadow verdict", pending_id, lambda: shadow_verdict_run(pending_id=int(pending_id))
    )


# Where each job goes (project.queues.register_routes, in EvidenceAppConfig.ready):
# finishing work, never behind a backlog of attempts. Changing the judge: a candidate's
# comparison (in slices) and its shadow verdicts.
JOB_ROUTES = {
    VALIDATE_JOB: VALIDATION,
    REPLAY_JOB: VALIDATION,
    COMPARISON_JOB: VALIDATION,
    SHADOW_JOB: VALIDATION,
    # Recertifying the auto-accept thresholds: periodic bookkeeping.
    CERTIFY_JOB: MAINTENANCE,
}

# What Celery beat sends (project.celery.register_periodic, in EvidenceAppConfig.ready):
# auto-accept at a certified risk, each judge's threshold recertified as labels
# arrive and a drifting judge's auto-accept stopped.
PERIODIC_JOBS = {
    "certify-thresholds": PeriodicJob(
        CERTIFY_JOB, lambda: settings.AUTOACCEPT_RECOMPUTE_SECONDS, MAINTENANCE
    ),
}


@shared_task(name=CERTIFY_JOB)
def certify_thresholds_job() -> dict[str, int]:
    """Recertify every judge's auto-accept threshold on its labelled verdicts and run the
    drift rule on the approved ones; returns the counts. Periodic; a lost run
    is harmless (the next one reads the same labels)."""
    # Imported here, not at the top: it loads scipy, which no web or worker process
    # should pay for at start-up (only this job, the Trust page's data is stored).
    from evidence_app.autoaccept.recompute import thresholds_recompute

    outcome = thresholds_recompute()
    return {"judges": outcome.judges, "certified": outcome.certified, "stopped": outcome.stopped}
