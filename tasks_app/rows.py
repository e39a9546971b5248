"""The rows of the review queue and of the task lists, rendered in Python (issue 16).

Django's template engine costs a few microseconds per node (variable lookup, filters,
localisation, autoescape, ``{% url %}``): a 50-row queue page ran ~2,000 nodes, 200
``reverse()`` calls and ~60 % of the page's CPU in its rows. Here one ``format_html``
per row builds the same markup (every value escaped: titles, names and validator text are
data, never markup, U7), with each task's URLs made from one ``reverse()`` per page. The
page templates keep everything else; ``tests/ui/test_rows.py`` checks these rows against
the template markup they replaced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator
from django.utils.timesince import timesince

from tasks_app.states import TaskStatus

DASH = mark_safe('<span class="muted">–</span>')  # noqa: S308 - a constant


def _truncate(text: Any, length: int) -> str:
    """``|truncatechars:length`` (Truncator only when the text is long enough to cut)."""
    text = str(text)
    return text if len(text) <= length else Truncator(text).chars(length)


def _local_minute(at: datetime) -> str:
    """``|date:'Y-m-d H:i'`` of an aware datetime, in the current time zone."""
    return timezone.localtime(at).strftime("%Y-%m-%d %H:%M")


def _since(at: datetime, now: datetime | None = None) -> str:
    """``|timesince`` (an empty string for a bad value, as the filter gives)."""
    try:
        return timesince(at, now) if now else timesince(at)
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


QUEUE_ROW = """
      <tr data-task-id="{pk}" data-version="{version}" data-title="{title}" tabindex="-1" aria-selected="false"
          data-action-url="{action_url}" data-open-url="{open_url}">
        <td class="mono">{pk}</td>
        <td class="title"><a class="open" tabindex="-1" href="{open_url}" hx-get="{open_url}" hx-target="#main" hx-swap="innerHTML" hx-push-url="true"><span hx-disable>{title}</span></a>
          <div class="small muted">{owner} · attempt {attempt_count}{issue}</div>
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
    suffix = f"?{query}" if query else ""
    me = getattr(user, "pk", None)
    rows = []
    for t in tasks:
        claims = t.v_claims or {}
        problem = claims.get("first_problem") if isinstance(claims, dict) else None
        if not isinstance(claims, dict):
            claims = {}
        first_problem = (
            format_html(
                '<div class="small first-problem" hx-disable><span class="badge claim-badge '
                'claim-{}">{}</span> {}</div>',
                problem.get("verdict", ""),
                problem.get("verdict", ""),
                _truncate(problem.get("text", ""), 140),
            )
            if problem
            else ""
        )
        issue = (
            format_html(' · <span class="issue" hx-disable>{}</span>', _truncate(t.v_issue, 110))
            if t.v_issue
            else ""
        )
        verdict = (
            format_html(
                '<span class="badge v-{}">{}</span>',
                t.v_status,
                vstatuses.get(t.v_status) or t.v_status,
            )
            if t.v_status
            else mark_safe('<span class="muted">none</span>')  # noqa: S308 - a constant
        )
        category = (
            format_html(
                '<span class="badge cat">{}</span>',
                categories.get(t.v_category) or t.v_category,
            )
            if t.v_category
            else DASH
        )
        if claims.get("total"):
            summary = format_html(
                '<span class="queue-claims" title="claims of the answer by verdict">{} supported'
                " · {} contradicted · {} unsupported</span>",
                claims.get("supported", ""),
                claims.get("contradicted", ""),
                claims.get("unsupported", ""),
            )
            if claims.get("unverified_citations"):
                summary += format_html(
                    ' <span class="badge v-rejected">{} unverified</span>',
                    claims["unverified_citations"],
                )
        else:
            summary = DASH
        if t.assigned_to_id:
            assigned = (
                mark_safe('<span class="badge">you</span>')  # noqa: S308 - a constant
                if t.assigned_to_id == me
                else format_html("{}", t.assigned_to)
            )
        else:
            assigned = DASH
        if t.claimed_by_id and t.claim_is_live():
            claim = format_html(
                '<span class="badge">{}</span>', "you" if t.claimed_by_id == me else t.claimed_by
            )
        else:
            claim = DASH
        open_url = urls.detail(t.pk) + suffix
        rows.append(
            format_html(
                QUEUE_ROW,
                pk=t.pk,
                version=t.version,
                title=t.title,
                action_url=urls.feedback(t.pk),
                open_url=open_url,
                owner=t.owner,
                attempt_count=t.attempt_count,
                issue=issue,
                first_problem=first_problem,
                verdict=verdict,
                category=category,
                claims=summary,
                assigned=assigned,
                claim=claim,
                created=_local_minute(t.created_at),
                waiting=_since(t.created_at, now),
            )
        )
    return mark_safe("".join(rows))  # noqa: S308 - each row is format_html output


LIST_ROW = """
      <tr data-task-id="{pk}"><td class="mono">{pk}</td><td class="title"><a href="{url}" hx-disable>{title}</a></td>
        {owner}
        <td><span class="badge status-{status}{pulse}">{status_label}</span>{your_turn}</td>
        <td>{attempt_count}/{max_attempts}</td>
        <td>{outcome}</td>
        <td class="nowrap" title="{created}">{since} ago</td></tr>
    """  # noqa: E501 - the markup of one row, kept as the template had it

STATUS_LABELS = dict(TaskStatus.choices)


def task_rows(tasks: Iterable[Any], *, user: Any, scope: str) -> SafeString:
    """The ``<tr>`` of each task of "All tasks" (``scope == 'all'``) or "My tasks"."""
    urls = TaskUrls()
    me = getattr(user, "pk", None)
    rows = []
    for t in tasks:
        rows.append(
            format_html(
                LIST_ROW,
                pk=t.pk,
                url=urls.detail(t.pk),
                title=t.title,
                owner=format_html("<td>{}</td>", t.owner) if scope == "all" else "",
                status=t.status,
                pulse=" pulse" if t.is_execution_active else "",
                status_label=STATUS_LABELS.get(t.status, t.status),
                your_turn=mark_safe(' <span class="small muted">your turn</span>')  # noqa: S308
                if t.requires_user_action and t.owner_id == me
                else "",
                attempt_count=t.attempt_count,
                max_attempts=t.max_attempts,
                outcome=t.get_validation_outcome_display()
                if t.validation_outcome
                else mark_safe('<span class="faint">–</span>'),  # noqa: S308 - a constant
                created=_local_minute(t.created_at),
                since=_since(t.created_at),
            )
        )
    return mark_safe("".join(rows))  # noqa: S308 - each row is format_html output
