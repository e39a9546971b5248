"""The form of the judge page: a candidate judge to compare with the current one."""

from __future__ import annotations

from typing import Any

from django import forms

from project.llm.registry import ModelConfigurationError, resolve_model


class JudgeCandidateForm(forms.Form):
    """A candidate judge: a prompt template and a validator model (checked against the
    providers before anything is queued or started)."""

    template = forms.ChoiceField(choices=[], label="Prompt template")
    model = forms.CharField(max_length=200, label="Validator model")
    cases = forms.CharField(
        max_length=2000,
        required=False,
        label="Only these cases",
        help_text="case ids or categories, e.g. supported, fever-12 (empty: every held-out case)",
    )

    def __init__(
        self,
        *args: Any,
        template_names: list[str] | None = None,
        initial_model: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        template = self.fields["template"]
        assert isinstance(template, forms.ChoiceField)
        template.choices = [(n, n) for n in template_names or []]
        self.fields["model"].initial = initial_model
        self.fields["model"].help_text = "e.g. offline:judge, openai:gpt-4.1, compat:llama3"

    def clean_model(self) -> str:
        name = self.cleaned_data.get("model", "").strip()
        try:
            resolve_model(name)
        except ModelConfigurationError as exc:
            raise forms.ValidationError(exc.message) from None
        return name

    def clean_cases(self) -> list[str]:
        raw = self.cleaned_data.get("cases", "")
        return [part for part in raw.replace(",", " ").split() if part]
