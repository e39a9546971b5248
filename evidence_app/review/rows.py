"""The rows of the review queue and of the task lists: their values prepared here, their
markup in Jinja2 templates (``evidence_app/review/jinja2/rows/``).

A list page holds up to 200 rows, and Django's template engine costs a few microseconds
per node (variable lookup, filters, localisation, ``{% url %}``): such a page ran ~2,000
nodes and ~60 % of its CPU in its rows. Jinja2 compiles a template to Python
once, so the rows keep their markup in a template at the cost of a ``str.format``. Each
task's URLs come from one ``reverse()`` per page and ``timesince`` translates each of its
phrases once per page. Autoescape is on: titles, names and validator text are data,
never markup. ``tests/ui/test_rows.py`` checks the rows against the Django template
markup they replaced.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator
from django.utils.timesince import TIME_STRINGS, timesince

from evidence_app.validation.claims import CLAIM_STATES
from tasks_app.records import TaskStatus, status_reason_words

TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent / "jinja2"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    auto_reload=False,
)


_STATES = {state: (sign, words) for state, sign, words in CLAIM_STATES}


def claim_badge(state: str) -> SafeString:
    """A claim's state as a badge: its sign and its words (``CLAIM_STATES``)."""
    sign, words = _STATES.get(state, ("", state))
    return format_html(
        '<span class="badge claim-badge claim-{}"><span class="claim-icon" aria-hidden="true">'
        "{}</span> {}</span>",
        state,
        sign,
        words,
    )


def claim_counts(counts: Mapping[str, Any]) -> SafeString:
    """The one count of a verdict's claims by state, in the order and words of
    ``CLAIM_STATES`` ("✓ 2 supported · ⚠ 1 disputed · ✗ 0 contradicted · ? 1 without
    support")."""
    parts = [
        format_html(
            '<span class="claim-count claim-count-{}"><span class="claim-icon" '
            'aria-hidden="true">{}</span> {} {}</span>',
            state,
            sign,
            counts.get(state) or 0,
            words,
        )
        for state, sign, words in CLAIM_STATES
    ]
    return format_html('<span class="claim-counts">{}</span>', mark_safe(" · ".join(parts)))  # noqa: S308


def compact_json(value: Any) -> str:
    """A JSON value on one line (tool arguments in a list row)."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def chars(value: int | None) -> str:
    """A size in characters as a list shows it: 950 chars, 12 k chars, 1.2 M chars."""
    n = int(value or 0)
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f} M chars"
    if n >= 10_000:
        return f"{n / 1000:.0f} k chars"
    return f"{n:,} chars"


def _truncate(text: Any, length: int) -> str:
    """``|truncatechars:length`` (Truncator only when the text is long enough to cut)."""
    text = str(text)
    return text if len(text) <= length else Truncator(text).chars(length)


def _local_minute(at: datetime) -> str:
    """``|date:'Y-m-d H:i'`` of an aware datetime, in the current time zone."""
    return timezone.localtime(at).strftime("%Y-%m-%d %H:%M")


class _Translated:
    """One of ``timesince``'s lazy plural strings, translated once per count: a page's
    rows ask for the same few ("1 year", "2 months", ...) again and again."""

    def __init__(self, lazy: Any) -> None:
        self.lazy = lazy
        self.done: dict[Any, str] = {}

    def __mod__(self, params: dict[str, Any]) -> str:
        key = params["num"]
        if key not in self.done:
            self.done[key] = self.lazy % params
        return self.done[key]


def time_strings() -> dict[str, Any]:
    """``timesince``'s strings for one page (the language cannot change within it)."""
    return {name: _Translated(lazy) for name, lazy in TIME_STRINGS.items()}


def _since(at: datetime, now: datetime | None, strings: dict[str, Any]) -> str:
    """``|timesince`` (an empty string for a bad value, as the filter gives)."""
    try:
        return timesince(at, now, time_strings=strings)
    except (ValueError, TypeError):
        return ""


class TaskUrls:
    """``task_detail`` and ``task_feedback`` URLs of any task from one ``reverse()`` each."""

    def __init__(self) -> None:
        self._detail = reverse("task_detail", args=[0]).rsplit("0/", 1)
        self._feedback = reverse("task_feedback", args=[0]).rsplit("0/feedback/", 1)

    def detail(self, pk: int) -> str:
        return f"{self._detail[0]}{pk}/{self._detail[1]}"

    def feedback(self, pk: int) -> str:
        return f"{self._feedback[0]}{pk}/feedback/{self._feedback[1]}"


def rerun_note(count: int | None) -> str:
    """The infrastructure re-runs of a task's attempt (the second budget), in
    the one wording the progress line, the task list and the review queue share: "re-run
    2 times after a worker fault"; "" when there were none."""
    if not count:
        return ""
    return f"re-run {count} time{'' if count == 1 else 's'} after a worker fault"


def attempt_label(attempt: int, budget: int) -> str:
    """ "attempt 2 of 3" within the automatic budget; beyond it (only a person's Revise
    goes past ``max_attempts``) "attempt 3 (budget 2, revision)", never "3 of 2"."""
    if attempt > budget:
        return f"attempt {attempt} (budget {budget}, revision)"
    return f"attempt {attempt} of {budget}"


def _attempts_short(attempt: int, budget: int) -> str:
    """The task lists' short form: "2/3", and "3 (budget 2)" past the budget."""
    return f"{attempt} (budget {budget})" if attempt > budget else f"{attempt}/{budget}"


