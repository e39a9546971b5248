"""The validator, as tasks_app sees it.

tasks_app sends an attempt's answer to be judged, reads the verdicts back and hands over
the labels a person gives the verdict's claims with a decision, but the
validator lives in evidence_app, which builds on tasks_app: evidence_app registers its
implementation when Django starts (``EvidenceAppConfig.ready``), and tasks_app never
imports it (the import contracts in pyproject.toml say so). The hand-off carries the
domain's operations only: the tasks API's verdict fields are built by evidence_app's API
(``tasks_app.api.verdict_fields``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from tasks_app.workflow.models import Feedback, Task

REJECTED = "rejected"


@dataclass(frozen=True)
class Verdict:
    """The latest original verdict (not a replay) on one attempt."""

    id: int
    attempt_index: int
    status: str
    score: float | None
    failure_category: str | None
    # The stored ValidationResult: issues, missing requirements, evidence gaps, the
    # recommended revision prompt, reasoning, claims.
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == "accepted"

    @property
    def rejected(self) -> bool:
        return self.status == REJECTED


class Validator(Protocol):
    def enqueue(self, task_id: int, attempt_index: int, *, job_id: str, countdown: float) -> str:
        """Queue the validation of the attempt once the current transaction commits;
        returns the job id (recorded on the task)."""
        ...

    def verdict(self, task_id: int, attempt_index: int | None = None) -> Verdict | None:
        """The latest original verdict on ``attempt_index`` (on any attempt when None)."""
        ...

    def rendered_evidence(self, task: Task, attempt_index: int) -> str:
        """The attempt's evidence as the validator reads it: full, unabridged."""
        ...

    def attempt_verdicts(self, task_id: int) -> dict[int, tuple[int, str]]:
        """(id, status) of the latest original verdict of each attempt that has one."""
        ...

    def decision_claim_labels_record(
        self,
        decision: Feedback,
        labels: Sequence[Mapping[str, Any]],
        *,
        actor: Any,
        validation_id: int | None,
    ) -> None:
        """Store the person's label of each claim of the verdict ``decision`` was taken on,
        in the decision's transaction; raise a DomainError (nothing stored) for a claim the
        verdict does not have, an unknown label, another task's evidence (InvalidInput) or
        a ``validation_id`` that is not that verdict (StaleAction)."""
        ...


_registered: list[Validator] = []


def register_validator(validator: Validator) -> None:
    _registered[:] = [validator]


def validator() -> Validator:
    if not _registered:
        raise ImproperlyConfigured(
            "No validator is registered: evidence_app must be in INSTALLED_APPS."
        )
    return _registered[0]
