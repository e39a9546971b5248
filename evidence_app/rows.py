"""The rows of the review queue and of the task lists, rendered in Python (issue 16).

Django's template engine costs a few microseconds per node (variable lookup, filters,
localisation, autoescape, ``{% url %}``): a 50-row queue page ran ~2,000 nodes, 200
``reverse()`` calls and ~60 % of the page's CPU in its rows. Here one ``str.format`` per
row builds the same markup from escaped values (titles, names and validator text are
data, never markup, U7), each task's URLs come from one ``reverse()`` per page and
``timesince`` translates each of its phrases once per page. The
page templates keep everything else; ``tests/ui/test_rows.py`` checks these rows against
the template markup they replaced.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator
from django.utils.timesince import TIME_STRINGS, timesince

from tasks_app.workflow.states import TaskStatus

DASH = '<span class="muted">–</span>'


def escape(value: Any) -> str:
    """Django's ``escape`` (``& < > " '``) without its lazy-string wrapper: the rows call
    it a dozen times each."""
    return html.escape(str(value))


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
    """The infrastructure re-runs of a task's attempt (issue 17: the second budget), in
    the one wording the progress line, the task list and the review queue share: "re-run
    2 times after a worker fault"; "" when there were none."""
    if not count:
        return ""
    return f"re-run {count} time{'' if count == 1 else 's'} after a worker fault"


QUEUE_ROW = """
      <tr data-task-id="{pk}" data-version="{version}" data-title="{title}" tabindex="-1" aria-selected="false"
          data-action-url="{action_url}" data-open-url="{open_url}">
        <td class="mono">{pk}</td>
        <td class="title"><a class="open" tabindex="-1" href="{open_url}" hx-get="{open_url}" hx-target="#main" hx-swap="innerHTML" hx-push-url="true"><span hx-disable>{title}</span></a>
          <div class="small muted">{owner} · <span class="attempts">attempt {attempt_count} of {max_attempts}{rerun}</span>{issue}</div>
          {first_problem}</td>
        <td>{verdict}</td>
        <td>{category}</td>
        <td class="small">{claims}</td>
        <td>{assigned}</td>
        <td>{claim}</td>
        <td class="nowrap" title="{created}">{waiting}</td>
      </tr>
    """  # noqa: E501 - the markup of one row, kept as the template had it


def queue_rows(
    tasks: Iterable[Any],
    *,
    user: Any,
    query: str,
    now: datetime,
    vstatuses: Mapping[str, str],
    categories: Mapping[str, str],
) -> SafeString:
    """The ``<tr>`` of each queue task (``views_review.queue_queryset`` annotations)."""
    urls = TaskUrls()
    strings = time_strings()
    suffix = escape(f"?{query}") if query else ""
    me = getattr(user, "pk", None)
    rows = []
    for t in tasks:
        claims = t.v_claims if isinstance(t.v_claims, dict) else {}
        problem = claims.get("first_problem")
        first_problem = (
            '<div class="small first-problem" hx-disable><span class="badge claim-badge '
            f'claim-{escape(problem.get("verdict", ""))}">{escape(problem.get("verdict", ""))}'
            f"</span> {escape(_truncate(problem.get('text', ''), 140))}</div>"
            if problem
            else ""
        )
        issue = (
            f' · <span class="issue" hx-disable>{escape(_truncate(t.v_issue, 110))}</span>'
            if t.v_issue
            else ""
        )
        verdict = (
            f'<span class="badge v-{escape(t.v_status)}">'
            f"{escape(vstatuses.get(t.v_status) or t.v_status)}</span>"
            if t.v_status
            else '<span class="muted">none</span>'
        )
        category = (
            f'<span class="badge cat">{escape(categories.get(t.v_category) or t.v_category)}</span>'
            if t.v_category
            else DASH
        )
        if claims.get("total"):
            summary = (
                '<span class="queue-claims" title="claims of the answer by verdict">'
                f"{escape(claims.get('supported', ''))} supported · "
                f"{escape(claims.get('contradicted', ''))} contradicted · "
                f"{escape(claims.get('unsupported', ''))} unsupported</span>"
            )
            if claims.get("unverified_citations"):
                summary += (
                    f' <span class="badge v-rejected">{escape(claims["unverified_citations"])}'
                    " unverified</span>"
                )
        else:
            summary = DASH
        if t.assigned_to_id:
            assigned = (
                '<span class="badge">you</span>'
                if t.assigned_to_id == me
                else escape(t.assigned_to)
            )
        else:
            assigned = DASH
        if t.claimed_by_id and t.claim_is_live():
            holder = "you" if t.claimed_by_id == me else escape(t.claimed_by)
            claim = f'<span class="badge">{holder}</span>'
        else:
            claim = DASH
        open_url = urls.detail(t.pk) + suffix
        rows.append(
            QUEUE_ROW.format(
                pk=t.pk,
                version=t.version,
                title=escape(t.title),
                action_url=urls.feedback(t.pk),
                open_url=open_url,
                owner=escape(t.owner),
                attempt_count=t.attempt_count,
                max_attempts=t.max_attempts,
                rerun=f", {rerun_note(t.requeue_count)}" if t.requeue_count else "",
                issue=issue,
                first_problem=first_problem,
                verdict=verdict,
                category=category,
                claims=summary,
                assigned=assigned,
                claim=claim,
                created=_local_minute(t.created_at),
                waiting=escape(_since(t.created_at, now, strings)),
            )
        )
    # Every value above was escaped (or is one of our constants): U7.
    return mark_safe("".join(rows))  # noqa: S308


LIST_ROW = """
      <tr data-task-id="{pk}"><td class="mono">{pk}</td><td class="title"><a href="{url}" hx-disable>{title}</a></td>
        {owner}
        <td><span class="badge status-{status}{pulse}">{status_label}</span>{your_turn}</td>
        <td class="attempts">{attempt_count}/{max_attempts}{rerun}</td>
        <td>{outcome}</td>
        <td class="nowrap" title="{created}">{since} ago</td></tr>
    """  # noqa: E501 - the markup of one row, kept as the template had it

STATUS_LABELS = dict(TaskStatus.choices)


def task_rows(tasks: Iterable[Any], *, user: Any, scope: str) -> SafeString:
    """The ``<tr>`` of each task of "All tasks" (``scope == 'all'``) or "My tasks"."""
    urls = TaskUrls()
    strings = time_strings()
    me = getattr(user, "pk", None)
    rows = []
    for t in tasks:
        outcome = (
            escape(t.get_validation_outcome_display())
            if t.validation_outcome
            else '<span class="faint">–</span>'
        )
        your_turn = t.requires_user_action and t.owner_id == me
        rows.append(
            LIST_ROW.format(
                pk=t.pk,
                url=urls.detail(t.pk),
                title=escape(t.title),
                owner=f"<td>{escape(t.owner)}</td>" if scope == "all" else "",
                status=escape(t.status),
                pulse=" pulse" if t.is_execution_active else "",
                status_label=escape(STATUS_LABELS.get(t.status, t.status)),
                your_turn=' <span class="small muted">your turn</span>' if your_turn else "",
                attempt_count=t.attempt_count,
                max_attempts=t.max_attempts,
                rerun=(
                    f'<div class="small muted rerun">{rerun_note(t.requeue_count)}</div>'
                    if t.requeue_count
                    else ""
                ),
                outcome=outcome,
                created=_local_minute(t.created_at),
                since=escape(_since(t.created_at, None, strings)),
            )
        )
    # Every value above was escaped (or is one of our constants): U7.
    return mark_safe("".join(rows))  # noqa: S308
