"""Where one task's SQL statements and worker CPU go (issue 48).

``python -m bench.task_profile [TASKS] [--out PATH]`` runs TASKS tasks (default 30,
after 5 warm-up tasks) through the worker's work in this process, as the pipeline
benchmark's in-process figure does: ``task_create``, ``attempt_run`` then
``validation_run`` with the zero-latency bench models (no broker for the validation
job). Each phase of the pipeline (claim, agent loop, recorder writes, tools, attempt
finish, outbox, validation claim, packet, prompt, judge model, reconcile, gate,
routing, verdict transition, snapshot, audit draw, events) is timed by wrapping its
function: its own CPU (``time.process_time``, the time of phases inside it excluded),
its own wall time and the SQL statements it sent (BEGIN/COMMIT included, as
``CaptureQueriesContext`` counts them). Then every statement of one task with the phase
and the line that sent it, and a cProfile of TASKS more tasks (functions by own time).

The counts are deterministic; the times are of this machine at this moment (a loaded
machine inflates them; compare phases, not runs). Uses the bench database
(``DATABASE_URL``, default the local PostgreSQL ``bench``) like ``make bench``.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import os
import pstats
import statistics
import sys
import time
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

# (phase, "module:attribute"), outermost first. A phase's figures exclude the phases
# running inside it; what no phase covers is "other" (the bench's own loop).
PHASES: tuple[tuple[str, str], ...] = (
    ("task create (bench)", "tasks_app.workflow.services:task_create"),
    ("attempt: claim", "tasks_app.runtime.attempts:_claim_or_take_over"),
    ("attempt: agent loop", "tasks_app.runtime.attempts:attempt_execute"),
    ("attempt: model calls", "project.llm.registry:model_request_with_retry"),
    ("attempt: tools", "tasks_app.runtime.agents.tools.registry:run_tool"),
    ("attempt: recorder writes", "tasks_app.runtime.agents.recorder:RunRecorder._insert"),
    ("attempt: run finish", "tasks_app.runtime.runs:run_finish"),
    ("attempt: finish transition", "tasks_app.runtime.attempts:attempt_finish"),
    ("outbox: insert", "tasks_app.workflow.outbox:outbox_send"),
    ("outbox: publish", "tasks_app.workflow.outbox:_publish_after_commit"),
    ("validation: claim", "tasks_app.workflow.validation_claims:validation_claim_and_read"),
    ("validation: packet", "evidence_app.packets.task_packet:build_packet"),
    ("validation: current judge", "evidence_app.validation.current_judge:current_judge"),
    ("judging: prompt", "evidence_app.validation.judge_calls:_prompt"),
    ("judging: model call", "evidence_app.validator.strict:strict_request"),
    ("judging: citations + reconcile", "evidence_app.validator.judging:reconcile"),
    ("judging: citations + reconcile", "evidence_app.validator.judging:verify_result"),
    ("judging: other", "evidence_app.validation.judge_calls:judge_pair"),
    ("gate", "evidence_app.autoaccept.gate:approved_gate"),
    ("routing", "evidence_app.validation.routing:pair_target"),
    ("routing", "evidence_app.validation.routing:verdict_route"),
    ("verdict transition", "evidence_app.validation.services:_validator_transition"),
    ("verdict: snapshot store", "evidence_app.validation.snapshots:snapshot_store"),
    ("verdict: audit draw", "evidence_app.trust.audits:audit_draw"),
    ("events: webhooks", "tasks_app.notifications.webhooks:webhook_events_for_transition"),
    ("validation: other", "evidence_app.validation.services:validation_attempt"),
)
OTHER = "other (bench loop)"


@dataclass
class Tally:
    cpu: float = 0.0
    wall: float = 0.0
    sql: int = 0
    calls: int = 0


@dataclass
class Recorder:
    """A stack of running phases; each switch charges the CPU, wall time and SQL
    statements since the last switch to the phase on top."""

    connection: Any
    stack: list[str] = field(default_factory=lambda: [OTHER])
    tallies: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    statements: list[tuple[str, str, str]] = field(default_factory=list)
    keep_statements: bool = False
    _cpu: float = 0.0
    _wall: float = 0.0
    _seen: int = 0
    _callers: dict[int, str] = field(default_factory=dict)

    def start(self) -> None:
        self._cpu, self._wall = time.process_time(), time.perf_counter()
        self._seen = len(self.connection.queries_log)

    def _charge(self) -> None:
        cpu, wall = time.process_time(), time.perf_counter()
        log = self.connection.queries_log
        tally = self.tallies[self.stack[-1]]
        tally.cpu += cpu - self._cpu
        tally.wall += wall - self._wall
        tally.sql += len(log) - self._seen
        if self.keep_statements:
            for i in range(self._seen, len(log)):
                sql = log[i]["sql"]
                self.statements.append(
                    (self.stack[-1], self._callers.get(i, ""), " ".join(sql.split())[:150])
                )
        self._seen = len(log)
        self._cpu, self._wall = time.process_time(), time.perf_counter()

    def enter(self, phase: str) -> None:
        self._charge()
        self.stack.append(phase)
        self.tallies[phase].calls += 1

    def leave(self) -> None:
        self._charge()
        self.stack.pop()

    def note_caller(self, execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        """execute_wrapper: remember the line of our code that sent each statement."""
        if self.keep_statements:
            frames = [
                f
                for f in traceback.extract_stack()[:-1]
                if "site-packages" not in f.filename
                and "/bench/" not in f.filename
                and not f.filename.endswith(("project/db.py", "workflow/fence.py"))
            ]
            if frames:
                f = frames[-1]
                root = str(Path(__file__).resolve().parent.parent) + os.sep
                self._callers[len(self.connection.queries_log)] = (
                    f"{f.filename.removeprefix(root)}:{f.lineno} {f.name}"
                )
        return execute(sql, *args)


def _resolve(spec: str) -> tuple[Any, str]:
    import importlib

    module_name, attr = spec.split(":")
    owner: Any = importlib.import_module(module_name)
    *path, name = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    return owner, name


def _timed(fn: Callable[..., Any], phase: str, rec: Recorder) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        rec.enter(phase)
        try:
            return fn(*args, **kwargs)
        finally:
            rec.leave()

    return wrapper


@contextmanager
def phases_timed(rec: Recorder) -> Iterator[None]:
    """Wrap each phase's function wherever it is bound (its module and every module that
    imported it by name; a method on its class)."""
    patches = []
    for phase, spec in PHASES:
        owner, name = _resolve(spec)
        original = getattr(owner, name)
        wrapped = _timed(original, phase, rec)
        patches.append(mock.patch.object(owner, name, wrapped))
        if isinstance(owner, type):
            continue
        for module in list(sys.modules.values()):
            if module is owner or module is None:
                continue
            try:
                bound = module.__dict__.get(name)
            except AttributeError:
                continue
            if bound is original:
                patches.append(mock.patch.object(module, name, wrapped))
    for p in patches:
        p.start()
    try:
        yield
    finally:
        for p in reversed(patches):
            p.stop()


def run(n: int) -> str:
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext, override_settings

    from bench import pipeline
    from bench.models import AGENT, JUDGE

    pipeline.ensure_documents()
    pipeline.cleanup()
    out: list[str] = []
    with (
        override_settings(AGENT_MODEL=AGENT, VALIDATOR_MODEL=JUDGE),
        mock.patch("evidence_app.jobs.validate_attempt_job.delay_on_commit"),
    ):
        _run_tasks(5, None)  # warm: caches, compiled statements, imports
        plain_cpu = _run_tasks(n, None)
        rec = Recorder(connection)
        with CaptureQueriesContext(connection), phases_timed(rec):
            _run_tasks(n, rec)
        one = Recorder(connection, keep_statements=True)
        with (
            CaptureQueriesContext(connection),
            phases_timed(one),
            connection.execute_wrapper(one.note_caller),
        ):
            _run_tasks(1, one)
        # CPU time, not wall: waiting for PostgreSQL is the database's, not ours.
        profiler = cProfile.Profile(time.process_time)
        profiler.enable()
        _run_tasks(n, None)
        profiler.disable()
    pipeline.cleanup()

    out.append(
        f"{n} tasks in-process (task_create + attempt_run + validation_run, bench models, "
        f"{connection.vendor}, DEBUG={settings.DEBUG}); load average "
        f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}\n"
    )
    out.append(
        f"Worker CPU per task, unwrapped (time.process_time): p50 "
        f"{statistics.median(plain_cpu) * 1000:.2f} ms, mean "
        f"{statistics.fmean(plain_cpu) * 1000:.2f} ms\n"
    )
    out.append(_phase_table(rec, n))
    out.append(f"\nEvery statement of one task ({len(one.statements)}):\n")
    for i, (phase, caller, sql) in enumerate(one.statements, 1):
        out.append(f"{i:3d} {phase:<32} {caller}\n      {sql}")
    out.append(f"\nOur functions (cProfile, CPU time, {n} tasks), by cumulative time:\n")
    stream = io.StringIO()
    pstats.Stats(profiler, stream=stream).sort_stats("cumulative").print_stats(
        r"/(evidence_app|tasks_app|project)/", 50
    )
    text = stream.getvalue().replace(str(Path(__file__).resolve().parent.parent) + os.sep, "")
    out.append(_trim_pstats(text))
    for order, count in (("tottime", 40), ("cumulative", 60)):
        out.append(
            f"\ncProfile (CPU time, main thread) of {n} more tasks, top {count} by {order}:\n"
        )
        stream = io.StringIO()
        stats = pstats.Stats(profiler, stream=stream)
        stats.strip_dirs().sort_stats(order).print_stats(count)
        out.append(_trim_pstats(stream.getvalue()))
    return "\n".join(out) + "\n"


def _run_tasks(n: int, rec: Recorder | None) -> list[float]:
    from django.db import connection

    from bench import pipeline
    from evidence_app.validation.services import validation_run
    from tasks_app.runtime.attempts import attempt_run

    user = pipeline.owner()
    cpu = []
    for i in range(n):
        started = time.process_time()
        if rec is not None:
            rec.start()
        task = pipeline._new_task(user, i)
        attempt_run(task_id=task.pk, worker="bench-profile")
        validation_run(task_id=task.pk, attempt_index=1)
        if rec is not None:
            rec._charge()
        cpu.append(time.process_time() - started)
        if rec is None or not rec.keep_statements:
            connection.queries_log.clear()
    return cpu


def _phase_table(rec: Recorder, n: int) -> str:
    total = Tally(
        cpu=sum(t.cpu for t in rec.tallies.values()),
        wall=sum(t.wall for t in rec.tallies.values()),
        sql=sum(t.sql for t in rec.tallies.values()),
    )
    order = list(dict.fromkeys([p for p, _ in PHASES] + [OTHER]))
    lines = [
        "Per task (each phase without the phases inside it; wrapped, so a little slower):",
        "",
        f"| {'phase':<32} | {'calls':>5} | {'SQL':>5} | {'CPU ms':>7} | {'wall ms':>7} |",
        f"|{'-' * 34}|{'-' * 7}|{'-' * 7}|{'-' * 9}|{'-' * 9}|",
    ]
    for phase in order:
        t = rec.tallies.get(phase)
        if t is None or (t.calls == 0 and t.sql == 0 and phase != OTHER):
            continue
        lines.append(
            f"| {phase:<32} | {t.calls / n:>5.1f} | {t.sql / n:>5.1f} | "
            f"{t.cpu / n * 1000:>7.2f} | {t.wall / n * 1000:>7.2f} |"
        )
    lines.append(
        f"| {'total':<32} | {'':>5} | {total.sql / n:>5.1f} | "
        f"{total.cpu / n * 1000:>7.2f} | {total.wall / n * 1000:>7.2f} |"
    )
    return "\n".join(lines) + "\n"


def _trim_pstats(text: str) -> str:
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if "ncalls" in line), 0)
    return "\n".join(lines[start:]).rstrip() + "\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.task_profile")
    parser.add_argument("tasks", nargs="?", type=int, default=30)
    parser.add_argument("--out", default="", help="write the profile here as well")
    args = parser.parse_args(argv)

    from bench.common import setup_django

    setup_django()
    text = run(args.tasks)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
