"""Reconciliation: the application's check of the model's verdict.

Deterministic and applied after citation verification, before any transition. The
model's status is kept as ``model_status``; the reconciled status becomes ``status``
(transitions, agreement and the API use it), and every reason is stored in
``reconciliation``:

1. ``validator_error`` and ``insufficient_evidence`` stand as they are.
2. ``accepted`` stands only if the verdict lists at least one claim and one
   requirement, every claim is ``supported`` with at least one verified citation that
   supports it and none that contradicts it (a disputed claim), and every requirement
   is met (``yes``). Otherwise it becomes ``insufficient_evidence``
   (a person looks) with one reason per failure: "citation R3 not found in the
   evidence", "claim 2 has no verified support", "requirement 'eligibility' not met".
3. ``rejected`` for a contradiction (category ``unsupported_claim`` or none) stands
   only if some claim is ``contradicted`` with a verified citation of the contradicting
   text; otherwise it becomes ``insufficient_evidence``. ``rejected`` for a missed goal,
   an incomplete answer, a refusal, a broken rule or the wrong tone needs no citation.
"""

from __future__ import annotations

from collections.abc import Iterable

from evidence_app.validator.schema import Claim, ValidationResult

# Rejections that are about the task, not about what the evidence says.
NO_CITATION_NEEDED = frozenset(
    {"goal_missed", "incomplete", "refusal", "rule_violation", "tone_mismatch"}
)


def _claim_name(claim: Claim, position: int) -> str:
    return f"claim {claim.id or position}"


def _accept_problems(result: ValidationResult) -> list[str]:
    problems: list[str] = []
    if not result.claims:
        problems.append("the verdict lists no claims, so no support could be verified")
    for position, claim in enumerate(result.claims, start=1):
        name = _claim_name(claim, position)
        for citation in claim.citations:
            if not citation.verified:
                problems.append(citation.problem or f"citation {citation.ref} is unverified")
        if claim.verdict != "supported":
            problems.append(f"{name} is {claim.verdict}")
        elif not any(c.stance == "supports" for c in claim.verified_citations):
            problems.append(f"{name} has no verified support")
        elif claim.disputed:
            problems.append(f"{name} is disputed: another source states otherwise")
    if not result.requirements:
        problems.append("the verdict lists no requirements, so goal achievement is unchecked")
    for requirement in result.requirements:
        if requirement.met != "yes":
            met = "only partly met" if requirement.met == "partly" else "not met"
            problems.append(f"requirement '{requirement.text}' {met}")
    return problems


def _claims_category(result: ValidationResult) -> str | None:
    """The category the claims give a demoted verdict: ``unsupported_claim`` when some
    claim lacks verified support (so lists show why), else none."""
    for claim in result.claims:
        if claim.verdict == "unsupported" or not claim.verified_citations:
            return "unsupported_claim"
    return None


def _has_verified_contradiction(result: ValidationResult) -> bool:
    return any(c.verdict == "contradicted" and c.verified_citations for c in result.claims)


def reconcile(result: ValidationResult) -> ValidationResult:
    """The verdict the application stands behind (rules in the module docstring)."""
    model_status = result.model_status or result.status
    if model_status == "accepted":
        return _reconciled_accept(result, model_status)
    if model_status == "rejected":
        return _reconciled_reject(result, model_status)
    return _kept(result, model_status, model_status, f"{model_status}: kept")


def _kept(result: ValidationResult, model_status: str, status: str, why: str) -> ValidationResult:
    return result.model_copy(
        update={"model_status": model_status, "status": status, "reconciliation": [why]}
    )


def _demoted(
    result: ValidationResult, model_status: str, reasons: list[str], category: str | None
) -> ValidationResult:
    """``insufficient_evidence``, with ``reasons`` (the first says what became of the
    model's status) and the issues they add."""
    return result.model_copy(
        update={
            "model_status": model_status,
            "status": "insufficient_evidence",
            "failure_category": category,
            "issues": _unique([*result.issues, *reasons[1:]]),
            "reconciliation": reasons,
        }
    )


def _reconciled_accept(result: ValidationResult, model_status: str) -> ValidationResult:
    problems = _accept_problems(result)
    if not problems:
        return _kept(result, model_status, "accepted", "accepted: every claim has verified support")
    reasons = ["the model's 'accepted' became 'insufficient_evidence'", *_unique(problems)]
    return _demoted(result, model_status, reasons, _claims_category(result))


def _reconciled_reject(result: ValidationResult, model_status: str) -> ValidationResult:
    category = result.failure_category
    if category in NO_CITATION_NEEDED:
        return _kept(result, model_status, "rejected", f"rejected ({category}): no citation needed")
    if _has_verified_contradiction(result):
        return _kept(
            result,
            model_status,
            "rejected",
            "rejected: the contradicting text is quoted and verified",
        )
    problems = [c.problem for claim in result.claims for c in claim.citations if not c.verified]
    reasons = [
        "the model's 'rejected' became 'insufficient_evidence'",
        "no contradicted claim has a verified citation of the contradicting text",
        *_unique(p for p in problems if p),
    ]
    return _demoted(result, model_status, reasons, None)


def _unique(items: Iterable[str | None]) -> list[str]:
    seen: list[str] = []
    for item in items:
        if item and item not in seen:
            seen.append(item)
    return seen
