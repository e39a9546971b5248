"""Issue 16 and issue "One house" item 5: the queue and task-list rows (their values from
evidence_app/review/rows.py, their markup in the Jinja2 templates
evidence_app/review/jinja2/rows/) give the markup of the Django template loops they
replaced, for every branch of those loops (verdict or none, claims, unverified
citations, assignment, live or expired claim, long texts cut, markup in titles escaped,
status labels, "your turn"). Compared as HTML (Jinja2 spells an escaped quote &#34;
where Django spells it &quot;)."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import pytest
from django.template import Context, Template
from django.test.html import parse_html
from django.urls import reverse
from django.utils import timezone

from tasks_app.models import Task
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory, ValidationSnapshotFactory

pytestmark = pytest.mark.django_db

# The template loops as they were before issue 16 moved the rows to Python.
QUEUE_LOOP = """{% load evidentia %}{% for t in tasks %}
      <tr data-task-id="{{ t.pk }}" data-version="{{ t.version }}" data-title="{{ t.title }}" tabindex="-1" aria-selected="false"
          data-action-url="{% url 'task_feedback' t.pk %}" data-open-url="{% url 'task_detail' t.pk %}{% if query %}?{{ query }}{% endif %}">
        <td class="mono">{{ t.pk }}</td>
        <td class="title"><a class="open" tabindex="-1" href="{% url 'task_detail' t.pk %}{% if query %}?{{ query }}{% endif %}" hx-get="{% url 'task_detail' t.pk %}{% if query %}?{{ query }}{% endif %}" hx-target="#main" hx-swap="innerHTML" hx-push-url="true"><span hx-disable>{{ t.title }}</span></a>
          <div class="small muted">{{ t.owner }} · <span class="attempts">attempt {{ t.attempt_count }} of {{ t.max_attempts }}{% if t.requeue_count %}, {{ t.requeue_count|rerun_note }}{% endif %}</span>{% if t.v_issue %} · <span class="issue" hx-disable>{{ t.v_issue|truncatechars:110 }}</span>{% endif %}</div>
          {% if t.v_claims.first_problem %}<div class="small first-problem" hx-disable>{% claim_state_badge t.v_claims.first_problem.verdict %} {{ t.v_claims.first_problem.text|truncatechars:140 }}</div>{% endif %}</td>
        <td>{% if t.v_status %}<span class="badge v-{{ t.v_status }}">{{ vstatuses|get_item:t.v_status|default:t.v_status }}</span>{% else %}<span class="muted">no verdict yet</span>{% endif %}{% if t.v_why %}{% if t.v_status == "accepted" or not t.v_issue %}<div class="small muted queue-why" hx-disable>Why here: {{ t.v_why|code_words|truncatechars:110 }}</div>{% endif %}{% endif %}</td>
        <td>{% if t.v_category %}<span class="badge cat">{{ categories|get_item:t.v_category|default:t.v_category }}</span>{% else %}<span class="muted">–</span>{% endif %}</td>
        <td class="small">{% if t.v_claims.total %}<span class="queue-claims" title="claims of the answer by state">{% claim_state_counts t.v_claims %}</span>{% if t.v_claims.unverified_citations %} <span class="badge v-rejected">{{ t.v_claims.unverified_citations }} unverified</span>{% endif %}{% else %}<span class="muted">–</span>{% endif %}</td>
        <td>{% if t.assigned_to_id %}{% if t.assigned_to_id == user.pk %}<span class="badge">you</span>{% else %}{{ t.assigned_to }}{% endif %}{% else %}<span class="muted">–</span>{% endif %}</td>
        <td>{% if t.claimed_by and t.claim_is_live %}<span class="badge">{% if t.claimed_by_id == user.pk %}you{% else %}{{ t.claimed_by }}{% endif %}</span>{% else %}<span class="muted">–</span>{% endif %}</td>
        <td class="nowrap" title="{{ t.created_at|date:'Y-m-d H:i' }}">{{ t.created_at|timesince:now }}</td>
      </tr>
    {% endfor %}"""  # noqa: E501

LIST_LOOP = """{% load evidentia %}{% for t in tasks %}
      <tr data-task-id="{{ t.pk }}"><td class="mono">{{ t.pk }}</td><td class="title"><a href="{% url 'task_detail' t.pk %}" hx-disable>{{ t.title }}</a></td>
        {% if scope == 'all' %}<td>{{ t.owner }}</td>{% endif %}
        <td><span class="badge status-{{ t.status }}{% if t.is_execution_active %} pulse{% endif %}">{{ t.get_status_display }}</span>{% if t.requires_user_action and t.owner_id == user.pk and t.status != "needs_review" %} <span class="small muted">your turn</span>{% endif %}{% if t.status_reason %}<div class="small muted status-reason" hx-disable>{{ t.status_reason }}</div>{% endif %}</td>
        <td class="attempts">{{ t.attempt_count }}/{{ t.max_attempts }}{% if t.requeue_count %}<div class="small muted rerun">{{ t.requeue_count|rerun_note }}</div>{% endif %}</td>
        <td>{% if t.validation_outcome %}{{ t.get_validation_outcome_display }}{% else %}<span class="faint">–</span>{% endif %}</td>
        <td class="nowrap" title="{{ t.created_at|date:'Y-m-d H:i' }}">{{ t.created_at|timesince }} ago</td></tr>
    {% endfor %}"""  # noqa: E501

CLAIMS = {
    "total": 3,
    "supported": 1,
    "contradicted": 1,
    "unsupported": 1,
    "unverified_citations": 2,
    "first_problem": {"verdict": "contradicted", "text": "A claim <b>with markup</b> " * 12},
}


def tbody(html: str) -> str:
    return html.split("<tbody>", 1)[1].split("</tbody>", 1)[0].strip()


def reference(loop: str, context: Any) -> str:
    values = {key: context[key] for key in context.keys()}
    return Template(loop).render(Context(values)).strip()


def same_html(rows: str, expected: str) -> bool:
    """Equal as HTML (elements, attributes, text), and equal as text once the two spellings
    of an escaped character are made one."""
    return parse_html(rows) == parse_html(expected) and html.unescape(rows) == html.unescape(
        expected
    )


def test_queue_rows_match_the_template_loop(
    client: Any, reviewer: Any, operator: Any, requester: Any
) -> None:
    """Issue 16: every branch of a queue row renders as the template did."""
    now = timezone.now()
    long_issue = "The answer cites a section that the evidence never shows, " * 4
    variants = [
        {"title": 'Plain <script>alert("x")</script> & more', "assigned_to": reviewer},
        {"title": "Assigned to someone else", "assigned_to": operator},
        {"title": "Claimed by me", "claimed_by": reviewer, "claimed_at": now},
        {"title": "Claimed by someone else", "claimed_by": operator, "claimed_at": now},
        {"title": "Expired claim", "claimed_by": operator, "claimed_at": now - timedelta(days=2)},
        {"title": "No verdict"},
        {"title": "Verdict without claims"},
        {"title": "Unknown verdict status"},
    ]
    tasks = [
        TaskFactory(
            owner=requester,
            status=S.NEEDS_REVIEW,
            attempt_count=2,
            version=5,
            requeue_count=i % 3,  # re-runs after worker faults (issue 17): none, once, twice
            **kw,
        )
        for i, kw in enumerate(variants)
    ]
    ValidationSnapshotFactory(
        task=tasks[0],
        attempt_index=1,
        status="rejected",
        failure_category="unsupported_claim",
        result={"issues": [long_issue]},
        claim_summary=CLAIMS,
    )
    ValidationSnapshotFactory(
        task=tasks[1], attempt_index=1, status="accepted", result={"issues": ["ok"]}
    )
    for t in tasks[2:5]:
        ValidationSnapshotFactory(
            task=t,
            attempt_index=1,
            status="insufficient_evidence",
            failure_category="some_new_category",
            result={"issues": []},
            claim_summary={**CLAIMS, "unverified_citations": 0, "first_problem": None},
        )
    ValidationSnapshotFactory(task=tasks[6], attempt_index=1, status="validator_error", result={})
    ValidationSnapshotFactory(task=tasks[7], attempt_index=1, status="new_status", result={})
    client.force_login(reviewer)
    for params, count in (({}, 8), ({"q": "claim"}, 4)):
        response = client.get(reverse("review_queue"), params)
        assert response.status_code == 200
        rows = tbody(response.content.decode())
        assert same_html(rows, reference(QUEUE_LOOP, response.context))
        assert rows.count("<tr ") == count
        if not params:
            assert "&lt;script&gt;" in rows and "2 unverified" in rows and "…" in rows
        else:
            assert "?q=claim" in rows


def test_task_list_rows_match_the_template_loop(
    client: Any, reviewer: Any, requester: Any, other_requester: Any
) -> None:
    """Issue 16: every branch of a task-list row, "All tasks" and "My tasks"."""
    for i, status in enumerate(S.values):
        for owner in (requester, other_requester):
            TaskFactory(
                owner=owner,
                title=f"<i>{status}</i> & {i}",
                status=status,
                attempt_count=i % 3,
                requeue_count=i % 2,
                validation_outcome=("accepted", "rejected", None)[i % 3],
            )
    Task.objects.filter(title__contains="running").update(
        created_at=timezone.now() - timedelta(days=40)
    )
    client.force_login(reviewer)
    response = client.get(reverse("task_list_all"))
    assert same_html(tbody(response.content.decode()), reference(LIST_LOOP, response.context))
    assert response.context["scope"] == "all" and len(response.context["tasks"]) == 18
    client.force_login(requester)
    response = client.get(reverse("my_tasks"))
    rows = tbody(response.content.decode())
    assert same_html(rows, reference(LIST_LOOP, response.context))
    assert "your turn" in rows and " pulse" in rows and "&lt;i&gt;" in rows


def test_every_page_of_the_lists_holds_the_rows_of_a_plain_slice(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 16: past page 1 the lists read the page's ids first, then those rows
    (project.pagination.CountedPaginator); every page, with and without filters, holds
    the same tasks in the same order as slicing the ordered list."""
    start = timezone.now() - timedelta(days=1)
    for i in range(130):
        TaskFactory(
            owner=requester,
            title=f"Task {i}",
            status=(S.NEEDS_REVIEW, S.CLOSED)[i % 2],
            # Pairs share a created_at: the id breaks the tie, as in the ordering.
            created_at=start + timedelta(minutes=i // 2),
        )
    ValidationSnapshotFactory.create_batch(
        5, task=Task.objects.filter(status=S.NEEDS_REVIEW).first(), status="rejected"
    )
    client.force_login(reviewer)

    def ids(tasks: Any, *ordering: str) -> list[int]:
        return list(tasks.order_by(*ordering).values_list("pk", flat=True))

    newest_first = ("-created_at", "-id")
    review = Task.objects.filter(status=S.NEEDS_REVIEW)
    cases = [
        (reverse("task_list_all"), {}, ids(Task.objects.all(), *newest_first)),
        (
            reverse("task_list_all"),
            {"status": S.CLOSED},
            ids(Task.objects.filter(status=S.CLOSED), *newest_first),
        ),
        (reverse("review_queue"), {}, ids(review, "created_at", "id")),
        (
            reverse("review_queue"),
            {"q": "Task 1"},
            ids(review.filter(title__icontains="Task 1"), "created_at", "id"),
        ),
    ]
    for url, params, expected in cases:
        pages = -(-len(expected) // 50)
        seen: list[int] = []
        for number in range(1, pages + 1):
            response = client.get(url, {**params, "page": number})
            assert response.context["page"].number == number
            seen += [t.pk for t in response.context["tasks"]]
        assert seen == expected, (url, params)


def test_rows_say_a_revision_past_the_budget_and_count_disputed_claims_apart(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 26 (smaller items): a third attempt on a budget of two reads "attempt 3
    (budget 2, revision)" in the queue and "3 (budget 2)" in the task list, never "3 of 2";
    a disputed claim is counted as disputed, not among the supported ones."""
    task = TaskFactory(
        owner=requester, status=S.NEEDS_REVIEW, attempt_count=3, max_attempts=2, title="Past"
    )
    ValidationSnapshotFactory(
        task=task,
        attempt_index=3,
        status="insufficient_evidence",
        result={"issues": []},
        claim_summary={**CLAIMS, "supported": 2, "disputed": 1, "unverified_citations": 0},
    )
    client.force_login(reviewer)
    queue = tbody(client.get(reverse("review_queue")).content.decode())
    assert "attempt 3 (budget 2, revision)" in queue and "3 of 2" not in queue
    cell = re.search(r'<span class="claim-counts">.*?</td>', queue)
    assert cell, "no claim counts in the row"
    counts = re.sub(r"<[^>]+>", "", cell.group(0)).strip()
    assert counts == "✓ 1 supported · ⚠ 1 disputed · ✗ 1 contradicted · ? 1 without support"
    listing = tbody(client.get(reverse("task_list_all")).content.decode())
    assert '<td class="attempts">3 (budget 2)' in listing and "3/2" not in listing
