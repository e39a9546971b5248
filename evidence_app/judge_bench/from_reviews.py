"""The team's own labelled cases: every decided task and every judged audit, in
judge_bench's case format (docs/validator.md, "Labels from reviewers").

- A decision that counts (``applied``; never a pending, undone or void one) on an
  attempt: ``satisfied`` labels the answer correct (expected ``accepted``), ``revise`` and
  ``abandon`` label it wrong (expected ``rejected``). The validator's own verdict never
  makes the label: an answer it sent to a person as ``insufficient_evidence`` is labelled
  by what the person then decided.
- A judged audit: ``correct`` → ``accepted``, ``not correct`` → ``rejected``; only the
  audits that certify a threshold (``certifying_audits``): one judged after its judge had
  read the verdict (not blind), or by the task's requester, is left out, with its claim
  labels.
- The claim labels given with the decision or the audit become ``expected.claims``.

Each case carries the attempt's request, rules, every tool result of its runs and its
answer, in dataset ``team``; its half (``dev`` / ``heldout``) follows a stable hash of the
task id, so every case of one task lands in the same half. An attempt without an answer
(abandoned before one was produced) has nothing to judge and is left out.
"""

from __future__ import annotations

import hashlib
import heapq
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from typing import Any

from django.db.models import Q
from django.utils import timezone

from evidence_app.autoaccept.selectors import certifying_audits
from evidence_app.models import ClaimLabel
from evidence_app.packets.task_packet import build_packet
from tasks_app.records import Feedback, FeedbackAction, Task

__all__ = ["DATASET", "QUEUES", "iter_labelled_cases", "labelled_cases", "team_split"]

DATASET = "team"
QUEUES = ("review", "audit", "all")
DECISIONS = (FeedbackAction.SATISFIED, FeedbackAction.REVISE, FeedbackAction.ABANDON)


def team_split(task_id: int) -> str:
    """``dev`` or ``heldout`` by a hash of the task id: stable across exports and
    machines, about half each."""
    digest = hashlib.sha256(f"evidentia-task-{task_id}".encode()).digest()
    return "dev" if digest[0] % 2 == 0 else "heldout"


def _start(value: date | datetime | None) -> datetime | None:
    """A datetime as given; a date as the start of that day (current time zone)."""
    if value is None or isinstance(value, datetime):
        return value
    return timezone.make_aware(datetime.combine(value, time.min))


def _end(value: date | datetime | None) -> datetime | None:
    """A datetime as given; a date as the start of the next day (the day is included)."""
    if value is None or isinstance(value, datetime):
        return value
    return timezone.make_aware(datetime.combine(value + timedelta(days=1), time.min))


def labelled_cases(
    *,
    since: date | datetime | None = None,
    until: date | datetime | None = None,
    queue: str = "all",
) -> list[dict[str, Any]]:
    """Every decided task (``queue="review"``) and every judged audit (``"audit"``), or
    both (``"all"``), decided from ``since`` up to ``until`` (dates include the whole
    day), as judge_bench cases, oldest first."""
    return list(iter_labelled_cases(since=since, until=until, queue=queue))


def iter_labelled_cases(
    *,
    since: date | datetime | None = None,
    until: date | datetime | None = None,
    queue: str = "all",
    decisions: Q | None = None,
    audits: Q | None = None,
) -> Iterator[dict[str, Any]]:
    """``labelled_cases`` one case at a time (for a streamed export); ``decisions`` and
    ``audits``, when given, narrow the decisions and audits read (e.g. to one judge's)."""
    if queue not in QUEUES:
        raise ValueError(f"queue {queue!r}: use one of {', '.join(QUEUES)}")
    start, end = _start(since), _end(until)
    streams: list[Iterator[tuple[datetime, dict[str, Any]]]] = []
    if queue in ("review", "all"):
        streams.append(_decision_cases(start, end, decisions))
    if queue in ("audit", "all"):
        streams.append(_audit_cases(start, end, audits))
    for _, case in heapq.merge(*streams, key=lambda pair: (pair[0], pair[1]["id"])):
        yield case


