"""Issue 17: the chaos drill's invariant checks find what they are meant to find. The
drill itself (``make chaos``) runs in CI; this shows its checks can fail: a broken event
chain, a gap in a run's evidence, an attempt count a fault raised, an unsettled task,
two jobs calling the model for one task at once, and a 500 from the API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chaos.drill import FULL, Drill, Result, read_calls
from tasks_app.models import TaskEvent
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import RunFactory, TaskFactory, ToolEvidenceFactory


def chain(task, *statuses: str) -> None:
    for a, b in zip(statuses, statuses[1:], strict=False):
        TaskEvent.objects.create(task=task, from_status=a, to_status=b, attempt_index=1)


def good_task(tag: str):
    task = TaskFactory(title=f"chaos {tag}", status=S.AWAITING_FEEDBACK, attempt_count=1)
    chain(task, S.OPEN, S.RUNNING, S.VALIDATING, S.AWAITING_FEEDBACK)
    run = RunFactory(task=task)
    for seq in (0, 1):
        ToolEvidenceFactory(run=run, sequence=seq)
    return task


def write_calls(folder: Path, task_id: int, spans: list[tuple[int, str, float, float]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "calls-1.jsonl").open("a") as out:
        for i, (pid, job, start, end) in enumerate(spans):
            call = f"{task_id}-{pid}-{job}-{i}"
            out.write(
                json.dumps(
                    {
                        "id": call,
                        "role": "agent",
                        "task": task_id,
                        "attempt": 1,
                        "job": job,
                        "tag": None,
                        "pid": pid,
                        "thread": 1,
                        "ev": "start",
                        "t": start,
                    }
                )
                + "\n"
            )
            out.write(json.dumps({"id": call, "ev": "end", "t": end}) + "\n")
        out.write('{"id": "cut by a SIGKILL", "ev": "sta\n')


@pytest.mark.django_db(transaction=True)
def test_a_clean_run_passes_every_check(tmp_path: Path) -> None:
    """Issue 17: tasks that went through cleanly raise no problem."""
    drill = Drill(FULL, tmp_path, latency_ms=300, calls=4)
    tasks = [good_task(f"ok-{i}") for i in range(3)]
    for task in tasks:
        write_calls(drill.call_dir, task.pk, [(10, "job-a", 100.0, 100.3)])
    drill.responses[201] += 3
    result = Result("clean")
    drill.check(result, [f"ok-{i}" for i in range(3)], since=0, last_fault=0)
    assert result.problems == []
    assert result.settled == 3 and result.overlaps == 0
    assert result.agent_calls_per_attempt == 1.0


@pytest.mark.django_db(transaction=True)
def test_each_broken_invariant_is_reported(tmp_path: Path) -> None:
    """Issue 17: each kind of damage shows up in the scenario's problems."""
    drill = Drill(FULL, tmp_path, latency_ms=300, calls=4)
    ok = good_task("ok")
    broken_chain = TaskFactory(title="chaos chain", status=S.NEEDS_REVIEW, attempt_count=1)
    chain(broken_chain, S.OPEN, S.RUNNING)
    chain(broken_chain, S.VALIDATING, S.NEEDS_REVIEW)  # running -> validating is missing
    gap = good_task("gap")
    ToolEvidenceFactory(run=gap.runs.get(), sequence=3)  # 0, 1, 3
    spent = TaskFactory(title="chaos spent", status=S.OPEN, attempt_count=2)
    # Two jobs calling the model for task "ok" at the same time.
    write_calls(drill.call_dir, ok.pk, [(10, "job-a", 100.0, 101.0), (11, "job-b", 100.5, 101.5)])
    drill.responses[500] += 1
    result = Result("broken")
    drill.check(result, ["ok", "chain", "gap", "spent", "lost"], since=0, last_fault=0)
    problems = "; ".join(result.problems)
    assert "1 tasks lost" in problems
    assert "1 not settled" in problems
    assert "1 tasks whose attempt count a fault raised" in problems
    assert "1 broken event chains" in problems
    assert "1 runs with duplicated or missing evidence" in problems
    assert "1 overlapping attempts" in problems
    assert "500×1" in problems
    assert spent.pk and not result.ok
    assert "FAILED" in result.line()


def test_call_log_survives_a_line_cut_by_a_kill(tmp_path: Path) -> None:
    """Issue 17: a half-written line (the worker was SIGKILLed) is skipped; a call
    without its end line is kept with no end."""
    write_calls(tmp_path, 7, [(10, "job-a", 1.0, 2.0)])
    with (tmp_path / "calls-1.jsonl").open("a") as out:
        out.write(
            json.dumps({"id": "x", "role": "agent", "task": 7, "pid": 10, "ev": "start", "t": 3.0})
            + "\n"
        )
    calls = read_calls(tmp_path)
    assert [(c.task, c.start, c.end) for c in calls] == [(7, 1.0, 2.0), (7, 3.0, None)]
