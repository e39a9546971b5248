"""The validator's result schema (SPEC V1).

``passed`` is derived from ``status`` and never set on its own: a value the model
sends for it is ignored, and it is recomputed on every access.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

StatusName = Literal["accepted", "rejected", "insufficient_evidence", "validator_error"]
CategoryName = Literal[
    "goal_missed", "incomplete", "rule_violation", "tone_mismatch", "refusal", "unsupported_claim"
]

STATUSES: tuple[str, ...] = ("accepted", "rejected", "insufficient_evidence", "validator_error")
CATEGORIES: tuple[str, ...] = (
    "goal_missed",
    "incomplete",
    "rule_violation",
    "tone_mismatch",
    "refusal",
    "unsupported_claim",
)

# The keys the runtime reads from ``ValidationSnapshot.result`` to build the retry prompt.
FEEDBACK_KEYS = (
    "issues",
    "failure_category",
    "recommended_revision_prompt",
    "missing_requirements",
    "evidence_gaps",
)


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

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return self.status == "accepted"

    @classmethod
    def validator_error(cls, reason: str) -> ValidationResult:
        """The verdict recorded when no reliable decision could be made (V8)."""
        return cls(status="validator_error", issues=[reason], reasoning=reason)


# Shown to the model in the system prompt (templates insert it as {schema}).
SCHEMA_DESCRIPTION = """{
  "status": "accepted" | "rejected" | "insufficient_evidence",
  "score": number between 0 and 1 (how well the answer is supported and complete),
  "issues": [string, ...],
  "missing_requirements": [string, ...],
  "evidence_gaps": [string, ...],
  "recommended_revision_prompt": string (what the agent should do differently; "" if accepted),
  "failure_category": one of "goal_missed", "incomplete", "rule_violation", "tone_mismatch",
                      "refusal", "unsupported_claim", or null,
  "reasoning": string (short: goal, completeness, rule compliance, trajectory)
}"""
