"""People's per-claim verdicts (issue 27): recorded while a reviewer decides a task or a
person judges an audit, against the claims of the validation they looked at."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evidence_app.models import Audit, ClaimLabel, ClaimStance, ValidationSnapshot
from project.errors import InvalidInput
from tasks_app.models import Feedback

__all__ = ["claim_labels_record", "snapshot_claims"]


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
