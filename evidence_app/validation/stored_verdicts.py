"""evidence_app's side of ``tasks_app.workflow.verdicts``: how tasks_app queues a validation,
reads verdicts and hands over a decision's claim labels without importing this app
(registered in ``EvidenceAppConfig.ready``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evidence_app.models import ValidationSnapshot
from evidence_app.trust.claim_labels import decision_claim_labels_record
from evidence_app.validation.selectors import rendered_attempt_evidence
from evidence_app.validation.services import VALIDATE_JOB
from tasks_app.actions import Verdict, job_send_on_commit
from tasks_app.records import Feedback, Task


class StoredVerdicts:
    """The validator behind ``tasks_app.workflow.verdicts.validator()``."""

    def enqueue(self, task_id: int, attempt_index: int, *, job_id: str, countdown: float) -> str:
        return job_send_on_commit(
            VALIDATE_JOB,
            (task_id, attempt_index),
            task_id=task_id,
            job_id=job_id,
            countdown=countdown,
        )

    def verdict(self, task_id: int, attempt_index: int | None = None) -> Verdict | None:
        latest = ValidationSnapshot.objects.originals().without_bodies().filter(task_id=task_id)
        if attempt_index is not None:
            latest = latest.filter(attempt_index=attempt_index)
        snapshot = latest.order_by("-created_at", "-id").first()
        if snapshot is None:
            return None
        return Verdict(
            id=snapshot.pk,
            attempt_index=snapshot.attempt_index,
            status=snapshot.status,
            score=snapshot.score,
            failure_category=snapshot.failure_category,
            result=snapshot.result if isinstance(snapshot.result, dict) else {},
        )

    def rendered_evidence(self, task: Task, attempt_index: int) -> str:
        return rendered_attempt_evidence(task, attempt_index)

    def attempt_verdicts(self, task_id: int) -> dict[int, tuple[int, str]]:
        by_attempt: dict[int, tuple[int, str]] = {}
        originals = ValidationSnapshot.objects.originals().filter(task_id=task_id)
        for snap_id, attempt_index, status in originals.order_by("created_at", "id").values_list(
            "id", "attempt_index", "status"
        ):
            by_attempt[attempt_index] = (snap_id, status)  # the latest one wins
        return by_attempt

    def decision_claim_labels_record(
        self,
        decision: Feedback,
        labels: Sequence[Mapping[str, Any]],
        *,
        actor: Any,
        validation_id: int | None,
    ) -> None:
        decision_claim_labels_record(decision, labels, actor=actor, snapshot_id=validation_id)
