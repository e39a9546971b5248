"""Constructed verdict and audit rows for the tests of the certified rates (issue 27)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from evidence_app.models import Audit, AuditState, ValidationSnapshot
from evidence_app.validator.templates import get_template
from tests.evidence_app.validation_helpers import JUDGE
from tests.factories import TaskFactory

TEMPLATE = "default@1359c919"
MODEL = "test:judge"


def verdicts(
    count: int,
    *,
    probability: float | None,
    route: str = "auto_accepted",
    audits: Sequence[bool | None] = (),
    when: datetime | None = None,
    model: str = MODEL,
    second_scores: list[float | None] | None = None,
) -> list[ValidationSnapshot]:
    """``count`` original verdicts on ``route``; the first ``len(audits)`` are audited
    (True/False: judged correct or not, None: still open)."""
    task = TaskFactory()
    created = when or timezone.now() - timedelta(days=1)
    rows = ValidationSnapshot.objects.bulk_create(
        ValidationSnapshot(
            task=task,
            attempt_index=i + 1,
            status="accepted" if route == "auto_accepted" else "rejected",
            route=route,
            audit_probability=probability,
            template_version=TEMPLATE,
            model_name=model,
            created_at=created,
        )
        for i in range(count)
    )
    Audit.objects.bulk_create(
        Audit(
            snapshot=row,
            task=task,
            attempt_index=row.attempt_index,
            route=route,
            probability=probability or 0.0,
            template_version=TEMPLATE,
            model_name=model,
            state=AuditState.OPEN if correct is None else AuditState.DONE,
            correct=correct,
        )
        for row, correct in zip(rows, audits, strict=False)
    )
    if second_scores is not None:
        ValidationSnapshot.objects.bulk_create(
            ValidationSnapshot(
                task=task,
                attempt_index=row.attempt_index,
                kind="second",
                companion_of=row,
                status="accepted",
                score=score,
                model_name="test:second",
                created_at=created,
            )
            for row, score in zip(rows, second_scores, strict=True)
        )
    return rows


def labelled_accepts(
    scores: list[float],
    wrong: list[bool],
    *,
    probability: float = 1.0,
    when: Any = None,
    owner: Any = None,
) -> list[ValidationSnapshot]:
    """Accepted verdicts of the test judge with their scores, each judged on an audit."""
    task = TaskFactory(**({"owner": owner} if owner else {}))
    created = when or timezone.now() - timedelta(days=2)
    rows = ValidationSnapshot.objects.bulk_create(
        ValidationSnapshot(
            task=task,
            attempt_index=i + 1,
            status="accepted",
            score=score,
            route="auto_accepted",
            audit_probability=probability,
            template_version=get_template("default").version,
            model_name=JUDGE,
            created_at=created + timedelta(seconds=i),
        )
        for i, score in enumerate(scores)
    )
    Audit.objects.bulk_create(
        Audit(
            snapshot=row,
            task=task,
            attempt_index=row.attempt_index,
            route="auto_accepted",
            probability=probability,
            template_version=row.template_version,
            model_name=JUDGE,
            state=AuditState.DONE,
            correct=not bad,
            decided_at=created + timedelta(seconds=i),
        )
        for i, (row, bad) in enumerate(zip(rows, wrong, strict=True))
    )
    return rows
