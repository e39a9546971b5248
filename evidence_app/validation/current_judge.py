"""Which judge validates: the team's current template and model, read from one place,
and the candidate judging in shadow beside it.

``current_judge`` is what every new verdict (``_validate_claimed``), ``attempt_judge``
and ``judge_bench`` use by default: the latest ``JudgeDefault`` (made only from a
finished comparison on the judge page), else DEFAULT_TEMPLATE and VALIDATOR_MODEL. It is
read for each verdict, so a change applies to the verdicts made after it.
"""

from __future__ import annotations

import functools
from typing import Any

from django.conf import settings

from evidence_app.models import JudgeDefault, ShadowJudge, ShadowVerdict, ValidationSnapshot
from evidence_app.validator.templates import DEFAULT_TEMPLATE
from project.db import Prepared
from tasks_app.actions import job_enqueue

__all__ = [
    "SHADOW_JOB",
    "active_shadow",
    "active_shadow_sql",
    "current_judge",
    "current_judge_of",
    "current_judge_sql",
    "shadow_enqueue",
]

# The shadow job's name (evidence_app.jobs registers it under this name).
SHADOW_JOB = "evidence_app.shadow_validation"


@functools.cache
def _latest_default() -> Prepared:
    """The latest ``JudgeDefault`` (template, model), compiled once: it is read for
    every verdict (issue 48)."""
    return Prepared(
        JudgeDefault.objects.order_by("-chosen_at", "-id").values_list("template", "model")[:1]
    )


@functools.cache
def _active_shadow_id() -> Prepared:
    """The id of the active shadow judge, compiled once: read for every verdict."""
    return Prepared(ShadowJudge.objects.filter(active=True).values_list("pk", flat=True)[:1])


def current_judge() -> tuple[str, str]:
    """(template name, model) of the team's current judge."""
    rows = _latest_default().rows()
    if not rows:
        return DEFAULT_TEMPLATE, settings.VALIDATOR_MODEL
    return rows[0]


def current_judge_sql() -> tuple[str, list[Any]]:
    """``current_judge`` as a scalar SQL expression with its parameters, for a statement
    the caller sends anyway to compute (the validation claim): an array of the latest
    default's template and model, empty when none was made. ``current_judge_of`` reads
    it."""
    query = _latest_default()
    return (
        f"COALESCE((SELECT ARRAY[d.template, d.model]::text[] FROM ({query.sql}) d), "
        "ARRAY[]::text[])",
        list(query.params),
    )


def current_judge_of(read: list[str]) -> tuple[str, str]:
    """(template name, model) from ``current_judge_sql``'s value."""
    if not read:
        return DEFAULT_TEMPLATE, settings.VALIDATOR_MODEL
    return read[0], read[1]


def active_shadow() -> ShadowJudge | None:
    return ShadowJudge.objects.filter(active=True).first()


def active_shadow_sql() -> tuple[str, list[Any]]:
    """The active shadow judge's id as a scalar sub-``SELECT`` (NULL when none) with its
    parameters, for the verdict's INSERT to read with it (``insert_new(..., also=...)``)."""
    query = _active_shadow_id()
    return f"({query.sql})", list(query.params)


def shadow_enqueue(original: ValidationSnapshot, *, shadow_id: int | None) -> ShadowVerdict | None:
    """While a shadow judge is active (``shadow_id``, read with ``original``'s INSERT in
    this transaction: ``active_shadow_sql``), queue its judgement of ``original`` (an
    original verdict just stored) through the outbox, in the caller's transaction: the
    shadow job exists exactly when the verdict does. None when no shadow judge is active."""
    if shadow_id is None:
        return None
    pending = ShadowVerdict.objects.create(shadow_id=shadow_id, original=original)
    job_enqueue(SHADOW_JOB, (pending.pk,), task_ref=original.task_id)
    return pending
