"""The chaos drill (issue 17): the production profile under faults, checked by invariants.

Every process is started the way production starts it: ``bin/prod <process>`` (the
Procfile's command lines and defaults: threads pool, 100 attempt slots per process,
pooled database connections, 30 s leases, the reaper on its own queue with its own beat),
each process on its own so one can be killed without the others noticing. The database
and the broker are the drill's own servers (``chaos.services``), so restarting them
touches nothing else. Models are scripted (``chaos.worker``) with a latency per call.

Scenarios, each on a fresh batch of tasks created through the API:

- ``kills``: an attempts worker SIGKILLed every 3 s (and started again), the validation
  worker SIGKILLed once, while the batch runs;
- ``broker-restart``: Redis killed and started empty (every queued and unacknowledged
  message lost) while most of the batch still waits in the queue;
- ``database``: every PostgreSQL backend terminated, then PostgreSQL restarted;
- ``broker-outage``: Redis down for ``outage`` seconds while clients keep creating tasks
  through the API (retrying a failed request with the same Idempotency-Key).

After each scenario: every task settled (``awaiting_feedback``/``needs_review``/
``failed``, failures counted); evidence neither duplicated nor lost (every finished run
has all its tool results, sequences 0..n-1 without gaps or repeats); one unbroken event
chain per task (each event starts where the previous one ended, the last one ends at
the task's status); no two attempts of one task calling the model at the same time;
model calls per attempt; no 5xx from the API; and the time from each fault to recovery.
One line per scenario; exit status 1 when an invariant fails. Recovery times are
figures with a target (a crashed or lost job running again within 60 s), printed MET or
MISSED, never a pass/fail gate (the machine is shared).
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent
SETTLED = {"awaiting_feedback", "needs_review", "failed", "closed"}
RECOVERY_TARGET_S = 60.0  # with the default settings (issue 17)


@dataclass(frozen=True)
class Sizes:
    kills_tasks: int
    kills_seconds: float
    restart_tasks: int
    database_tasks: int
    outage_seconds: float
    outage_rate: float  # tasks created per second during the outage scenario
    outage_load_seconds: float
    settle_timeout: float
    # Recovery timing settings passed to every process (empty: the defaults).
    timing: tuple[tuple[str, str], ...] = ()


FULL = Sizes(
    kills_tasks=150,
    kills_seconds=60,
    restart_tasks=150,
    database_tasks=100,
    outage_seconds=60,
    outage_rate=3,
    outage_load_seconds=80,
    settle_timeout=300,
)
# The CI version: fewer tasks and shorter faults, and recovery settings scaled down
# (10 s lease instead of 30, reaper and heartbeats every 3 s instead of 15) so every
# scenario recovers in seconds; the full version runs the defaults.
SHORT = Sizes(
    timing=(
        ("ATTEMPT_LEASE_SECONDS", "10"),
        ("REAPER_INTERVAL_SECONDS", "3"),
        ("OPS_HEARTBEAT_SECONDS", "3"),
        ("OUTBOX_RELAY_INTERVAL_SECONDS", "2"),
    ),
    kills_tasks=30,
    kills_seconds=12,
    restart_tasks=30,
    database_tasks=20,
    outage_seconds=15,
    outage_rate=2,
    outage_load_seconds=20,
    settle_timeout=180,
)


# --- processes -----------------------------------------------------------------------------


class Process:
    """One Procfile process started with ``bin/prod <name>`` in its own session."""

    def __init__(self, name: str, env: dict[str, str], logs: Path, port: int) -> None:
        self.name = name
        self.env = {
            **env,
            "PORT": str(port),
            "PROD_SETUP": "0",
            "ATTEMPTS_PROCESSES": "1",
            "VALIDATION_PROCESSES": "1",
        }
        self.log_path = logs / f"{name}-{port}.log"
        self.popen: subprocess.Popen[bytes] | None = None
        self.kills: list[tuple[float, int]] = []  # (when, pid) for each pid of the group
        self.started_at_offset = 0

    def start(self) -> None:
        log = self.log_path.open("a")
        self.started_at_offset = log.tell()
        self.popen = subprocess.Popen(
            [str(BASE_DIR / "bin" / "prod"), self.name.split("-")[0]],
            cwd=BASE_DIR,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def pids(self) -> set[int]:
        """bin/prod's honcho and everything below it (honcho starts each process in a
        session of its own, so the process group would miss them)."""
        from bench.procstat import descendants

        if self.popen is None or self.popen.poll() is not None:
            return set()
        return descendants(self.popen.pid)

    def kill(self) -> float:
        """SIGKILL honcho and the process it runs, as a machine or container dies;
        returns when."""
        assert self.popen is not None
        pids = self.pids()
        when = time.time()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.popen.wait(timeout=10)
        for pid in pids:
            self.kills.append((when, pid))
        return when

    def stop(self) -> None:
        """SIGTERM to honcho, which stops its process (a warm shutdown); SIGKILL to
        whatever is left after 20 s."""
        if self.popen is None or self.popen.poll() is not None:
            return
        pids = self.pids()
        self.popen.terminate()
        try:
            self.popen.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


# --- model calls -----------------------------------------------------------------------------


@dataclass
class Call:
    id: str
    role: str
    task: int | None
    attempt: int | None
    job: str | None
    tag: str | None
    pid: int
    start: float
    end: float | None = None


def read_calls(folder: Path) -> list[Call]:
    calls: dict[str, Call] = {}
    for path in folder.glob("calls-*.jsonl"):
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # a line cut by a SIGKILL
            if record.get("ev") == "start":
                calls[record["id"]] = Call(
                    id=record["id"],
                    role=record["role"],
                    task=record.get("task"),
                    attempt=record.get("attempt"),
                    job=record.get("job"),
                    tag=record.get("tag"),
                    pid=record["pid"],
                    start=record["t"],
                )
            elif record.get("ev") == "end" and record["id"] in calls:
                calls[record["id"]].end = record["t"]
    return sorted(calls.values(), key=lambda c: c.start)


# --- the drill -------------------------------------------------------------------------------


@dataclass
class Result:
    name: str
    tasks: int = 0
    settled: int = 0
    failed: int = 0
    problems: list[str] = field(default_factory=list)
    faults: int = 0
    recoveries: list[float] = field(default_factory=list)
    settle_after_fault: float | None = None
    agent_calls_per_attempt: float = 0.0
    judge_calls_per_validation: float = 0.0
    overlaps: int = 0
    reruns: int = 0  # infrastructure re-runs of an attempt (requeue_count), all tasks
    dead_runs: int = 0  # runs a dead worker left, kept as evidence
    responses: dict[int, int] = field(default_factory=dict)
    note: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        five = (
            ", ".join(
                f"{code or 'no answer'}×{n}"
                for code, n in sorted(self.responses.items())
                if code >= 500 or code == 0
            )
            or "0"
        )
        rec = (
            f"recovery p50 {statistics.median(self.recoveries):.1f} s "
            f"max {max(self.recoveries):.1f} s "
            f"({'MET' if max(self.recoveries) <= RECOVERY_TARGET_S else 'MISSED'} <= "
            f"{RECOVERY_TARGET_S:.0f} s)"
            if self.recoveries
            else "recovery -"
        )
        settle = (
            f"all settled {self.settle_after_fault:.1f} s after the last fault"
            if self.settle_after_fault is not None
            else "NOT all settled"
        )
        return (
            f"chaos {self.name:<15} tasks {self.tasks:>4}  settled {self.settled}/{self.tasks} "
            f"(failed {self.failed})  faults {self.faults}  re-runs {self.reruns} "
            f"(dead runs kept {self.dead_runs})  {rec}  {settle}  "
            f"calls/attempt agent {self.agent_calls_per_attempt:.2f} judge "
            f"{self.judge_calls_per_validation:.2f}  overlaps {self.overlaps}  5xx {five}  "
            f"{'OK' if self.ok else 'FAILED: ' + '; '.join(self.problems)}"
            + (f"  [{self.note}]" if self.note else "")
        )


class Drill:
    def __init__(self, sizes: Sizes, folder: Path, latency_ms: int, calls: int) -> None:
        from chaos.services import Postgres, Redis, free_port

        self.sizes = sizes
        self.folder = folder
        self.latency_ms = latency_ms
        self.model_calls = calls
        self.pg = Postgres(folder / "pg")
        self.redis = Redis(folder / "redis")
        self.logs = folder / "logs"
        self.call_dir = folder / "calls"
        self.free_port = free_port
        self.processes: dict[str, Process] = {}
        self.web_port = 0
        self.token = ""
        self.responses: dict[int, int] = defaultdict(int)

    # setup ---------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        env = {
            **os.environ,
            "DATABASE_URL": self.pg.url,
            "CELERY_BROKER_URL": self.redis.url,
            "CELERY_APP": "chaos.worker",
            "AGENT_MODEL": "chaos:agent",
            "VALIDATOR_MODEL": "chaos:judge",
            "MODEL_MAX_RETRIES": "0",
            "BENCH_MODEL_LATENCY_MS": str(self.latency_ms),
            "BENCH_MODEL_CALLS": str(self.model_calls),
            "BENCH_CALLS_KEY": "",
            "CHAOS_CALL_LOG_DIR": str(self.call_dir),
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1",
            "SECURE_SSL_REDIRECT": "0",
            "SECURE_HSTS_SECONDS": "0",
            "EVIDENTIA_VAR_DIR": str(self.folder / "var"),
            "LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
            "CELERY_QUEUE_PREFIX": "",
            "CELERY_TASK_DEFAULT_QUEUE": "celery",
            **dict(self.sizes.timing),
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)
        return env

    def setup(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.call_dir.mkdir(parents=True, exist_ok=True)
        (self.folder / "var").mkdir(parents=True, exist_ok=True)
        self.pg.init()
        self.redis.start()
        env = self.env()
        os.environ.update({k: env[k] for k in ("DATABASE_URL", "CELERY_BROKER_URL", "SECRET_KEY")})
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--no-input", "-v0"],
            cwd=BASE_DIR,
            env={**env, "DJANGO_SETTINGS_MODULE": "project.settings"},
            check=True,
        )
        os.environ["DJANGO_SETTINGS_MODULE"] = "project.settings"
        import django

        django.setup()
        import logging

        logging.getLogger("httpx").setLevel(logging.WARNING)
        from django.contrib.auth import get_user_model

        from bench.pipeline import ensure_documents
        from tasks_app.accounts.auth import api_token_create

        ensure_documents()
        user = get_user_model().objects.create_user(username="chaos", password=None)
        self.token = api_token_create(user=user, name="chaos")[1]
        self.web_port = self.free_port()
        names = ["web", "attempts-a", "attempts-b", "validation", "maintenance", "beat"]
        for name in names:
            port = self.web_port if name == "web" else self.free_port()
            self.processes[name] = Process(name, env, self.logs, port)
            self.processes[name].start()
        self._wait_ready()

    def _wait_ready(self) -> None:
        import httpx

        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.base}/api/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        else:
            raise RuntimeError("the web process did not come up: " + self._tail("web"))
        for name in ("attempts-a", "attempts-b", "validation", "maintenance"):
            self._wait_worker(name)

    def _wait_worker(self, name: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._is_ready(name):
                return
            time.sleep(0.2)
        raise RuntimeError(f"worker {name} did not come up: " + self._tail(name))

    def _tail(self, name: str) -> str:
        return self.processes[name].log_path.read_text(errors="replace")[-3000:]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def teardown(self) -> None:
        for process in self.processes.values():
            process.stop()
        self.redis.stop()
        self.pg.stop("immediate")

    # API load --------------------------------------------------------------------------

    def create_tasks(self, n: int, scenario: str, *, rate: float = 0.0) -> list[str]:
        """POST /api/v1/tasks ``n`` times (``rate`` per second, 0 = as fast as 8 clients
        go), each with its own Idempotency-Key, retried with the same key on a 5xx or a
        connection error; returns the tags (one per intended task)."""
        import httpx

        tags = [f"{scenario}-{i}-{uuid.uuid4().hex[:6]}" for i in range(n)]
        headers = {"Authorization": f"Bearer {self.token}"}
        lock = threading.Lock()

        def post(tag: str) -> None:
            key = uuid.uuid4().hex
            body = {
                "title": f"chaos {tag}",
                "request": f"What is the pipeline overhead budget per task? [chaos {tag}]",
            }
            deadline = time.monotonic() + 120
            with httpx.Client(timeout=30) as client:
                while time.monotonic() < deadline:
                    try:
                        code = client.post(
                            f"{self.base}/api/v1/tasks",
                            json=body,
                            headers={**headers, "Idempotency-Key": key},
                        ).status_code
                    except httpx.HTTPError:
                        code = 0
                    with lock:
                        self.responses[code] += 1
                    if code in (200, 201):
                        return
                    time.sleep(1)

        with ThreadPoolExecutor(max_workers=8) as pool:
            started = time.monotonic()
            futures = []
            for i, tag in enumerate(tags):
                if rate:
                    wait = started + i / rate - time.monotonic()
                    if wait > 0:
                        time.sleep(wait)
                futures.append(pool.submit(post, tag))
            for future in futures:
                future.result()
        return tags

    # database reads that survive a restart ------------------------------------------------

    def db(self, read: Callable[[], Any]) -> Any:
        from django.db import InterfaceError, OperationalError, close_old_connections, connection

        for _ in range(60):
            try:
                close_old_connections()
                return read()
            except (OperationalError, InterfaceError):
                connection.close()
                time.sleep(0.5)
        raise RuntimeError("the drill's database stayed unreachable")

    def _by_tag(self, tags: list[str], column: str) -> dict[str, Any]:
        """``column`` of each task of ``tags`` that exists, by tag."""
        from tasks_app.models import Task

        titles = [f"chaos {t}" for t in tags]
        return self.db(
            lambda: {
                title.removeprefix("chaos "): value
                for title, value in Task.objects.filter(title__in=titles).values_list(
                    "title", column
                )
            }
        )

    def statuses(self, tags: list[str]) -> dict[str, str]:
        return self._by_tag(tags, "status")

    def wait_settled(self, tags: list[str], timeout: float) -> float | None:
        """Seconds until every task of ``tags`` is settled (None on timeout)."""
        started = time.time()
        while time.time() - started < timeout:
            statuses = self.statuses(tags)
            if len(statuses) == len(tags) and all(s in SETTLED for s in statuses.values()):
                return time.time()
            time.sleep(1)
        return None

    def task_ids(self, tags: list[str]) -> dict[str, int]:
        return self._by_tag(tags, "pk")

    # checks ----------------------------------------------------------------------------

    def check(
        self,
        result: Result,
        tags: list[str],
        since: float,
        *,
        last_fault: float,
        allowed: frozenset[int] = frozenset(),
    ) -> None:
        from django.db.models import Count

        from evidence_app.models import ValidationSnapshot
        from tasks_app.models import (
            RUN_LEASE_EXPIRED,
            RUN_TAKEN_OVER,
            Run,
            Task,
            TaskEvent,
            ToolEvidence,
        )

        ids = self.task_ids(tags)
        result.tasks = len(tags)
        counts = self.db(
            lambda: (
                Task.objects.filter(title__in=[f"chaos {t}" for t in tags])
                .values("title")
                .annotate(n=Count("id"))
                .filter(n__gt=1)
                .count()
            )
        )
        if counts:
            result.problems.append(f"{counts} tasks created twice")
        if len(ids) != len(tags):
            result.problems.append(f"{len(tags) - len(ids)} tasks lost")
        tasks = self.db(lambda: list(Task.objects.filter(pk__in=ids.values())))
        result.settled = sum(1 for t in tasks if t.status in SETTLED)
        result.failed = sum(1 for t in tasks if t.status == "failed")
        if result.settled != len(tasks):
            result.problems.append(f"{len(tasks) - result.settled} not settled")
        # Faults never spend a task's attempts (issue 17): the judge accepts every answer,
        # so every task has exactly one attempt, however often it was re-run.
        spent = sum(1 for t in tasks if t.attempt_count != 1)
        if spent:
            result.problems.append(f"{spent} tasks whose attempt count a fault raised")
        result.reruns = sum(t.requeue_count for t in tasks)

        # Event chains.
        broken = 0
        events: dict[int, list[Any]] = defaultdict(list)
        for event in self.db(
            lambda: list(TaskEvent.objects.filter(task_id__in=ids.values()).order_by("at", "id"))
        ):
            events[event.task_id].append(event)
        for task in tasks:
            status = "open"
            for event in events[task.pk]:
                if event.from_status != status:
                    broken += 1
                    break
                status = event.to_status
            else:
                if status != task.status:
                    broken += 1
        if broken:
            result.problems.append(f"{broken} broken event chains")

        # Evidence: no repeats or gaps; every finished run has all its tool results.
        expected_tools = max(0, self.model_calls - 2)
        runs = self.db(lambda: list(Run.objects.filter(task_id__in=ids.values())))
        sequences: dict[int, list[int]] = defaultdict(list)
        for run_id, seq in self.db(
            lambda: list(
                ToolEvidence.objects.filter(task_id__in=ids.values()).values_list(
                    "run_id", "sequence"
                )
            )
        ):
            sequences[run_id].append(seq)
        result.dead_runs = sum(
            1 for r in runs if r.finish_reason in (RUN_LEASE_EXPIRED, RUN_TAKEN_OVER)
        )
        bad_runs = 0
        for run in runs:
            seqs = sorted(sequences.get(run.pk, []))
            if seqs != list(range(len(seqs))):
                bad_runs += 1
            elif run.status == "completed" and len(seqs) != expected_tools:
                bad_runs += 1
        if bad_runs:
            result.problems.append(f"{bad_runs} runs with duplicated or missing evidence")

        # Model calls.
        calls = [c for c in read_calls(self.call_dir) if c.start >= since]
        by_tag = {v: k for k, v in ids.items()}
        mine = [c for c in calls if (c.tag in ids) or (c.task in by_tag)]
        agent = [c for c in mine if c.role == "agent"]
        judge = [c for c in mine if c.role == "judge"]
        attempts_started = len({(r.task_id, r.attempt_index) for r in runs})
        snapshots = self.db(
            lambda: ValidationSnapshot.objects.originals().filter(task_id__in=ids.values()).count()
        )
        result.agent_calls_per_attempt = len(agent) / max(1, attempts_started)
        result.judge_calls_per_validation = len(judge) / max(1, snapshots)
        # Two jobs calling the model for one task at the same time.
        per_task: dict[Any, dict[str, list[float]]] = defaultdict(dict)
        for c in agent:
            key = c.task if c.task is not None else ids.get(c.tag or "")
            span = per_task[key].setdefault(f"{c.pid}/{c.job}", [c.start, c.end or c.start])
            span[0] = min(span[0], c.start)
            span[1] = max(span[1], c.end or c.start)
        for spans in per_task.values():
            ordered = sorted(spans.values())
            result.overlaps += sum(
                1 for a, b in zip(ordered, ordered[1:], strict=False) if b[0] < a[1]
            )
        if result.overlaps:
            result.problems.append(f"{result.overlaps} overlapping attempts")
        result.responses = dict(self.responses)
        if any((code >= 500 or code == 0) and code not in allowed for code in self.responses):
            result.problems.append(
                "API errors: "
                + ", ".join(f"{c or 'no answer'}×{n}" for c, n in sorted(self.responses.items()))
            )
        self.responses.clear()

    def recovery(
        self, tags: list[str], kills: list[tuple[float, int]], since: float
    ) -> list[float]:
        """For each killed process, the tasks it was calling the model for when it died:
        seconds from the kill to the task's next model call by another process."""
        calls, _ = self._calls_of(tags, since)
        found = []
        for when, pid in kills:
            cut = {
                (c.task, c.tag)
                for c in calls
                if c.pid == pid and c.start <= when and (c.end is None or c.end > when)
            }
            for task, tag in cut:
                later = [
                    c.start
                    for c in calls
                    if c.pid != pid and c.start > when and (c.task == task or c.tag == tag)
                ]
                if later:
                    found.append(min(later) - when)
        return found

    def progress_after(self, tags: list[str], when: float) -> list[float]:
        """Seconds from ``when`` to each unsettled task's next model call."""
        calls, tag_of = self._calls_of(tags, when)
        firsts: dict[Any, float] = {}
        for c in calls:
            if c.start > when:
                firsts.setdefault(c.tag or tag_of.get(c.task or 0), c.start - when)
        return sorted(firsts.values())

    def _calls_of(self, tags: list[str], since: float) -> tuple[list[Call], dict[int, str]]:
        """The model calls made for the tasks of ``tags`` from ``since`` on (a call names
        its task by tag or by id), and each task id's tag."""
        ids = self.task_ids(tags)
        tag_of = {pk: tag for tag, pk in ids.items()}
        calls = [
            c
            for c in read_calls(self.call_dir)
            if c.start >= since and (c.tag in ids or c.task in tag_of)
        ]
        return calls, tag_of

    # scenarios ---------------------------------------------------------------------------

    def scenario_kills(self) -> Result:
        result = Result("kills")
        since = time.time()
        tags: list[str] = []
        rate = self.sizes.kills_tasks / self.sizes.kills_seconds
        loader = threading.Thread(
            target=lambda: tags.extend(
                self.create_tasks(self.sizes.kills_tasks, "kills", rate=rate)
            )
        )
        loader.start()  # tasks keep arriving while workers die
        time.sleep(2)
        end = time.time() + self.sizes.kills_seconds
        kills: list[tuple[float, int]] = []
        last = time.time()
        validation_killed = False
        next_kill = time.time()
        # Until the window ends, at most every 3 s, a ready attempts worker with model
        # calls in flight dies (one still starting up holds no work); from its middle
        # on, the validation worker dies once while the validator model is called.
        while time.time() < end or (not validation_killed and time.time() < end + 60):
            if time.time() < end and time.time() >= next_kill:
                busy = [
                    n for n in ("attempts-a", "attempts-b")
                    if self._is_ready(n) and self._calls_in_flight(n)
                ]  # fmt: skip
                if busy:
                    last = self._kill_and_restart(max(busy, key=self._calls_in_flight), kills)
                    next_kill = time.time() + 3
            if not validation_killed and time.time() > end - self.sizes.kills_seconds / 2:
                if self._is_ready("validation") and self._calls_in_flight("validation"):
                    last = self._kill_and_restart("validation", kills)
                    validation_killed = True
            time.sleep(0.2)
        result.faults = len({w for w, _ in kills})
        loader.join()
        for name in ("attempts-a", "attempts-b", "validation"):
            self._wait_worker(name)
        settled_at = self.wait_settled(tags, self.sizes.settle_timeout)
        result.settle_after_fault = settled_at - last if settled_at else None
        result.recoveries = self.recovery(tags, kills, since)
        self.check(result, tags, since, last_fault=last)
        return result

    def _is_ready(self, name: str) -> bool:
        process = self.processes[name]
        with process.log_path.open(errors="replace") as log:
            log.seek(process.started_at_offset)
            return " ready." in log.read()

    def _calls_in_flight(self, name: str) -> int:
        pids = self.processes[name].pids()
        return sum(1 for c in read_calls(self.call_dir) if c.pid in pids and c.end is None)

    def _kill_and_restart(self, name: str, kills: list[tuple[float, int]]) -> float:
        process = self.processes[name]
        before = len(process.kills)
        when = process.kill()
        kills += process.kills[before:]
        process.start()
        return when

    def scenario_broker_restart(self) -> Result:
        """Half the batch waits in ``validating`` (its validation jobs queued: the
        validation worker is stopped), the other half waits in ``open`` (attempt jobs
        queued: the attempts workers are stopped); then Redis dies and starts empty, so
        every one of those jobs is lost, and the workers come back."""
        result = Result("broker-restart")
        since = time.time()
        half = self.sizes.restart_tasks // 2
        self.processes["validation"].stop()
        validating = self.create_tasks(half, "restart-v")
        self._wait_status(validating, {"validating"}, timeout=120)
        for name in ("attempts-a", "attempts-b"):
            self.processes[name].stop()
        waiting = self.create_tasks(self.sizes.restart_tasks - half, "restart-o")
        tags = validating + waiting
        self.redis.restart()
        fault = time.time()
        result.faults = 1
        for name in ("validation", "attempts-a", "attempts-b"):
            self.processes[name].start()
        settled_at = self.wait_settled(tags, self.sizes.settle_timeout)
        result.settle_after_fault = settled_at - fault if settled_at else None
        progress = self.progress_after(tags, fault)
        result.recoveries = progress
        result.note = (
            f"{half} validation and {len(waiting)} attempt jobs lost; recovery = restart to "
            "each task's next model call"
        )
        self.check(result, tags, since, last_fault=fault)
        return result

    def _wait_status(self, tags: list[str], statuses: set[str], timeout: float) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = self.statuses(tags)
            if len(found) == len(tags) and set(found.values()) <= statuses:
                return
            time.sleep(0.5)
        raise RuntimeError(f"tasks did not reach {statuses}: {self.statuses(tags)}")

    def scenario_database(self) -> Result:
        """Tasks keep arriving through the API while every PostgreSQL backend is
        terminated twice, then PostgreSQL restarts. The API may answer 503 while the
        database is away (clients retry with the same key); never 500."""
        result = Result("database")
        since = time.time()
        n = self.sizes.database_tasks
        tags: list[str] = []
        loader = threading.Thread(
            target=lambda: tags.extend(self.create_tasks(n, "database", rate=n / 12))
        )
        loader.start()
        time.sleep(3)
        self._terminate_backends()
        time.sleep(3)
        self._terminate_backends()
        time.sleep(3)
        self.pg.restart("fast")
        fault = time.time()
        result.faults = 3
        loader.join()
        settled_at = self.wait_settled(tags, self.sizes.settle_timeout)
        result.settle_after_fault = settled_at - fault if settled_at else None
        result.recoveries = self.progress_after(tags, fault)[-1:]
        result.note = "recovery = restart to the last task's next model call; 503 allowed"
        self.check(result, tags, since, last_fault=fault, allowed=frozenset({503}))
        return result

    def _terminate_backends(self) -> None:
        from django.db import connection

        def run() -> None:
            with connection.cursor() as cur:
                cur.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )

        self.db(run)

    def scenario_broker_outage(self) -> Result:
        result = Result("broker-outage")
        since = time.time()
        sizes = self.sizes
        n = int(sizes.outage_rate * sizes.outage_load_seconds)
        tags: list[str] = []
        loader = threading.Thread(
            target=lambda: tags.extend(self.create_tasks(n, "outage", rate=sizes.outage_rate))
        )
        loader.start()
        time.sleep(max(1.0, (sizes.outage_load_seconds - sizes.outage_seconds) / 2))
        self.redis.stop()
        time.sleep(sizes.outage_seconds)
        self.redis.start()
        back = time.time()
        result.faults = 1
        loader.join()
        settled_at = self.wait_settled(tags, sizes.settle_timeout)
        result.settle_after_fault = settled_at - back if settled_at else None
        waiting = self.progress_after(tags, back)
        result.recoveries = [waiting[0]] if waiting else []
        result.note = (
            f"broker down {sizes.outage_seconds:.0f} s under {sizes.outage_rate:g} task/s; "
            "recovery = first model call after the broker is back"
        )
        self.check(result, tags, since, last_fault=back)
        return result


