"""Team parallelism: 3 and 6 nodes on a model that sleeps 300 ms per call, with
``MAX_PARALLEL_TEAM_NODES`` 1 (the baseline, same run) vs 3, through the real team
runner (``tasks_app.runtime.agents.team.run_team``: threads, recorder, database writes) in
this process. Each node makes one model call; the synthesis makes one more.

Figures: the node phase (first node start to last node finish, from the stored
``Run`` rows), which is what the bound parallelises, and the whole team including the
synthesis call (which no parallelism can shorten: Amdahl).
"""

from __future__ import annotations

import os
import statistics
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from bench.common import Figure, Target, result
from bench.models import SLEEPY
from tasks_app.models import Run, RunKind, Task
from tasks_app.runtime.agents.plans import TeamPlan, parse_plan
from tasks_app.runtime.agents.team import run_team

OWNER = "bench_team"


def _plan(nodes: int) -> TeamPlan:
    plan = parse_plan(
        {
            "kind": "team",
            "mode": "parallel",
            "nodes": [
                {"id": f"n{i}", "role": f"Reader {i}", "instructions": "Read and report."}
                for i in range(nodes)
            ],
        }
    )
    assert isinstance(plan, TeamPlan)
    return plan


def _once(user: Any, nodes: int, limit: int) -> tuple[float, float]:
    """(node phase seconds, whole team seconds) of one team attempt."""
    task = Task.objects.create(owner=user, title=f"bench team {nodes}/{limit}", request="Bench?")
    old = settings.MAX_PARALLEL_TEAM_NODES
    settings.MAX_PARALLEL_TEAM_NODES = limit
    try:
        started = time.perf_counter()
        run_team(
            task=task,
            attempt_index=1,
            plan=_plan(nodes),
            base_prompt="## Request\n\nBench?\n",
            fence=None,
            default_model=SLEEPY,
        )
        whole = time.perf_counter() - started
    finally:
        settings.MAX_PARALLEL_TEAM_NODES = old
    runs = list(Run.objects.filter(task=task, kind=RunKind.TEAM_NODE))
    phase = (max(r.finished_at for r in runs) - min(r.started_at for r in runs)).total_seconds()
    task.delete()
    return phase, whole


def run(
    *,
    node_counts: tuple[int, ...] = (3, 6),
    limits: tuple[int, int] = (1, 3),
    sleep: float = 0.3,
    repeats: int = 3,
) -> dict[str, Any]:
    os.environ["BENCH_SLEEP_SECONDS"] = str(sleep)
    user, _ = get_user_model().objects.get_or_create(username=OWNER)
    Task.objects.filter(owner=user).delete()
    _once(user, 2, 2)  # warm: imports, thread pool, first connections
    measured: dict[str, dict[str, float]] = {}
    for nodes in node_counts:
        for limit in limits:
            samples = [_once(user, nodes, limit) for _ in range(repeats)]
            measured[f"{nodes}/{limit}"] = {
                "node_phase_s": round(statistics.median(s[0] for s in samples), 4),
                "whole_s": round(statistics.median(s[1] for s in samples), 4),
                "ideal_node_phase_s": round(-(-nodes // limit) * sleep, 4),
            }
    serial, parallel = limits
    figures: list[Figure] = []
    targets: list[Target] = []
    for nodes in node_counts:
        base = measured[f"{nodes}/{serial}"]
        fast = measured[f"{nodes}/{parallel}"]
        figures.append(
            Figure(
                "team",
                f"{nodes} nodes, limit {parallel}: node phase",
                fast["node_phase_s"] * 1000,
                "ms",
                f"limit {serial}",
                base["node_phase_s"] * 1000,
                note=f"speedup {base['node_phase_s'] / fast['node_phase_s']:.2f}x",
            )
        )
        figures.append(
            Figure(
                "team",
                f"{nodes} nodes, limit {parallel}: whole team",
                fast["whole_s"] * 1000,
                "ms",
                f"limit {serial}",
                base["whole_s"] * 1000,
                note=f"speedup {base['whole_s'] / fast['whole_s']:.2f}x (synthesis call is serial)",
            )
        )
        base["speedup_node_phase"] = round(base["node_phase_s"] / fast["node_phase_s"], 2)
        base["speedup_whole"] = round(base["whole_s"] / fast["whole_s"], 2)
    if 3 in node_counts:
        speedup = measured[f"3/{serial}"]["speedup_node_phase"]
        targets.append(
            Target(
                "team",
                f"3 nodes: node-phase speedup >= 2.7x (limit {parallel} vs {serial})",
                f"{speedup:.2f}x",
                speedup >= 2.7,
            )
        )
    details = {
        "sleep_per_call_s": sleep,
        "repeats": repeats,
        "mode": "parallel (one batch), one model call per node + one synthesis call",
        "measured": measured,
        "note": "key = nodes/MAX_PARALLEL_TEAM_NODES; speedups stored on the limit-1 row",
    }
    return result(figures=figures, targets=targets, details=details)