def _decision_cases(
    start: datetime | None, end: datetime | None, narrow: Q | None = None
) -> Iterator[tuple[datetime, dict[str, Any]]]:
    decisions = (
        Feedback.objects.in_effect()
        .filter(narrow or Q(), action__in=DECISIONS)
        .select_related("task")
    )
    if start is not None:
        decisions = decisions.filter(created_at__gte=start)
    if end is not None:
        decisions = decisions.filter(created_at__lt=end)
    for decision in decisions.order_by("created_at", "id").iterator(chunk_size=200):
        satisfied = decision.action == FeedbackAction.SATISFIED
        case = _case(
            decision.task,
            decision.attempt_index,
            case_id=f"team-decision-{decision.pk}",
            category=f"review_{decision.action}",
            correct=satisfied,
            labels=ClaimLabel.objects.filter(feedback=decision),
            source={
                "queue": "review",
                "feedback_id": decision.pk,
                "decision": decision.action,
                "validator_status": decision.validator_status,
                "decided_at": decision.created_at.isoformat(),
            },
        )
        if case is not None:
            yield decision.created_at, case


def _audit_cases(
    start: datetime | None, end: datetime | None, narrow: Q | None = None
) -> Iterator[tuple[datetime, dict[str, Any]]]:
    # The audits that certify a threshold, and only they: a judgement given after its
    # author read the verdict (not blind), or by the task's requester, labels nothing.
    audits = certifying_audits().filter(narrow or Q(), decided_at__isnull=False)
    if start is not None:
        audits = audits.filter(decided_at__gte=start)
    if end is not None:
        audits = audits.filter(decided_at__lt=end)
    for audit in audits.select_related("task").order_by("decided_at", "id").iterator(200):
        assert audit.decided_at is not None  # filtered above; for the type checker
        case = _case(
            audit.task,
            audit.attempt_index,
            case_id=f"team-audit-{audit.pk}",
            category="audit_correct" if audit.correct else "audit_not_correct",
            correct=bool(audit.correct),
            labels=ClaimLabel.objects.filter(audit=audit),
            source={
                "queue": "audit",
                "audit_id": audit.pk,
                "route": audit.route,
                "validation_id": audit.snapshot_id,
                "decided_at": audit.decided_at.isoformat(),
            },
        )
        if case is not None:
            yield audit.decided_at, case


def _case(
    task: Task,
    attempt_index: int,
    *,
    case_id: str,
    category: str,
    correct: bool,
    labels: Any,
    source: dict[str, Any],
) -> dict[str, Any] | None:
    packet = build_packet(task, attempt_index)
    answer = packet.final_output.strip()
    if not answer:
        return None
    results = [item for run in packet.all_runs for item in run.tool_results]
    position = {item.evidence_id: index for index, item in enumerate(results)}
    return {
        "id": case_id,
        "dataset": DATASET,
        "split": team_split(task.pk),
        "category": category,
        "kind": "correct" if correct else "wrong",
        "source": {"task_id": task.pk, "attempt_index": attempt_index, **source},
        "request": task.request,
        "rules": task.rules,
        "evidence": [
            {"title": item.title or item.tool_name, "content": item.content} for item in results
        ],
        "answer": packet.final_output,
        "expected": {
            "status": "accepted" if correct else "rejected",
            "claims": [_expected_claim(label, position) for label in labels],
        },
    }


def _expected_claim(label: ClaimLabel, position: dict[int, int]) -> dict[str, Any]:
    claim: dict[str, Any] = {
        "text": label.claim_text,
        "verdict": label.label,
        "validator_verdict": label.judge_verdict,
    }
    citation = label.corrected_citation or {}
    if citation:
        # The case's evidence is numbered by position; the stored id is kept beside it.
        claim["corrected_citation"] = {
            "evidence": position.get(citation.get("evidence_id", -1)),
            "evidence_id": citation.get("evidence_id"),
            "quote": citation.get("quote", ""),
        }
    return claim
