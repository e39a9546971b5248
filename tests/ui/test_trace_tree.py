"""The trace tree of the task page (issue 26 item 4), with the Django test client: what
the first page holds, the pages of a run's steps, a step's content and who may see them.
The browser test at 20,000 steps is in ``test_trace_tree_browser.py``."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from bench.trace_tree import build_trace_task
from evidence_app.review import task_page, trace_tree
from evidence_app.validation.selectors import evidence_labels_for_task, evidence_labels_of
from tasks_app.models import LLMRequestSnapshot, Run, RunMessage
from tests.factories import RunFactory, TaskFactory, ToolEvidenceFactory
from tests.ui.conftest import make_reviewable_task

pytestmark = pytest.mark.django_db

STEP_ROW = re.compile(r'<li class="trace-node trace-step trace-(model|tool)">')
RUN_ROW = '<li class="trace-node trace-run">'


def _call(run: Run, i: int, at: Any, **fields: Any) -> LLMRequestSnapshot:
    return LLMRequestSnapshot.objects.create(
        run=run,
        iteration=i,
        provider="test",
        model_name="test:model",
        message_count=2,
        message_chars=100,
        tool_schema_chars=0,
        latency_ms=1200 + i,
        input_tokens=300 + i,
        output_tokens=20,
        cost=Decimal("0.0012"),
        cost_currency="USD",
        created_at=at,
        **fields,
    )


def test_task_page_holds_attempts_and_runs_but_no_steps(client: Any, reviewer: Any) -> None:
    """Issue 26 item 4: a 2,000-step attempt puts its attempt and its five runs on the
    task page with their duration, tokens and cost, and none of the 2,000 steps."""
    task = build_trace_task(reviewer, steps=2_000)
    client.force_login(reviewer)
    html = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    tree = html[html.index('id="trace-panel"') : html.index('id="timeline-panel"')]
    assert tree.count(RUN_ROW) == 5
    assert not STEP_ROW.search(tree)
    assert "Attempt 1" in tree and "5 runs" in tree
    assert "200 model calls · 200 tool calls" in tree
    assert "30 min 00 s" in tree  # each run's duration
    steps_url = reverse("trace_steps", args=[task.pk, task.runs.first().pk])
    assert f'hx-get="{steps_url}" hx-trigger="toggle once"' in tree


def test_run_steps_load_200_at_a_time_in_the_order_they_happened(
    client: Any, reviewer: Any
) -> None:
    """Issue 26 item 4: a run's model calls and tool calls come merged in time order,
    200 per page, with a "more" row that loads the rest; each row shows its latency,
    tokens and cost (a model call) or its size (a tool call)."""
    task = TaskFactory(attempt_count=1)
    run = RunFactory(task=task)
    start = timezone.now() - timedelta(hours=1)
    for i in range(130):
        _call(run, i, start + timedelta(seconds=2 * i))
        ToolEvidenceFactory(
            run=run, sequence=i, title=f"Doc {i}", created_at=start + timedelta(seconds=2 * i + 1)
        )
    client.force_login(reviewer)
    url = reverse("trace_steps", args=[task.pk, run.pk])
    first = client.get(url).content.decode()
    kinds = STEP_ROW.findall(first)
    assert len(kinds) == 200
    assert kinds[:4] == ["model", "tool", "model", "tool"]
    assert "1.2 s" in first and "300→20 tokens" in first and "Doc 0" in first
    assert f'hx-get="{url}?offset=200"' in first
    assert "Show the next 60 steps (60 left)" in first
    rest = client.get(url, {"offset": 200}).content.decode()
    assert len(STEP_ROW.findall(rest)) == 60
    assert "Doc 129" in rest and "offset=" not in rest
    assert "autofocus" in rest  # the first new row takes the focus of the removed button


def test_attempt_with_many_runs_pages_its_runs(client: Any, reviewer: Any) -> None:
    """Issue 26 item 4: an attempt of 205 runs shows 200 on the page and a "more" row
    for the other 5."""
    task = TaskFactory(attempt_count=1)
    Run.objects.bulk_create(
        [Run(task=task, attempt_index=1, graph_index=i, model_name="m") for i in range(205)]
    )
    client.force_login(reviewer)
    html = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert html.count(RUN_ROW) == 200
    more_url = reverse("trace_runs", args=[task.pk, 1]) + "?offset=200"
    assert more_url in html and "5 left" in html
    rest = client.get(more_url).content.decode()
    assert rest.count(RUN_ROW) == 5


def test_model_call_content_is_the_answer_it_got(client: Any, reviewer: Any) -> None:
    """Issue 26 item 4: opening a model call loads what was sent (sizes) and the
    message the model answered with; a call that got no answer says so."""
    task = TaskFactory(attempt_count=1)
    run = RunFactory(task=task)
    start = timezone.now() - timedelta(minutes=5)
    first = _call(run, 0, start)
    RunMessage.objects.create(run=run, index=0, role="user", content="Q", created_at=start)
    RunMessage.objects.create(
        run=run, index=1, role="assistant", content="First answer", created_at=start
    )
    failed = _call(run, 1, start + timedelta(seconds=10))
    third = _call(run, 2, start + timedelta(seconds=20))
    RunMessage.objects.create(
        run=run,
        index=2,
        role="assistant",
        content="Third answer",
        created_at=start + timedelta(seconds=20),
    )
    client.force_login(reviewer)

    def content(call: LLMRequestSnapshot) -> str:
        return client.get(reverse("trace_call", args=[task.pk, call.pk])).content.decode()

    assert "First answer" in content(first) and "Third answer" not in content(first)
    assert "No answer recorded for this call." in content(failed)
    assert "Third answer" in content(third)
    assert "302 in, 20 out" in content(third)


def test_tool_call_content_is_its_full_result(client: Any, reviewer: Any) -> None:
    """Issue 26 item 4: opening a tool call loads its arguments and the whole result,
    escaped."""
    task = make_reviewable_task(reviewer)
    item = task.tool_evidence.get(sequence=1)
    item.content = "<script>alert(1)</script>" + "x" * 50_000
    item.save()
    client.force_login(reviewer)
    html = client.get(reverse("trace_tool", args=[task.pk, item.pk])).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" + "x" * 50_000 in html
    assert "<script>alert" not in html
    assert "&quot;document_id&quot;: 18" in html


def test_trace_is_for_reviewers_and_operators(
    client: Any, requester: Any, other_requester: Any, reviewer: Any
) -> None:
    """Issue 26 item 4 (as the transcripts it replaces, issue 13): the owner gets no
    trace panel and a 403 on its fragments; for anyone else the task does not exist."""
    task = make_reviewable_task(requester)
    run = task.runs.get()
    call = _call(run, 0, timezone.now())
    urls = [
        reverse("trace_runs", args=[task.pk, 1]),
        reverse("trace_steps", args=[task.pk, run.pk]),
        reverse("trace_call", args=[task.pk, call.pk]),
        reverse("trace_tool", args=[task.pk, task.tool_evidence.first().pk]),
    ]
    client.force_login(requester)
    assert "trace-panel" not in client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert [client.get(url).status_code for url in urls] == [403] * 4
    client.force_login(other_requester)
    assert [client.get(url).status_code for url in urls] == [404] * 4
    client.force_login(reviewer)
    assert [client.get(url).status_code for url in urls] == [200] * 4
    other = make_reviewable_task(requester, title="Another")
    foreign = reverse("trace_steps", args=[other.pk, run.pk])  # a run of another task
    assert client.get(foreign).status_code == 404


def test_step_pages_read_a_bounded_number_of_rows(
    client: Any, reviewer: Any, django_assert_max_num_queries: Any
) -> None:
    """Issue 26 item 4: a page of steps is the same few queries at any offset of a
    2,000-step run."""
    task = build_trace_task(reviewer, steps=2_000)
    run = task.runs.first()
    client.force_login(reviewer)
    client.get(reverse("home"))
    # session, user, groups, task, run, the page's keys, two counts, the calls, the tools,
    # the task's open audits (issue 36: the read is recorded against them)
    for offset in (0, 200, 399):
        with django_assert_max_num_queries(11):
            response = client.get(
                reverse("trace_steps", args=[task.pk, run.pk]), {"offset": offset}
            )
        assert len(STEP_ROW.findall(response.content.decode())) == min(200, 400 - offset)


def test_attempt_totals_sum_its_runs(reviewer: Any) -> None:
    """Issue 26 item 4: an attempt's row sums its runs' tokens and cost and spans from
    the first start to the last finish."""
    task = TaskFactory(attempt_count=2)
    start = timezone.now() - timedelta(minutes=10)
    for i, cost in enumerate([Decimal("0.5"), None]):
        RunFactory(
            task=task,
            attempt_index=2,
            graph_index=i,
            input_tokens=100,
            output_tokens=10,
            cost=cost,
            started_at=start + timedelta(seconds=i),
            finished_at=start + timedelta(seconds=90),
        )
    (attempt,) = trace_tree.attempts(task_page.runs(task))
    assert (attempt.index, attempt.run_count, attempt.input_tokens) == (2, 2, 200)
    assert (attempt.cost.amount, attempt.cost.priced, attempt.cost.unknown) == (
        Decimal("0.5"),
        1,
        1,
    )
    assert attempt.duration_ms == 90_000


def test_evidence_labels_from_run_counts_match_the_labels_of_every_result(
    reviewer: Any,
) -> None:
    """Issue 26 item 4: the task page labels its first results from the runs' counts
    instead of reading all 20,000 result ids; the labels are those the validator saw,
    for any window of the list (team nodes, a synthesis, a superseded main run, two
    attempts)."""
    task = TaskFactory(attempt_count=2)
    plan = [
        (1, "main", 0, 3),  # superseded by the next main run of attempt 1
        (1, "main", 0, 2),
        (2, "team_node", 0, 4),
        (2, "team_node", 1, 0),
        (2, "team_node", 2, 3),
        (2, "synthesis", 3, 2),
    ]
    for attempt, kind, graph, results in plan:
        run = RunFactory(task=task, attempt_index=attempt, kind=kind, graph_index=graph)
        for i in range(results):
            ToolEvidenceFactory(run=run, sequence=i)
    expected = evidence_labels_for_task(task.pk)
    runs = task_page.runs(task)
    listed = task_page.evidence(task, limit=100)
    assert len(listed) == 14 and len(expected) == 11
    for start in (0, 3, 7, 13):
        window = listed[start : start + 5]
        got = evidence_labels_of(window, runs, start=start)
        assert got == {e.pk: expected[e.pk] for e in window if e.pk in expected}
