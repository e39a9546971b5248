"""Replay: a stored attempt judged again with another template or model, one at a
time (a request and its job) or in bulk (candidates and their estimated cost). A replay
never changes the task."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.db.models import F
from django.utils import timezone

from evidence_app.models import ReplayRequest, ReplayState, SnapshotKind, ValidationSnapshot
from evidence_app.validation.judge_calls import judge_again
from evidence_app.validation.snapshots import snapshot_store
from evidence_app.validator.prompt import system_prompt
from evidence_app.validator.templates import DEFAULT_TEMPLATE, get_template
from project.costs import CostTotal, estimate_cost
from project.errors import first_line
from tasks_app.actions import job_enqueue

log = logging.getLogger(__name__)


def replay_validation(
    *,
    snapshot: ValidationSnapshot,
    template: str | None = None,
    model: str | None = None,
    requested_by: Any = None,
) -> ValidationSnapshot:
    """Re-run the validator on the stored packet of ``snapshot``'s attempt with another
    template and/or model. Stores a ``replay`` snapshot linked to the original and
    never changes the task."""
    original = snapshot.replay_of or snapshot
    plan, judgement = judge_again(
        original,
        template=template or original.template_name or DEFAULT_TEMPLATE,
        model=model or original.model_name or settings.VALIDATOR_MODEL,
    )
    return snapshot_store(
        task=original.task,
        plan=plan,
        judgement=judgement,
        kind=SnapshotKind.REPLAY,
        replay_of=original,
        requested_by=requested_by,
    )


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
    the outbox, both in the caller's transaction: the request's ``state`` says
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


@dataclass(frozen=True)
class ReplayEstimate:
    tasks: int
    input_chars: int
    # Estimated input tokens x the chosen model's input price; output is not
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
