"""People's per-claim verdicts: recorded while a person decides a task (with the decision,
``task_decide`` hands them over through the validator port: the page and the tasks API
alike), after it (the claim-labels API) or while a person judges an audit, against the
claims of the validation they looked at."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import transaction

from evidence_app.models import Audit, ClaimLabel, ClaimStance, ValidationSnapshot
from project.errors import Forbidden, InvalidInput, StaleAction
from tasks_app.records import DecisionState, Feedback, FeedbackAction, ToolEvidence

__all__ = [
    "claim_labels_record",
    "corrected_citations_check",
    "decision_claim_labels_add",
    "decision_claim_labels_record",
    "labelled_snapshot",
    "snapshot_claims",
]


def snapshot_claims(snapshot: ValidationSnapshot) -> list[dict[str, Any]]:
    """The claims of a validation's result, in order (index = position)."""
    claims = (snapshot.result or {}).get("claims") or []
    return [c for c in claims if isinstance(c, dict)]


def claim_labels_record(
    *,
    snapshot: ValidationSnapshot,
    labels: Iterable[Mapping[str, Any]],
    author: Any,
    feedback: Feedback | None = None,
    audit: Audit | None = None,
) -> list[ClaimLabel]:
    """Store one label per claim given: ``{"claim_index": int, "label": "supported" |
    "unsupported" | "contradicted", "corrected_citation": {"evidence_id": int, "quote":
    str} (optional)}``. Every entry is checked before anything is written: a claim index
    the snapshot does not have or an unknown label refuses the whole set. Run it in the
    transaction of the decision or audit it belongs to."""
    claims = snapshot_claims(snapshot)
    rows: list[ClaimLabel] = []
    seen: set[int] = set()
    for entry in labels:
        index = entry.get("claim_index")
        label = entry.get("label")
        if not isinstance(index, int) or not 0 <= index < len(claims):
            raise InvalidInput(
                f"claim_index {index!r}: this validation has {len(claims)} claims (0-based)"
            )
        if index in seen:
            raise InvalidInput(f"claim_index {index} is labelled twice")
        seen.add(index)
        if label not in ClaimStance.values:
            raise InvalidInput(
                f"label {label!r} for claim {index}: use one of {', '.join(ClaimStance.values)}"
            )
        citation = _citation(entry.get("corrected_citation"), index)
        claim = claims[index]
        rows.append(
            ClaimLabel(
                snapshot=snapshot,
                task_id=snapshot.task_id,
                claim_index=index,
                claim_text=str(claim.get("text", "")),
                label=label,
                judge_verdict=str(claim.get("verdict", "")),
                corrected_citation=citation,
                author=author if getattr(author, "is_authenticated", False) else None,
                feedback=feedback,
                audit=audit,
            )
        )
    return ClaimLabel.objects.bulk_create(rows)


def _citation(value: Any, index: int) -> dict[str, Any]:
    if not value:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInput(f"corrected_citation of claim {index} must be an object")
    evidence_id = value.get("evidence_id")
    quote = str(value.get("quote", "")).strip()
    if not isinstance(evidence_id, int) or not quote:
        raise InvalidInput(f"corrected_citation of claim {index} needs an evidence_id and a quote")
    return {"evidence_id": evidence_id, "quote": quote}


# --- Labels given with a decision ------------------------------------------------------------


def labelled_snapshot(task_id: int, *, before: Any = None) -> ValidationSnapshot | None:
    """The validation a reviewer labels: the task's latest original verdict (made before
    ``before`` when given: the one the decision was taken on)."""
    snapshots = ValidationSnapshot.objects.originals().filter(task_id=task_id)
    if before is not None:
        snapshots = snapshots.filter(created_at__lte=before)
    return snapshots.without_bodies().order_by("-created_at", "-id").first()