def main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m chaos", description=__doc__.split("\n")[0])
    parser.add_argument("--short", action="store_true", help="the CI version (about 2 min)")
    parser.add_argument(
        "--only", default="", help="comma-separated: kills,broker-restart,database,broker-outage"
    )
    parser.add_argument("--latency-ms", type=int, default=300, help="model latency per call")
    parser.add_argument("--calls", type=int, default=4, help="model calls per task (with judge)")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder")
    args = parser.parse_args(argv)
    sizes = SHORT if args.short else FULL
    folder = BASE_DIR / "var" / "chaos" / time.strftime("%Y%m%d-%H%M%S")
    drill = Drill(sizes, folder, args.latency_ms, args.calls)
    scenarios = {
        "kills": drill.scenario_kills,
        "broker-restart": drill.scenario_broker_restart,
        "database": drill.scenario_database,
        "broker-outage": drill.scenario_broker_outage,
    }
    chosen = [s for s in args.only.split(",") if s] or list(scenarios)
    unknown = set(chosen) - set(scenarios)
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    timing = ", ".join(f"{k}={v}" for k, v in sizes.timing) or "default recovery settings"
    print(
        f"chaos: {'short' if args.short else 'full'} run ({timing}), scratch folder {folder}",
        flush=True,
    )
    results: list[Result] = []
    started = time.time()
    try:
        drill.setup()
        print(f"chaos: profile up in {time.time() - started:.0f} s", flush=True)
        for name in chosen:
            result = scenarios[name]()
            results.append(result)
            print(result.line(), flush=True)
    finally:
        drill.teardown()
    ok = all(r.ok for r in results) and len(results) == len(chosen)
    print(
        f"chaos: {'all invariants held' if ok else 'INVARIANTS BROKEN'} "
        f"({time.time() - started:.0f} s; logs in {folder / 'logs'})",
        flush=True,
    )
    if ok and not args.keep:
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
    return 0 if ok else 1