def _claim_counts(claims: Mapping[str, Any]) -> dict[str, Any]:
    """The counts a queue row shows; a disputed claim (supported by one source, another
    says otherwise) is counted as disputed, not as supported."""
    counts = {key: claims.get(key, "") for key in CLAIM_COUNTS}
    disputed = claims.get("disputed") or 0
    if disputed and isinstance(counts["supported"], int):
        counts["supported"] -= disputed
    counts["disputed"] = disputed
    return counts


def _render(template: str, **context: Any) -> SafeString:
    # Jinja2 escaped every value: the result is markup.
    return mark_safe(TEMPLATES.get_template(template).render(**context))  # noqa: S308


# The verdict's claim counts a queue row shows (``ValidationSnapshot.claim_summary``).
CLAIM_COUNTS = ("total", "supported", "contradicted", "unsupported", "unverified_citations")


def _queue_row(
    t: Any,
    *,
    me: Any,
    urls: TaskUrls,
    suffix: str,
    labels: tuple[Mapping[str, str], Mapping[str, str]],
    since: str,
) -> dict[str, Any]:
    vstatuses, categories = labels
    claims = t.v_claims if isinstance(t.v_claims, dict) else {}
    problem = claims.get("first_problem")
    live_claim = bool(t.claimed_by_id and t.claim_is_live())
    open_url = urls.detail(t.pk) + suffix
    return {
        "pk": t.pk,
        "version": t.version,
        "title": t.title,
        "action_url": urls.feedback(t.pk),
        "open_url": open_url,
        "owner": t.owner,
        "attempts": attempt_label(t.attempt_count, t.max_attempts),
        "rerun": rerun_note(t.requeue_count),
        "issue": _truncate(t.v_issue, 110) if t.v_issue else "",
        "problem": (
            {
                "badge": claim_badge(str(problem.get("verdict", ""))),
                "text": _truncate(problem.get("text", ""), 140),
            }
            if problem
            else None
        ),
        "verdict": t.v_status,
        # Why it is here, where the verdict alone does not say (an accepted one, or none).
        "why": (
            _truncate(status_reason_words(TaskStatus.NEEDS_REVIEW, t.v_why), 110)
            if t.v_why and (t.v_status == "accepted" or not t.v_issue)
            else ""
        ),
        "verdict_label": (vstatuses.get(t.v_status) or t.v_status) if t.v_status else "",
        "category": (categories.get(t.v_category) or t.v_category) if t.v_category else "",
        "claims": _claim_counts(claims),
        "claim_counts": claim_counts(_claim_counts(claims)) if claims.get("total") else "",
        "assigned_to_me": bool(t.assigned_to_id and t.assigned_to_id == me),
        "assigned": t.assigned_to if t.assigned_to_id else "",
        "holder": ("you" if t.claimed_by_id == me else t.claimed_by) if live_claim else "",
        "created": _local_minute(t.created_at),
        "waiting": since,
    }


def queue_rows(
    tasks: Iterable[Any],
    *,
    user: Any,
    query: str,
    now: datetime,
    vstatuses: Mapping[str, str],
    categories: Mapping[str, str],
) -> SafeString:
    """The ``<tr>`` of each queue task (``queue_selectors.queue_queryset`` annotations)."""
    urls = TaskUrls()
    strings = time_strings()
    suffix = f"?{query}" if query else ""
    me = getattr(user, "pk", None)
    rows = [
        _queue_row(
            t,
            me=me,
            urls=urls,
            suffix=suffix,
            labels=(vstatuses, categories),
            since=_since(t.created_at, now, strings),
        )
        for t in tasks
    ]
    return _render("rows/queue_rows.html", rows=rows)


STATUS_LABELS = dict(TaskStatus.choices)


def task_rows(tasks: Iterable[Any], *, user: Any, scope: str) -> SafeString:
    """The ``<tr>`` of each task of "All tasks" (``scope == 'all'``) or "My tasks"."""
    urls = TaskUrls()
    strings = time_strings()
    me = getattr(user, "pk", None)
    rows = [
        {
            "pk": t.pk,
            "url": urls.detail(t.pk),
            "title": t.title,
            "owner": t.owner,
            "status": t.status,
            "active": t.is_execution_active,
            "status_label": STATUS_LABELS.get(t.status, t.status),
            "reason": t.status_reason,
            # A task waiting in review is the reviewers' turn, not its requester's.
            "your_turn": t.requires_user_action
            and t.owner_id == me
            and t.status != TaskStatus.NEEDS_REVIEW,
            "attempts": _attempts_short(t.attempt_count, t.max_attempts),
            "rerun": rerun_note(t.requeue_count),
            "outcome": t.get_validation_outcome_display() if t.validation_outcome else "",
            "created": _local_minute(t.created_at),
            "since": _since(t.created_at, None, strings),
        }
        for t in tasks
    ]
    return _render("rows/task_rows.html", rows=rows, all=scope == "all")


def evidence_rows(items: Iterable[Any], *, task_id: int, labels: Mapping[int, str]) -> SafeString:
    """The ``<li>`` of each tool result of a page of the Evidence list (without their
    content, with ``size``), with its ``R<n>`` label from ``labels``."""
    content_url = reverse("evidence_content", args=[task_id, 0]).rsplit("0/", 1)
    rows = [
        {
            "pk": e.pk,
            "url": f"{content_url[0]}{e.pk}/{content_url[1]}",
            "attempt": e.attempt_index,
            "run": e.run_id,
            "sequence": e.sequence,
            "label": labels.get(e.pk, ""),
            "tool": e.tool_name,
            "error": e.is_error,
            "args": _truncate(compact_json(e.arguments), 140),
            "title": e.title,
            "web": e.url,
            "size": chars(e.size),
        }
        for e in items
    ]
    return _render("rows/evidence_rows.html", rows=rows)