def corrected_citations_check(labels: list[Mapping[str, Any]], *, task_id: int) -> None:
    """Refuse (InvalidInput, 422) a corrected citation to evidence that does not exist or
    belongs to another task, on a decision and on an audit alike."""
    # Only ints are looked up here; any other value is refused by claim_labels_record.
    cited = {
        entry["corrected_citation"].get("evidence_id")
        for entry in labels
        if isinstance(entry, Mapping) and isinstance(entry.get("corrected_citation"), Mapping)
    }
    cited = {pk for pk in cited if isinstance(pk, int) and not isinstance(pk, bool)}
    known = set(
        ToolEvidence.objects.filter(task_id=task_id, pk__in=cited).values_list("pk", flat=True)
    )
    if cited - known:
        unknown = ", ".join(str(pk) for pk in sorted(cited - known))
        raise InvalidInput(f"corrected_citation: evidence {unknown} is not this task's")


def decision_claim_labels_record(
    decision: Feedback,
    labels: Sequence[Mapping[str, Any]],
    *,
    actor: Any,
    snapshot_id: int | None,
) -> list[ClaimLabel]:
    """The labels of ``decision``, on the validation it was taken on: refused whole
    (InvalidInput) for a task without one or a bad entry, StaleAction when ``snapshot_id``,
    the validation the person saw, is not that one. Run it in the decision's transaction
    (``task_decide`` does, through the validator port)."""
    snapshot = labelled_snapshot(decision.task_id, before=decision.created_at)
    if snapshot is None:
        raise InvalidInput(f"task {decision.task_id} has no validation whose claims to label")
    if snapshot_id is not None and snapshot_id != snapshot.pk:
        raise StaleAction(
            f"The claims you labelled are those of validation {snapshot_id}; the task's "
            f"latest is {snapshot.pk}. Reload the task and label its claims again."
        )
    corrected_citations_check(list(labels), task_id=decision.task_id)
    return claim_labels_record(snapshot=snapshot, labels=labels, author=actor, feedback=decision)


@transaction.atomic
def decision_claim_labels_add(
    *,
    task_id: int,
    actor: Any,
    labels: list[Mapping[str, Any]],
    feedback_id: int | None = None,
    snapshot_id: int | None = None,
) -> tuple[Feedback, list[ClaimLabel]]:
    """Claim labels for a decision already recorded (the claim-labels API, for a decision
    taken through the feedback endpoint without them). The decision is ``feedback_id`` or
    else the task's pending one; it must be the caller's own satisfied, revise or abandon,
    pending or applied (never undone or void), and not yet labelled: labels are given once
    per decision."""
    # Row lock: two label requests for one decision (a retry, a double click) are
    # serialised; the second finds the labels of the first and is refused.
    decisions = Feedback.objects.select_for_update().filter(task_id=task_id)
    if feedback_id is not None:
        decision = decisions.filter(pk=feedback_id).first()
    else:
        decision = decisions.filter(state=DecisionState.PENDING).first()
    if decision is None:
        raise Feedback.DoesNotExist(
            f"Task {task_id} has "
            + (f"no decision {feedback_id}." if feedback_id else "no pending decision.")
        )
    if decision.author_id is None or decision.author_id != getattr(actor, "pk", None):
        raise Forbidden("Only the person who decided can label the claims of their decision.")
    if decision.action == FeedbackAction.NOTE:
        raise InvalidInput("a note is not a decision: claims are labelled with a decision")
    if decision.state not in (DecisionState.PENDING, DecisionState.APPLIED):
        raise StaleAction(
            f"Decision {decision.pk} was {decision.get_state_display().lower()}: "
            "its claim labels would not count."
        )
    if ClaimLabel.objects.filter(feedback=decision).exists():
        raise StaleAction(f"The claims of decision {decision.pk} are already labelled.")
    if not labels:
        raise InvalidInput("claims: give at least one claim label")
    rows = decision_claim_labels_record(decision, labels, actor=actor, snapshot_id=snapshot_id)
    return decision, rows
