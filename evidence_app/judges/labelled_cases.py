"""The team's labelled cases taken out, for another judge to be measured or trained on:
the blind audit judgements and the decisions with their claim labels, in judge_bench's
case format (``evidence_app.judge_bench.from_reviews`` converts each; this module only
narrows them to one judge and writes them as JSON Lines, one case per line)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from typing import Any

from django.db.models import Exists, OuterRef, Q, Subquery

from evidence_app.judge_bench.from_reviews import iter_labelled_cases
from evidence_app.models import Audit, ValidationSnapshot
from evidence_app.trust.blinding import audit_exposures_record
from project.errors import InvalidInput
from tasks_app.records import Feedback

__all__ = ["CaseExport", "labelled_case_lines"]


@dataclass(frozen=True)
class CaseExport:
    """Which labelled cases to export: ``queue`` (audit, review or all), the judge whose
    verdicts they label (template version and model; None: any) and the period."""

    queue: str = "audit"
    template_version: str | None = None
    model: str | None = None
    since: date | None = None
    until: date | None = None

    def checked(self) -> CaseExport:
        """Itself; InvalidInput when the period ends before it starts."""
        if self.since and self.until and self.until < self.since:
            raise InvalidInput("until: must not be before since")
        return self

    def _verdict_filter(self, prefix: str = "") -> dict[str, str]:
        wanted = {"template_version": self.template_version, "model_name": self.model}
        return {f"{prefix}{field}": value for field, value in wanted.items() if value}

    def audit_filter(self) -> Q:
        """The audits of this judge's verdicts (an audit records the judge it audits)."""
        return Q(**self._verdict_filter())

    def decision_filter(self) -> Q:
        """The decisions taken on a verdict of this judge: the latest original verdict
        of the decided attempt made before the decision."""
        wanted = self._verdict_filter()
        if not wanted:
            return Q()
        seen = (
            ValidationSnapshot.objects.originals()
            .filter(
                task_id=OuterRef(OuterRef("task_id")),
                attempt_index=OuterRef(OuterRef("attempt_index")),
                created_at__lte=OuterRef(OuterRef("created_at")),
            )
            .order_by("-created_at", "-id")
            .values("pk")[:1]
        )
        return Q(Exists(ValidationSnapshot.objects.filter(pk=Subquery(seen), **wanted)))


def _record_reads(export: CaseExport, user: Any) -> None:
    """The export shows each case's verdict and route: a reviewer who exports a task
    with an open audit has seen its verdict (their judgement of it is not blind)."""
    channel = "the API (labelled cases export)"
    if export.queue in ("audit", "all"):
        audits = Audit.objects.done().filter(export.audit_filter()).values("task_id")
        audit_exposures_record(user=user, task_ids=audits, channel=channel)
    if export.queue in ("review", "all"):
        decided = Feedback.objects.filter(export.decision_filter()).values("task_id")
        audit_exposures_record(user=user, task_ids=decided, channel=channel)


def labelled_case_lines(export: CaseExport, *, user: Any) -> Iterator[str]:
    """The cases as JSON Lines, oldest first, built one at a time as the caller reads
    them (``manage.py judge_bench --cases-file`` reads the result as it is). Checks the
    period (InvalidInput) and records the read for ``user`` now, before the first line."""
    export = export.checked()
    _record_reads(export, user)
    cases = iter_labelled_cases(
        since=export.since,
        until=export.until,
        queue=export.queue,
        decisions=export.decision_filter(),
        audits=export.audit_filter(),
    )
    return (json.dumps(case, ensure_ascii=False) + "\n" for case in cases)
