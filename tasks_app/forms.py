"""Forms of the review UI. They validate input; the services decide what is allowed."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from evidence_app.models import FailureCategory, ValidationStatus
from tasks_app.agents.plans import parse_plan
from tasks_app.models import ValidationPolicy

FEEDBACK_CHOICES = [
    ("satisfied", "Satisfied"),
    ("revise", "Revise"),
    ("abandon", "Abandon"),
]


def validate_plan(raw: dict[str, Any]) -> dict[str, Any]:
    """Check a team plan with the runtime's schema (``tasks_app.agents.plans``); the
    plan is stored as the person wrote it."""
    try:
        parse_plan(raw)
    except Exception as exc:  # InvalidInput with pydantic's message
        message = getattr(exc, "message", None) or str(exc)
        raise forms.ValidationError(f"The plan is not valid: {message}") from None
    return raw


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
    # The task version the person saw: a changed task refuses the action (U3).
    version = forms.IntegerField(min_value=0)
    return_to = forms.CharField(required=False, max_length=20)
    filters = forms.CharField(required=False, max_length=2000)


class NoteForm(forms.Form):
    comment = forms.CharField(max_length=20_000, widget=forms.Textarea(attrs={"rows": 2}))


CLAIM_CHOICES = [
    ("", "Any claim"),
    ("unclaimed", "Unclaimed"),
    ("claimed", "Claimed"),
    ("mine", "Claimed by me"),
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
    claimed = forms.ChoiceField(required=False, choices=CLAIM_CHOICES, label="Claim")
    assigned = forms.ChoiceField(required=False, choices=ASSIGNED_CHOICES, label="Assigned")
