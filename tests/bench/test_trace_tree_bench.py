"""The trace tree benchmark (issue 26 item 4) runs at a tiny size and reports its
figures beside the baseline; it never asserts timings."""

from __future__ import annotations

from typing import Any

import pytest

from bench.trace_tree import build_trace_task, measure, report
from tasks_app.models import LLMRequestSnapshot, RunMessage, Task, ToolEvidence

pytestmark = pytest.mark.django_db


def test_trace_task_has_the_steps_asked_for(reviewer: Any) -> None:
    """Issue 26 item 4: ``steps`` steps are half model calls, half tool calls, in five
    runs, with the transcript messages the recorder would write."""
    task = build_trace_task(reviewer, steps=100)
    assert task.runs.count() == 5
    assert LLMRequestSnapshot.objects.filter(run__task=task).count() == 50
    assert ToolEvidence.objects.filter(task=task).count() == 50
    assert RunMessage.objects.filter(run__task=task).count() == 100


def test_bench_reports_server_time_beside_the_page_without_steps(db: Any) -> None:
    """Issue 26 item 4: the benchmark prints the page with steps beside the baseline and
    leaves no task behind."""
    figures = measure(steps=40, requests=1, browser=False)
    lines = report(figures, "sqlite")
    assert lines[0].startswith("trace tree on sqlite: 40 steps")
    assert "server response" in lines[2]
    assert lines[-1].startswith("  first paint not measured")
    assert not Task.objects.exists()
