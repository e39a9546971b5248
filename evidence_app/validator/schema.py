"""The validator's result schema.

``passed`` is derived from ``status`` and never set on its own: a value the model
sends for it is ignored, and it is recomputed on every access.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, field_validator

StatusName = Literal["accepted", "rejected", "insufficient_evidence", "validator_error"]
CategoryName = Literal[
    "goal_missed", "incomplete", "rule_violation", "tone_mismatch", "refusal", "unsupported_claim"
]

STATUSES: tuple[str, ...] = ("accepted", "rejected", "insufficient_evidence", "validator_error")
CLAIM_VERDICTS: tuple[str, ...] = ("supported", "contradicted", "unsupported")


ClaimVerdict = Literal["supported", "contradicted", "unsupported"]
# What a cited passage does to its claim: states it, or states something else (another
# figure, another name). A claim with verified citations of both kinds is disputed.
CitationStance = Literal["supports", "contradicts"]
RequirementMet = Literal["yes", "partly", "no"]


class Citation(BaseModel):
    """One quote the validator cites for a claim. ``ref`` is the ``R<n>`` label of a tool
    result in the rendered evidence. The other fields are filled by the application's
    mechanical check (``evidence_app.validator.citations``), never trusted from the model."""

    model_config = ConfigDict(extra="ignore")

    ref: str = ""
    quote: str = ""
    stance: CitationStance = "supports"
    verified: bool = False
    evidence_id: int | None = None
    start: int | None = None  # character offsets of the quote in the stored content
    end: int | None = None
    problem: str = ""  # why it is unverified ("" when verified)


class Claim(BaseModel):
    """One claim of the answer, as it stands in the answer, with its verdict."""

    model_config = ConfigDict(extra="ignore")

    id: str = ""
    text: str = ""
    verdict: ClaimVerdict = "unsupported"
    citations: list[Citation] = Field(default_factory=list)
    note: str = ""
    # The judge's confidence in this claim's verdict, 0 to 1; None if not given.
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: object) -> object:
        return str(value) if isinstance(value, int) else value

    @property
    def verified_citations(self) -> list[Citation]:
        return [c for c in self.citations if c.verified]

    @property
    def disputed(self) -> bool:
        """One verified source states the claim and another verified source states
        otherwise: a person decides which is right."""
        stances = {c.stance for c in self.verified_citations}
        return self.verdict == "supported" and stances == {"supports", "contradicts"}


class Requirement(BaseModel):
    """One thing the request asks for, and whether the answer meets it."""

    model_config = ConfigDict(extra="ignore")

    text: str = ""
    met: RequirementMet = "no"
    claim_ids: list[str] = Field(default_factory=list)

    @field_validator("claim_ids", mode="before")
    @classmethod
    def _ids_as_text(cls, value: object) -> object:
        if isinstance(value, list):
            return [str(v) if isinstance(v, int) else v for v in value]
        return value


class ValidationResult(BaseModel):
    """One validator verdict. ``status`` is the business decision; ``passed`` follows it."""

    # Unknown keys (including a model-sent "passed") are ignored, not errors: the schema
    # is strict about what we rely on, lenient about what we do not read.
    model_config = ConfigDict(extra="ignore")

    status: StatusName
    score: float | None = Field(default=None, ge=0.0, le=1.0)
    issues: list[str] = Field(default_factory=list)
    missing_requirements: list[str] = Field(default_factory=list)
    evidence_gaps: list[str] = Field(default_factory=list)
    recommended_revision_prompt: str = ""
    failure_category: CategoryName | None = None
    reasoning: str = ""
    claims: list[Claim] = Field(default_factory=list)
    requirements: list[Requirement] = Field(default_factory=list)
    # Filled by reconciliation (never by the model): the model's own status before the
    # application checked its citations, and every reason the status was changed or kept.
    model_status: StatusName | None = None
    reconciliation: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return self.status == "accepted"

    @classmethod
    def validator_error(cls, reason: str) -> ValidationResult:
        """The verdict recorded when no reliable decision could be made."""
        return cls(status="validator_error", issues=[reason], reasoning=reason)


# Shown to the model in the system prompt (templates insert it as {schema}).
SCHEMA_DESCRIPTION = """{
  "status": "accepted" | "rejected" | "insufficient_evidence",
  "score": number between 0 and 1 (your confidence that the answer is supported by the
           evidence AND does what was asked: 0.5 when you cannot tell, above 0.9 only when
           every claim has a verbatim quote and every requirement is met; on "rejected",
           how likely it is that the answer is nonetheless fine),
  "issues": [string, ...],
  "missing_requirements": [string, ...],
  "evidence_gaps": [string, ...],
  "recommended_revision_prompt": string (what the agent should do differently; "" if accepted),
  "failure_category": one of "goal_missed", "incomplete", "rule_violation", "tone_mismatch",
                      "refusal", "unsupported_claim", or null,
  "reasoning": string (short: goal, completeness, rule compliance, trajectory),
  "claims": [
    {
      "id": string ("1", "2", ...),
      "text": string (the claim exactly as it stands in the answer),
      "verdict": "supported" | "contradicted" | "unsupported",
      "citations": [{"ref": "R<n>", "quote": string (copied verbatim from that tool result),
                     "stance": "supports" | "contradicts" (does the quote state the claim,
                               or state something else about it, e.g. another figure?)}],
      "note": string,
      "confidence": number between 0 and 1 (how sure you are of this claim's verdict)
    }, ...
  ],
  "requirements": [
    {"text": string (one thing the request asks for), "met": "yes" | "partly" | "no",
     "claim_ids": [string, ...]}, ...
  ]
}"""


def stored_claim_disputed(claim: dict[str, object]) -> bool:
    """``Claim.disputed`` of a claim as stored (a dict of ``ValidationSnapshot.result``)."""
    citations = claim.get("citations")
    stances = {
        c.get("stance") or "supports"
        for c in (citations if isinstance(citations, list) else [])
        if isinstance(c, dict) and c.get("verified")
    }
    return claim.get("verdict") == "supported" and stances == {"supports", "contradicts"}


def claim_summary(result: dict[str, object] | None) -> dict[str, object]:
    """Counts of claim verdicts in a stored result (``disputed`` counts the supported
    claims another source contradicts), unverified citations, and the first disputed,
    unsupported or contradicted claim (for list pages). Old results count zero claims."""
    claims = (result or {}).get("claims") or []
    counts: dict[str, int] = dict.fromkeys(CLAIM_VERDICTS, 0)
    disputed = 0
    unverified = 0
    first_problem: dict[str, str] | None = None
    for claim in claims if isinstance(claims, list) else []:
        if not isinstance(claim, dict):
            continue
        verdict = str(claim.get("verdict") or "unsupported")
        counts[verdict] = counts.get(verdict, 0) + 1
        unverified += sum(
            1 for c in claim.get("citations") or [] if isinstance(c, dict) and not c.get("verified")
        )
        if stored_claim_disputed(claim):
            disputed += 1
            verdict = "disputed"
        if first_problem is None and verdict in ("disputed", "contradicted", "unsupported"):
            first_problem = {
                "id": str(claim.get("id") or ""),
                "text": str(claim.get("text") or ""),
                "verdict": verdict,
            }
    return {
        **counts,
        "disputed": disputed,
        "total": sum(counts.values()),
        "unverified_citations": unverified,
        "first_problem": first_problem,
    }


def stored_result(result: object) -> ValidationResult:
    """A stored ``ValidationSnapshot.result`` as a ``ValidationResult`` (old results
    without claims read as empty lists); unreadable JSON reads as a validator error."""
    if not isinstance(result, dict):
        return ValidationResult.validator_error("no stored result")
    try:
        return ValidationResult.model_validate({"status": "validator_error", **result})
    except ValueError:
        claims_free = {k: v for k, v in result.items() if k not in ("claims", "requirements")}
        try:
            return ValidationResult.model_validate({"status": "validator_error", **claims_free})
        except ValueError:
            return ValidationResult.validator_error("the stored result is not readable")
