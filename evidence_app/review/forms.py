"""Forms of the task pages, the review queue and the blind audit page."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from django import forms

from evidence_app.models import ClaimStance, FailureCategory, ValidationStatus
from evidence_app.trust.audits import AUDIT_COMMENT_MAX
from evidence_app.validation.claims import CLAIM_STATES
from project.errors import DomainError, InvalidInput
from tasks_app.actions import parse_plan, second_model_checked
from tasks_app.records import ValidationPolicy

FEEDBACK_CHOICES = [
    ("satisfied", "Satisfied"),
    ("revise", "Revise"),
    ("abandon", "Abandon"),
]


def validate_plan(raw: dict[str, Any]) -> dict[str, Any]:
    """Check a team plan with the runtime's schema (``tasks_app.runtime.agents.plans``); the
    plan is stored as the person wrote it."""
    try:
        parse_plan(raw)
    except Exception as exc:  # InvalidInput with pydantic's message
        message = getattr(exc, "message", None) or str(exc)
        raise forms.ValidationError(f"The plan is not valid: {message}") from None
    return raw


# A person's verdict on a claim, in the signs and words the claim marks use everywhere.
CLAIM_STANCE_CHOICES = [
    (state, f"{sign} {words}") for state, sign, words in CLAIM_STATES if state in ClaimStance.values
]


class TaskCreateForm(forms.Form):
    title = forms.CharField(
        max_length=300,
        required=False,
        help_text="Optional; defaults to the first line of the request.",
    )
    request = forms.CharField(widget=forms.Textarea(attrs={"rows": 7}), max_length=200_000)
    rules = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        max_length=50_000,
        help_text="Constraints the answer must follow; the validator checks them.",
    )
    plan = forms.CharField(
        widget=forms.Textarea(
            attrs={
                "rows": 6,
                "placeholder": (
                    '{"kind": "team", "mode": "parallel", "nodes": ['
                    '{"id": "policy", "role": "Policy reader"}, '
                    '{"id": "costs", "role": "Cost checker"}]}'
                ),
            }
        ),
        required=False,
        max_length=50_000,
        help_text=(
            "Optional team plan as JSON (nodes with roles and a graph mode). Empty = single agent."
        ),
    )
    validation_policy = forms.ChoiceField(
        choices=ValidationPolicy.choices, initial=ValidationPolicy.ALWAYS
    )
    validation_keywords = forms.CharField(
        required=False,
        max_length=2000,
        label="Keywords",
        help_text="For the keyword policy: words separated by commas; the answer is "
        "validated when the request mentions one of them.",
    )
    second_model = forms.CharField(
        required=False,
        max_length=200,
        label="Second judge",
        help_text="Optional: a second validator model (e.g. openai:gpt-4.1); when the two "
        "disagree, a person decides. Empty: the default; none: no second judge.",
    )

    def clean_second_model(self) -> str:
        try:
            return second_model_checked(self.cleaned_data.get("second_model", ""))
        except DomainError as exc:
            raise forms.ValidationError(exc.message) from None

    audit_rate = forms.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        label="Audit rate of accepted answers",
        help_text="The share (0 to 1) of this task's answers the validator accepts that a "
        "person audits blind; empty: the site's AUDIT_RATE, which is also the floor (only "
        "operators may go below it, saying why).",
    )
    audit_reject_rate = forms.FloatField(
        required=False,
        min_value=0,
        max_value=1,
        label="Audit rate of rejected answers",
        help_text="The same for answers the validator rejects; empty: AUDIT_REJECT_RATE.",
    )
    audit_rate_reason = forms.CharField(
        required=False,
        max_length=2000,
        label="Why a rate below the floor (operators)",
        help_text="Recorded with your name; required to set a rate below the site's floor.",
    )

    def clean_validation_keywords(self) -> list[str]:
        raw = self.cleaned_data.get("validation_keywords", "")
        return [w.strip() for w in raw.split(",") if w.strip()]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("validation_policy") == ValidationPolicy.KEYWORDS and not data.get(
            "validation_keywords"
        ):
            self.add_error(
                "validation_keywords", "Name at least one keyword for the keyword policy."
            )
        return data

    def clean_plan(self) -> dict[str, Any]:
        raw = self.cleaned_data.get("plan", "").strip()
        if not raw:
            return {}
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"The plan is not valid JSON: {exc.msg} (line {exc.lineno})."
            ) from None
        if not isinstance(value, dict):
            raise forms.ValidationError("The plan must be a JSON object.")
        return validate_plan(value)


class FeedbackForm(forms.Form):
    action = forms.ChoiceField(choices=FEEDBACK_CHOICES)
    comment = forms.CharField(required=False, max_length=20_000)
    # The task version the person saw: a changed task refuses the action.
    version = forms.IntegerField(min_value=0)
    return_to = forms.CharField(required=False, max_length=20)
    filters = forms.CharField(required=False, max_length=2000)

    # The browser refuses an empty comment (the box is ``required``); a comment of spaces,
    # or a client without that check, is refused here, beside the field.
    REVISE_NEEDS_COMMENT = "Say what should change: a revision needs a comment."

    # Optional: a remark with Satisfied, a reason to abandon; each
    # action reads its own box, so text left in a closed one never goes with another.
    satisfied_comment = forms.CharField(required=False, max_length=20_000)
    abandon_reason = forms.CharField(required=False, max_length=20_000)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("action") == "revise" and not data.get("comment", "").strip():
            self.add_error("comment", self.REVISE_NEEDS_COMMENT)
        if data.get("action") == "satisfied" and data.get("satisfied_comment"):
            data["comment"] = data["satisfied_comment"]
        elif data.get("action") == "abandon" and data.get("abandon_reason"):
            data["comment"] = data["abandon_reason"]
        elif data.get("action") != "revise" and self.data.get("return_to") != "queue":
            data["comment"] = ""
        return data


# The decision form's claim verdicts (templates/evidence_app/_claim_labels.html): one
# ``claim_label_<i>`` per claim of the validation ``claims_snapshot``, with an optional
# corrected citation in ``claim_evidence_<i>`` and ``claim_quote_<i>``.
CLAIM_LABEL_FIELD = re.compile(r"^claim_label_(\d{1,4})$")


def claim_labels_from_post(data: Mapping[str, Any]) -> tuple[int | None, list[dict[str, Any]]]:
    """The validation the person labelled and their labels, in claim order; claims left
    "not labelled" are skipped. A corrected citation without a verdict, or without its
    evidence item, is refused (InvalidInput) rather than dropped."""
    labels: list[dict[str, Any]] = []
    indexes = sorted(int(m[1]) for key in data if (m := CLAIM_LABEL_FIELD.match(key)))
    for index in indexes:
        label = str(data.get(f"claim_label_{index}", "")).strip()
        evidence = str(data.get(f"claim_evidence_{index}", "")).strip()
        quote = str(data.get(f"claim_quote_{index}", "")).strip()
        if not label:
            if evidence or quote:
                raise InvalidInput(f"claim {index + 1}: give your verdict with the citation")
            continue
        entry: dict[str, Any] = {"claim_index": index, "label": label}
        if evidence or quote:
            if not evidence.isdigit() or not quote:
                raise InvalidInput(
                    f"claim {index + 1}: a corrected citation needs an evidence item and a quote"
                )
            entry["corrected_citation"] = {"evidence_id": int(evidence), "quote": quote}
        labels.append(entry)
    snapshot = str(data.get("claims_snapshot", "")).strip()
    return (int(snapshot) if snapshot.isdigit() else None), labels


class NoteForm(forms.Form):
    comment = forms.CharField(max_length=20_000, widget=forms.Textarea(attrs={"rows": 2}))


# The review lock, called "Reviewer" beside the validator's "Claims" ("Claim"
# and "Claims" side by side meant two different things).
CLAIM_CHOICES = [
    ("", "Anyone or no one"),
    ("unclaimed", "No reviewer on it"),
    ("claimed", "A reviewer on it"),
    ("mine", "Me"),
]


ASSIGNED_CHOICES = [
    ("", "Anyone or no one"),
    ("mine", "Assigned to me"),
    ("unassigned", "Not assigned"),
]

QUEUE_FILTER_KEYS = ("q", "category", "vstatus", "claimed", "assigned")


class QueueFilterForm(forms.Form):
    q = forms.CharField(required=False, max_length=200, label="Search title")
    category = forms.ChoiceField(
        required=False,
        choices=[("", "Any category"), *FailureCategory.choices],
        label="Failure category",
    )
    vstatus = forms.ChoiceField(
        required=False,
        choices=[("", "Any verdict"), *ValidationStatus.choices, ("none", "No verdict")],
        label="Validator status",
    )
    claimed = forms.ChoiceField(required=False, choices=CLAIM_CHOICES, label="Reviewer")
    assigned = forms.ChoiceField(required=False, choices=ASSIGNED_CHOICES, label="Assigned")


class AuditJudgeForm(forms.Form):
    """A person's blind call on an audit: correct or not (a comment required when not),
    and an optional verdict on each of the answer's claims (``claim_<index>``)."""

    correct = forms.ChoiceField(
        choices=[("correct", "Correct"), ("not_correct", "Not correct")],
        widget=forms.RadioSelect,
        error_messages={"required": "Say whether the answer is correct."},
    )
    comment = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), required=False, max_length=AUDIT_COMMENT_MAX
    )

    def __init__(self, *args: Any, claims: list[dict[str, Any]] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.claims = claims or []
        for claim in self.claims:
            self.fields[f"claim_{claim['index']}"] = forms.ChoiceField(
                choices=[("", "No verdict"), *CLAIM_STANCE_CHOICES], required=False
            )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("correct") == "not_correct" and not (data.get("comment") or "").strip():
            self.add_error("comment", 'Say what is wrong: a "not correct" needs a comment.')
        return data

    def claim_labels(self) -> list[dict[str, Any]]:
        """The claims given a verdict, as ``claim_labels_record`` takes them."""
        return [
            {"claim_index": claim["index"], "label": self.cleaned_data[f"claim_{claim['index']}"]}
            for claim in self.claims
            if self.cleaned_data.get(f"claim_{claim['index']}")
        ]

    def claim_rows(self) -> list[tuple[dict[str, Any], forms.BoundField]]:
        return [(claim, self[f"claim_{claim['index']}"]) for claim in self.claims]
