"""Forms of the task page, the review queue and the blind audit page."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django import forms

from evidence_app.models import ClaimStance, FailureCategory, ValidationStatus
from evidence_app.trust.audits import AUDIT_COMMENT_MAX
from evidence_app.validation.claims import CLAIM_STATES
from project.errors import InvalidInput

FEEDBACK_CHOICES = [
    ("satisfied", "Satisfied"),
    ("revise", "Revise"),
    ("abandon", "Abandon"),
]

# A person's verdict on a claim, in the signs and words the claim marks use everywhere.
CLAIM_STANCE_CHOICES = [
    (state, f"{sign} {words}") for state, sign, words in CLAIM_STATES if state in ClaimStance.values
]


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
