"""Forms of the operator pages: replay of one validation, bulk replay, and the
choices of the trust page."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from evidence_app.models import ValidationStatus
from project.llm.registry import ModelConfigurationError, resolve_model
from project.url_ids import MAX_ROW_ID
from tasks_app.records import TaskStatus


class ReplayForm(forms.Form):
    template = forms.ChoiceField(choices=[], required=False, label="Prompt template")
    model = forms.CharField(max_length=200, required=False, label="Validator model")

    def __init__(self, *args: Any, template_names: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = template_names or []
        _choice_field(self, "template").choices = [
            ("", "Same as the original"),
            *[(n, n) for n in names],
        ]
        self.fields["model"].initial = settings.VALIDATOR_MODEL
        self.fields[
            "model"
        ].help_text = (
            "e.g. offline:judge, openai:gpt-4.1, anthropic:claude-sonnet-4-5, compat:llama3"
        )

    def clean_model(self) -> str:
        """Check the name against the providers before anything is queued: an
        unknown provider or a missing API key is refused here, not in the worker."""
        name = self.cleaned_data.get("model", "").strip()
        if name:
            try:
                resolve_model(name)
            except ModelConfigurationError as exc:
                raise forms.ValidationError(exc.message) from None
        return name


class BulkReplayForm(forms.Form):
    """Filters for a bulk replay; the page shows the estimate before anything runs."""

    task_statuses = forms.MultipleChoiceField(
        choices=TaskStatus.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Task status",
    )
    validator_statuses = forms.MultipleChoiceField(
        choices=ValidationStatus.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Latest verdict",
    )
    task_ids = forms.CharField(
        required=False, max_length=2000, label="Task ids", help_text="e.g. 3, 7, 12"
    )
    since_days = forms.IntegerField(
        required=False, min_value=1, max_value=3650, label="Validated in the last N days"
    )
    template = forms.ChoiceField(choices=[], required=False, label="Prompt template")
    model = forms.CharField(max_length=200, required=False, label="Validator model")

    def __init__(self, *args: Any, template_names: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _choice_field(self, "template").choices = [
            ("", "Same as each original"),
            *[(n, n) for n in template_names or []],
        ]

    def clean_task_ids(self) -> list[int]:
        raw = self.cleaned_data.get("task_ids", "")
        ids: list[int] = []
        for part in raw.replace(" ", ",").split(","):
            if not part:
                continue
            if not part.isdigit() or int(part) > MAX_ROW_ID:
                raise forms.ValidationError(f"'{part}' is not a task id.")
            ids.append(int(part))
        return ids


def _choice_field(form: forms.Form, name: str) -> forms.ChoiceField:
    field = form.fields[name]
    assert isinstance(field, forms.ChoiceField)
    return field


class TrustQueryForm(forms.Form):
    """The operator trust page's choices: the period of the rows beside the last 30 days
    and the rate the upper bound is held against."""

    period = forms.ChoiceField(
        choices=[("day", "Day"), ("week", "Week"), ("month", "Month")],
        required=False,
        label="Rows per",
    )
    target = forms.CharField(
        required=False,
        max_length=20,
        label="Target rate",
        help_text="a share (0.02) or a percentage with its sign (2 %)",
    )

    def clean_target(self) -> float | None:
        """The target as a share: ``0.02`` or ``2 %``; a bare ``2`` is refused with both
        ways to write 2 % (it would be 200 %)."""
        raw = (self.cleaned_data.get("target") or "").strip().replace(",", ".")
        if not raw:
            return None
        percent = raw.endswith("%")
        try:
            value = float(raw.rstrip("%").strip())
        except ValueError:
            raise forms.ValidationError(
                f"“{raw}” is not a rate: write a share such as 0.02, or 2 % with its sign."
            ) from None
        if percent:
            value /= 100
        elif value >= 1:
            raise forms.ValidationError(
                f"{raw:s} would be {value * 100:g} %: write the target as a share "
                f"({value / 100:g} for {value:g} %) or as a percentage with its sign "
                f"({value:g} %)."
            )
        if not 0.0001 <= value <= 0.9999:
            raise forms.ValidationError(
                "A target rate lies between 0.01 % and 99.99 % (0.0001 to 0.9999)."
            )
        return value
