"""What the portal's new-task form accepts."""

from __future__ import annotations

import json
from typing import Any

from django import forms

from evidence_app.validation.task_settings import second_model_checked
from project.errors import DomainError
from tasks_app.actions import parse_plan
from tasks_app.records import ValidationPolicy


def validate_plan(raw: dict[str, Any]) -> dict[str, Any]:
    """Check a team plan with the runtime's schema (``tasks_app.runtime.agents.plans``); the
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
