"""Shadow judging: a candidate judge's verdict on an original verdict's attempt, stored
beside it; it never changes the task."""

from __future__ import annotations

from collections.abc import Callable

from django.db import transaction

from evidence_app.models import SnapshotKind, ValidationSnapshot
from evidence_app.validation.judge_calls import judge_again
from evidence_app.validation.snapshots import snapshot_store


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
    plan, judgement = judge_again(original, template=template, model=model)
    with transaction.atomic():
        snapshot = snapshot_store(
            task=original.task,
            plan=plan,
            judgement=judgement,
            kind=SnapshotKind.SHADOW,
            companion_of=original,
        )
        if on_stored is not None:
            on_stored(snapshot)
    return snapshot
