"""Template helpers for the review UI. Every helper that returns HTML escapes its input:
tool output, requests and model output are data, never markup."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from django import template
from django.urls import NoReverseMatch, reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from evidence_app.models import FailureCategory, SnapshotKind, ValidationStatus, VerdictRoute
from evidence_app.review import rows
from evidence_app.validation.claims import CLAIM_STATES
from project.costs import CostTotal, format_cost
from project.llm.registry import display_model_name
from tasks_app.records import FeedbackAction, RunKind, RunStatus, TaskStatus, codes_in_words

register = template.Library()


@register.simple_tag
def account_url() -> str:
    """The API helper's account page, when it is installed."""
    try:
        return reverse("account")
    except NoReverseMatch:
        return ""


@register.filter
def numbered_lines(text: str | None) -> SafeString:
    """One escaped ``<span class="l">`` per line; CSS counters draw the line numbers so
    copying the text never copies them."""
    lines = (text or "").split("\n")
    # Every line is escaped before it is joined; nothing of the input stays markup.
    last = len(lines) - 1
    body = "".join(
        f'<span class="l">{escape(line)}{"" if i == last else chr(10)}</span>'
        for i, line in enumerate(lines)
    )
    return mark_safe(body)  # noqa: S308 - built from escaped parts only


@register.filter
def pretty_json(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


@register.filter
def compact_json(value: Any) -> str:
    return rows.compact_json(value)


@register.filter
def chars(value: int | None) -> str:
    return rows.chars(value)


@register.filter
def model_label(name: str | None) -> str:
    """Offline models are labelled as stand-ins, never presented as LLMs."""
    if not name:
        return ""
    try:
        return display_model_name(name)
    except Exception:  # a label must never break a page
        return name


@register.filter
def get_item(mapping: Any, key: Any) -> Any:
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def as_list(value: Any) -> list[Any]:
    """Validator result fields that should be lists but may be a string or missing."""
    if value in (None, ""):
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


@register.filter
def thousands(value: int | None) -> str:
    return f"{int(value or 0):,}"


@register.filter
def duration(ms: int | None) -> str:
    """Milliseconds as a person reads them: 850 ms, 12.4 s, 3 min 05 s."""
    if ms is None:
        return "–"
    if ms < 1000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds:02d} s"


@register.filter
def money(value: Any) -> str:
    """A stored cost (Decimal, or None = "cost unknown") or a ``CostTotal`` sum, which
    says how many parts were unpriced."""
    if isinstance(value, CostTotal):
        return str(value)
    if isinstance(value, str):
        value = Decimal(value)
    return format_cost(value)


def indented_json(text: str) -> str:
    """``text`` indented when it is a JSON object or array (a model's verdict), else ""."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return ""
    try:
        return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
    except ValueError:
        return ""


@register.filter
def raw_parts(item: Any) -> dict[str, Any]:
    """A stored raw validator response split into its text, exactly as the model
    returned it, the same text indented when it is JSON (``pretty``, "" otherwise), and
    the facts recorded beside it (attempt, tokens, latency...)."""
    if isinstance(item, str):
        return {"text": item, "pretty": indented_json(item), "meta": []}
    if isinstance(item, dict) and isinstance(item.get("text"), str):
        meta = [(k, v) for k, v in item.items() if k != "text" and v not in (None, "", [], {})]
        return {
            "text": item["text"],
            "pretty": indented_json(item["text"]),
            "meta": [
                (k, compact_json(v) if not isinstance(v, str | int | float) else v) for k, v in meta
            ],
        }
    return {"text": pretty_json(item), "pretty": "", "meta": []}


_STATUS_LABELS: dict[str, str] = {}


@register.filter
def rerun_note(count: int | None) -> str:
    """``evidence_app.review.rows.rerun_note`` as a filter (the progress line)."""
    return rows.rerun_note(count)


@register.filter
def status_label(value: str | None) -> str:
    """A task or verdict status in words ("Needs review"), never the stored slug."""
    if not value:
        return ""
    if not _STATUS_LABELS:
        for choices in (
            RunKind,
            RunStatus,
            SnapshotKind,
            FailureCategory,
            FeedbackAction,
            ValidationStatus,
            VerdictRoute,
            TaskStatus,
        ):
            _STATUS_LABELS.update({value: str(label) for value, label in choices.choices})
    return _STATUS_LABELS.get(value, value.replace("_", " ").capitalize())


@register.filter
def code_words(text: str | None) -> str:
    """A stored reason with its codes in words: "validator: insufficient_evidence
    (unsupported_claim)" reads "validator: insufficient evidence (unsupported claim)"."""
    return codes_in_words(text or "")


@register.filter
def reconciliation_words(reason: str | None) -> str:
    """One reason of the application's check of a verdict, in words: "accepted: kept"
    reads "Accepted: the application's checks left the model's verdict as it was"."""
    text = (reason or "").strip()
    status, _, rest = text.partition(": ")
    if rest == "kept":
        return (
            f"{status_label(status)}: the application's checks left the model's verdict as it was"
        )
    return codes_in_words(text)


@register.filter
def template_label(version: str | None) -> str:
    """``default@1359c919bd5c`` → ``default @ 1359c919``: the one spelling of a template
    version on every page."""
    if not version:
        return ""
    name, _, digest = version.partition("@")
    return f"{name} @ {digest[:8]}" if digest else name


@register.filter
def attempt_label(task: Any) -> str:
    """``evidence_app.review.rows.attempt_label`` as a filter (the progress line)."""
    return rows.attempt_label(task.attempt_count, task.max_attempts)


# A score means something on a decision (accepted, rejected); on a verdict that hands the
# task to a person it does not (a model's 1.00 demoted to insufficient_evidence stood
# beside another verdict's 0.00).
SCORED_STATUSES = frozenset({"accepted", "rejected"})


@register.filter
def verdict_score(snapshot: Any) -> str:
    """The score of a verdict as "0.83", or "–" where it means nothing (no score, or an
    insufficient_evidence or validator_error verdict)."""
    score = getattr(snapshot, "score", None)
    if score is None or getattr(snapshot, "status", "") not in SCORED_STATUSES:
        return "–"
    return f"{score:.2f}"


VERDICT_MEANING = {
    "accepted": "The validator found the answer supported by the evidence.",
    "rejected": "The validator found the answer contradicted by the evidence, or not doing "
    "what was asked.",
    "insufficient_evidence": "The validator could not confirm the answer from the evidence "
    "the agent gathered, so a person decides.",
    "validator_error": "The validator could not give a verdict, so a person decides.",
}


@register.filter
def verdict_meaning(status: str | None) -> str:
    return VERDICT_MEANING.get(status or "", "")


@register.filter
def claim_counts(claims: Any) -> dict[str, int]:
    """Supported / contradicted / unsupported counts of a verdict's claims."""
    counts = {"supported": 0, "contradicted": 0, "unsupported": 0}
    for claim in claims if isinstance(claims, list) else []:
        verdict = claim.get("verdict") if isinstance(claim, dict) else None
        if verdict in counts:
            counts[verdict] += 1
    return counts


@register.simple_tag
def queue_rows(tasks: Any, **options: Any) -> SafeString:
    """The review queue's rows (``evidence_app.review.rows``: rendered by Jinja2)."""
    return rows.queue_rows(tasks, **options)


@register.simple_tag
def claim_state_badge(state: str) -> SafeString:
    """A claim's state as a badge, sign and words (one vocabulary)."""
    return rows.claim_badge(state)


@register.simple_tag
def claim_state_counts(counts: Any) -> SafeString:
    """The one count of a verdict's claims by state."""
    return rows.claim_counts(counts if isinstance(counts, dict) else {})


@register.filter
def claim_sign(state: str) -> str:
    """The sign of a claim's state (✓ ⚠ ✗ ?), beside its highlight in the answer."""
    return next((sign for s, sign, _ in CLAIM_STATES if s == state), "")


@register.filter
def claim_words(state: str) -> str:
    """The words of a claim's state ("without support" for unsupported)."""
    return next((words for s, _, words in CLAIM_STATES if s == state), state)


@register.simple_tag
def evidence_rows(items: Any, task_id: int, labels: Any) -> SafeString:
    """A page of the Evidence list's rows (``evidence_app.review.rows``)."""
    return rows.evidence_rows(items, task_id=task_id, labels=labels or {})


@register.simple_tag
def task_rows(tasks: Any, *, user: Any, scope: str) -> SafeString:
    """The task list's rows (``evidence_app.review.rows``: rendered by Jinja2)."""
    return rows.task_rows(tasks, user=user, scope=scope)


@register.filter
def wait(seconds: float | None) -> str:
    """Seconds as a person reads a wait or a time spent: 45 s, 12 min 05 s, 3 h 05 min,
    2 d 4 h; "–" for none."""
    if seconds is None:
        return "–"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"
