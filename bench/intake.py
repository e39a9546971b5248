"""Sustained intake (issue 28): ``clients`` concurrent OpenTelemetry SDK exporters
(OTLP/HTTP protobuf, ``BatchSpanProcessor``) send traces of ``spans_per_trace`` spans
that name their external task, for ``seconds``, against the production profile
(``bin/prod web validation maintenance beat``: gunicorn, one Celery worker per queue
group, beat, PostgreSQL, Redis); then the same content through ``POST /api/v1/tasks/{id}/attempts``.

Each run prints the sustained traces/s and spans/s (acknowledged traces over the time
from the first client's start to the last acknowledgement, flush included), the p50/p95/
p99 acknowledgement latency (the exporter's ``export`` call, or the HTTP request with its
retries), errors and retries, and the CPU split between web, workers and PostgreSQL
(/proc, ``bench/procstat.py``) per trace. Afterwards it waits for the validation backlog
to drain (the drain rate is printed) and checks that every acknowledged span and every
attempt is stored exactly once and every task was validated.

Targets: >= ``target_rate`` (1,000) traces/s sustained, p95 acknowledgement < 500 ms,
0 lost or duplicated, every task validated.
"""

from __future__ import annotations

import multiprocessing
import os
import secrets
import time
import uuid
from pathlib import Path
from typing import Any

import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import close_old_connections, connection, transaction

from bench.common import (
    Figure,
    ProdProcesses,
    Target,
    backend_pids,
    free_port,
    percentile,
    result,
)
from bench.intake_clients import attempts_client, otlp_client
from bench.models import JUDGE
from bench.pipeline import SETTLED
from bench.procstat import cpu_seconds, descendants
from tasks_app.accounts.auth import api_token_create
from tasks_app.models import OtlpSpan, OtlpTrace, Run, Task
from tasks_app.workflow.models import TaskAgent
from tasks_app.workflow.states import TaskStatus

OWNER = "bench_intake"
# The production profile's processes: web, the validation workers, maintenance and beat
# (the outbox relay and the OTLP sweep: what catches a job the broker lost).
ALL_GROUPS = ("web", "validation", "maintenance", "beat")
# The runs: "otlp-web" is the OTLP run with only the web processes on this machine (the
# workers elsewhere, as at any scale that needs 1,000 traces/s): the acknowledgement path
# alone, no assembly and no validation.
KINDS = ("otlp", "otlp-web", "attempts")
# Fewer verdicts than this after the last acknowledgement: the validation kept pace.
MIN_BACKLOG = 100
# How often a long wait says where it is.
PROGRESS_SECONDS = 30.0
# The light warm-up run's backlog is a few dozen tasks on an idle profile.
WARM_DRAIN_TIMEOUT = 120.0


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


class IntakeProfile(ProdProcesses):
    """``bin/prod web validation maintenance beat`` on a free port, with the bench's
    Celery app (its zero-latency judge) and its own queue prefix."""

    def __init__(
        self,
        *,
        broker_url: str,
        database_url: str,
        log_path: Path,
        web_workers: int,
        web_threads: int,
        validation_concurrency: int,
        validation_processes: int,
        db_pool: int,
        groups: tuple[str, ...] = ALL_GROUPS,
    ) -> None:
        self.groups_started = groups
        self.port = free_port()
        self.prefix = f"bench-intake-{uuid.uuid4().hex[:8]}."
        env = {
            **os.environ,
            "DATABASE_URL": database_url,
            "CELERY_BROKER_URL": broker_url,
            "CELERY_QUEUE_PREFIX": self.prefix,
            "CELERY_TASK_DEFAULT_QUEUE": self.prefix + "default",
            "CELERY_APP": "bench.worker",
            "VALIDATOR_MODEL": JUDGE,
            "MODEL_MAX_RETRIES": "0",
            "BENCH_RESULT_BACKEND": "",
            "WEB_WORKERS": str(web_workers),
            "WEB_THREADS": str(web_threads),
            "VALIDATION_CONCURRENCY": str(validation_concurrency),
            "VALIDATION_PROCESSES": str(validation_processes),
            "DB_POOL_MAX_SIZE": str(db_pool),
            "DB_CONN_MAX_AGE": "0",
            # The budget is per account and per process: the bench is one account.
            "OTLP_MAX_SPANS_PER_MINUTE": str(10**9),
            "SECURE_SSL_REDIRECT": "0",
            "PROD_SETUP": "0",
            "PORT": str(self.port),
            "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("DJANGO_SETTINGS_MODULE", None)
        super().__init__(log_path=log_path, env=env)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> IntakeProfile:
        self.start(list(self.groups_started))
        self._wait_ready()
        return self

    def _wait_ready(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                break
            try:
                if requests.get(self.base_url + "/login/", timeout=2).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the production profile did not answer; log:\n{self.log_tail()}")

    def groups(self) -> dict[str, set[int]]:
        """The profile's processes as web (gunicorn) and workers (celery)."""
        assert self.process is not None
        out: dict[str, set[int]] = {"web": set(), "workers": set()}
        for pid in descendants(self.process.pid):
            line = _cmdline(pid)
            if "gunicorn" in line:
                out["web"].add(pid)
            elif "celery" in line:
                out["workers"].add(pid)
        return out

    def __exit__(self, *exc: object) -> None:
        self.stop()


# --- data ------------------------------------------------------------------------------


def _owner() -> Any:
    user, _ = get_user_model().objects.get_or_create(username=OWNER)
    return user


def cleanup() -> None:
    """Delete what a run of this benchmark created (also what a crashed run left)."""
    OtlpTrace.objects.filter(owner__username=OWNER).delete()
    Task.objects.filter(owner__username=OWNER).delete()


def _forget_queues(broker_url: str, prefix: str) -> None:
    """Delete a stopped profile's queues (jobs its workers never reached) and the
    unacknowledged messages of its workers from the broker."""
    import redis

    client = redis.Redis.from_url(broker_url)
    try:
        keys = list(client.scan_iter(match=prefix + "*"))
        if keys:
            client.delete(*keys)
        client.delete("unacked", "unacked_index")
    finally:
        client.close()


def cleanup_run(user: Any) -> None:
    """Between runs: the traces (and spans) of the run before, so the next run's span
    checks count only its own rows (the other checks read the run's own task ids)."""
    OtlpTrace.objects.filter(owner=user).delete()


def external_tasks(user: Any, n: int, tag: str) -> list[int]:
    """``n`` external tasks in ``open``, created in bulk (the rows ``task_create`` writes
    for an external task: nothing is queued for one)."""
    ids: list[int] = []
    batch = 5_000
    for start in range(0, n, batch):
        with transaction.atomic():
            rows = Task.objects.bulk_create(
                [
                    Task(
                        owner=user,
                        title=f"bench intake {tag} {i}",
                        request="What is the annual training budget per employee?",
                        agent=TaskAgent.EXTERNAL,
                        max_attempts=settings.MAX_ATTEMPTS,
                    )
                    for i in range(start, min(n, start + batch))
                ]
            )
        ids += [t.pk for t in rows]
    return ids


# --- one run ---------------------------------------------------------------------------


def _clients(
    kind: str,
    *,
    url: str,
    token: str,
    task_ids: list[int],
    clients: int,
    seconds: float,
    rate: float,
    spans_per_trace: int,
) -> list[dict[str, Any]]:
    """Start ``clients`` processes (spawned: no Django, no inherited connections), each
    with its share of the tasks and of the rate; their results when all are done."""
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    target = otlp_client if kind == "otlp" else attempts_client
    processes = [
        context.Process(
            target=target,
            args=(
                i,
                url,
                token,
                task_ids[i::clients],
                seconds,
                rate / clients,
                spans_per_trace,
                out,
            ),
        )
        for i in range(clients)
    ]
    for p in processes:
        p.start()
    results = [out.get(timeout=seconds + 900) for _ in processes]
    for p in processes:
        p.join(timeout=30)
    return results


def _wal_lsn() -> str:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_current_wal_lsn()::text")
        return str(cur.fetchone()[0])


def _wal_bytes_since(lsn: str) -> int:
    """WAL written since ``lsn`` by the whole PostgreSQL server (other databases on it
    count too: on a shared server this is an upper bound)."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %s::pg_lsn)", [lsn])
        return int(cur.fetchone()[0])


def _cpu_snapshot(profile: IntakeProfile) -> dict[str, dict[int, float]]:
    groups = profile.groups()
    groups["postgres"] = backend_pids()
    return {name: cpu_seconds(pids) for name, pids in groups.items()}


def _cpu_split(
    before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]
) -> dict[str, float]:
    """CPU seconds per group between two snapshots (a process new since the first counts
    from zero: a PostgreSQL backend opened during the run)."""
    return {
        name: sum(cpu - before.get(name, {}).get(pid, 0.0) for pid, cpu in after[name].items())
        for name in after
    }


def _wait_validated(
    ids: list[int], profile: IntakeProfile, timeout: float, label: str
) -> list[float]:
    """Wait until every task of ``ids`` is settled, at most ``timeout`` seconds, saying
    every ``PROGRESS_SECONDS`` how far the backlog is; the settle times (from the
    validations' snapshots) of those that did."""
    started = time.monotonic()
    deadline = started + timeout
    said = started
    # The run's tasks were created together and the ones no client used stay open: a
    # range of ids counts the same tasks as a list of tens of thousands, far cheaper.
    run_tasks = (
        Task.objects.filter(pk__gte=min(ids), pk__lte=max(ids)) if ids else Task.objects.none()
    )
    while time.monotonic() < deadline and profile.alive():
        close_old_connections()
        done = run_tasks.filter(status__in=SETTLED).count()
        if done == len(ids):
            break
        if time.monotonic() - said >= PROGRESS_SECONDS:
            said = time.monotonic()
            print(
                f"bench: intake {label}: {done:,} of {len(ids):,} tasks validated, "
                f"{said - started:.0f} s into the drain (at most {timeout:.0f} s)",
                flush=True,
            )
        time.sleep(1.0)
    with connection.cursor() as cur:
        cur.execute(
            "SELECT extract(epoch FROM max(at)) FROM tasks_app_taskevent "
            "WHERE task_id = ANY(%s) AND to_status = ANY(%s) GROUP BY task_id",
            [ids, [str(s) for s in SETTLED]],
        )
        return sorted(float(row[0]) for row in cur.fetchall())


def _pending_jobs(profile: IntakeProfile, broker_url: str, ids: list[int]) -> int:
    """How many of the run's tasks still in ``validating`` have their validation job
    waiting: in the profile's validation queue (each priority list), held unacknowledged
    by one of its workers, or recorded in the outbox and not yet published. A task not
    validated at the end of the drain window whose job is waiting is pending, not lost.
    The profile's broker is read directly: it need not be this process's."""
    import redis

    from project.broker import _job_id
    from tasks_app.workflow.models import OutboxJob

    waiting = set(
        Task.objects.filter(pk__in=ids, status=TaskStatus.VALIDATING)
        .exclude(job_id="")
        .values_list("job_id", flat=True)
    )
    if not waiting:
        return 0
    client = redis.Redis.from_url(broker_url)
    try:
        raw: list[bytes] = list(client.hgetall("unacked").values())
        for key in client.scan_iter(match=profile.prefix + "validation*"):
            if client.type(key) == b"list":
                raw += client.lrange(key, 0, -1)
    finally:
        client.close()
    held = {job_id for job_id in map(_job_id, raw) if job_id}
    held |= set(
        OutboxJob.objects.unpublished().filter(task_ref__in=ids).values_list("job_id", flat=True)
    )
    return len(waiting & held)


def _stored(kind: str, user: Any, ids: list[int]) -> dict[str, int]:
    """What the database holds for the run: attempts, main runs, validations and failed
    tasks, and for OTLP spans (and distinct span ids) and traces. One statement, so one
    snapshot: the workers may still be validating, and counts read at different moments
    would disagree (a validation stored between two counts)."""
    from evidence_app.models import ValidationSnapshot

    task, run, snapshot = Task._meta.db_table, Run._meta.db_table, ValidationSnapshot._meta.db_table
    span, trace = OtlpSpan._meta.db_table, OtlpTrace._meta.db_table
    otlp = kind == "otlp"
    owned = (
        f"FROM {span} JOIN {trace} ON {trace}.id = {span}.trace_id "
        f"WHERE {trace}.owner_id = %(owner)s"
    )
    span_counts = (
        f"(SELECT count(*) {owned}), "
        f"(SELECT count(*) FROM (SELECT DISTINCT {span}.trace_id, {span}.span_id {owned}) AS d), "
        f"(SELECT count(*) FROM {trace} WHERE owner_id = %(owner)s)"
        if otlp
        else "0, 0, 0"
    )
    sql = f"""
        WITH t AS (SELECT id, attempt_count, status FROM {task} WHERE id = ANY(%(ids)s))
        SELECT
          (SELECT count(*) FROM t WHERE attempt_count >= 1),
          (SELECT coalesce(sum(attempt_count), 0) FROM t),
          (SELECT count(*) FROM t WHERE status = %(failed)s),
          (SELECT count(*) FROM {run} WHERE task_id = ANY(%(ids)s) AND kind = 'main'),
          (SELECT count(*) FROM {snapshot} WHERE task_id = ANY(%(ids)s)),
          (SELECT count(DISTINCT task_id) FROM {snapshot} WHERE task_id = ANY(%(ids)s)),
          {span_counts}
    """
    with connection.cursor() as cur:
        cur.execute(sql, {"ids": ids, "failed": str(TaskStatus.FAILED), "owner": user.pk})
        row = [int(v) for v in cur.fetchone()]
    names = ["tasks_with_attempt", "attempts", "failed", "main_runs", "validations"]
    names += ["validated_tasks", "spans", "distinct_spans", "traces"]
    out = dict(zip(names, row, strict=True))
    if not otlp:
        for name in ("spans", "distinct_spans", "traces"):
            del out[name]
    return out


def one_run(
    kind: str,
    *,
    profile: IntakeProfile,
    user: Any,
    token: str,
    clients: int,
    seconds: float,
    rate: float,
    spans_per_trace: int,
    drain_timeout: float = 600.0,
    broker_url: str,
    label: str = "",
    web_only: bool = False,
) -> dict[str, Any]:
    """One intake run (``otlp`` or ``attempts``) with its checks, as a details dict; the
    validation backlog is waited for at most ``drain_timeout`` seconds (what is left is
    reported as unvalidated, with the jobs still waiting for it). ``web_only``: the
    profile has no workers, so nothing is assembled or validated, and only the spans are
    checked."""
    n_tasks = int(rate * seconds * 1.25) + clients * 4
    ids = external_tasks(user, n_tasks, kind)
    url = (
        profile.base_url + "/api/v1/otlp/v1/traces"
        if kind == "otlp"
        else profile.base_url + "/api/v1/tasks"
    )
    close_old_connections()
    wal_start = _wal_lsn()
    before = _cpu_snapshot(profile)
    outs = _clients(
        kind,
        url=url,
        token=token,
        task_ids=ids,
        clients=clients,
        seconds=seconds,
        rate=rate,
        spans_per_trace=spans_per_trace,
    )
    after_intake = _cpu_snapshot(profile)
    used = sorted(i for o in outs for i in o["task_ids"])
    intake_end = max(o["ended"] for o in outs)
    print(
        f"bench: intake {label or kind}: {len(used):,} traces sent in "
        f"{intake_end - min(o['started'] for o in outs):.0f} s"
        + ("" if web_only else "; waiting for their validations"),
        flush=True,
    )
    settle_times = (
        []
        if web_only
        else _wait_validated(used, profile, timeout=drain_timeout, label=label or kind)
    )
    after_drain = _cpu_snapshot(profile)
    wal = _wal_bytes_since(wal_start)
    stored = _stored(kind, user, used)
    stored["pending_jobs"] = _pending_jobs(profile, broker_url, used)
    summary = _summarise(
        kind,
        outs=outs,
        used=used,
        intake_end=intake_end,
        settle_times=settle_times,
        cpu_intake=_cpu_split(before, after_intake),
        cpu_all=_cpu_split(before, after_drain),
        cpu_drain=_cpu_split(after_intake, after_drain),
        stored=stored,
        spans_per_trace=spans_per_trace,
        # The web-only profile validates nothing: no backlog to drain, no window.
        drain_window_s=0.0 if web_only else drain_timeout,
    )
    summary["web_only"] = web_only
    if web_only:  # no workers: nothing was to be assembled or validated
        summary.update(lost_attempts=0, duplicate_attempts=0, unvalidated=0)
    summary["wal_kb_per_trace"] = round(wal / 1024 / max(1, len(used)), 1)
    return summary


def _summarise(
    kind: str,
    *,
    outs: list[dict[str, Any]],
    used: list[int],
    intake_end: float,
    settle_times: list[float],
    cpu_intake: dict[str, float],
    cpu_all: dict[str, float],
    cpu_drain: dict[str, float],
    stored: dict[str, int],
    spans_per_trace: int,
    drain_window_s: float,
) -> dict[str, Any]:
    started = min(o["started"] for o in outs)
    wall = intake_end - started
    acks = [a for o in outs for a in o["acks"]]
    acked_spans = sum(n for _, n, ok in acks if ok)
    acked_traces = acked_spans // spans_per_trace if kind == "otlp" else acked_spans
    statuses: dict[str, int] = {}
    for o in outs:
        for code, count in o["statuses"].items():
            statuses[code] = statuses.get(code, 0) + count
    calls = len(acks)
    http = sum(statuses.values())
    retries = sum(o.get("retries", 0) for o in outs) if kind == "attempts" else http - calls
    after_intake = [t for t in settle_times if t > intake_end]
    # A drain rate needs a backlog: a few tasks unvalidated at the last acknowledgement
    # mean the validation kept pace with the intake. A backlog with no verdict after it
    # drained at 0/s over the whole window.
    left_at_intake_end = len(used) - (len(settle_times) - len(after_intake))
    backlog_left = left_at_intake_end >= MIN_BACKLOG
    drain_s = 0.0
    if backlog_left:
        drain_s = (settle_times[-1] - intake_end) if after_intake else drain_window_s
    drain_cpu = cpu_drain.get("workers", 0.0) + cpu_drain.get("postgres", 0.0)
    validated_s = (settle_times[-1] - started) if settle_times else float("nan")
    latencies = [s for s, _, _ in acks]
    cpu_ms = {k: round(v * 1000 / max(1, len(used)), 3) for k, v in cpu_all.items()}
    expected_spans = acked_spans if kind == "otlp" else 0
    return {
        "kind": kind,
        "clients": len(outs),
        "traces_sent": sum(o["traces"] for o in outs),
        "traces_acked": acked_traces,
        "spans_acked": acked_spans if kind == "otlp" else acked_traces * spans_per_trace,
        "wall_s": round(wall, 2),
        "traces_per_s": round(acked_traces / wall, 1) if wall > 0 else 0.0,
        "spans_per_s": round(acked_traces * spans_per_trace / wall, 1) if wall > 0 else 0.0,
        "ack_calls": calls,
        "ack_p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "ack_p95_ms": round(percentile(latencies, 95) * 1000, 1),
        "ack_p99_ms": round(percentile(latencies, 99) * 1000, 1),
        "ack_failures": sum(1 for _, _, ok in acks if not ok),
        "http_statuses": statuses,
        "retries": retries,
        "client_cpu_s": round(sum(o["cpu_s"] for o in outs), 2),
        "flushed": all(o["flushed"] for o in outs),
        "cpu_intake_s": {k: round(v, 2) for k, v in cpu_intake.items()},
        "cpu_total_s": {k: round(v, 2) for k, v in cpu_all.items()},
        "cpu_per_trace_ms": cpu_ms,
        "tasks_used": len(used),
        "validated_settled": len(settle_times),
        "settled_after_intake": len(after_intake),
        "left_at_intake_end": left_at_intake_end,
        "drain_s": round(drain_s, 2),
        "drain_window_s": drain_window_s,
        "drain_per_s": round(len(after_intake) / drain_s, 1) if drain_s > 0 else None,
        # What the workers and PostgreSQL could validate on this machine's cores at the CPU
        # each verdict of the drain cost them (the latency benchmark's bound): the rate
        # over it is the share of the cores the drain kept busy.
        "drain_cpu_bound_per_s": round((os.cpu_count() or 1) * len(after_intake) / drain_cpu, 1)
        if after_intake and drain_s > 0 and drain_cpu > 0
        else None,
        "drain_cpu_s": {k: round(v, 2) for k, v in cpu_drain.items()},
        "validated_per_s": round(len(settle_times) / validated_s, 1) if validated_s else None,
        "stored": stored,
        "lost_spans": (expected_spans - stored.get("distinct_spans", 0)) if kind == "otlp" else 0,
        "duplicate_spans": stored.get("spans", 0) - stored.get("distinct_spans", 0),
        "lost_attempts": acked_traces - stored["tasks_with_attempt"],
        "duplicate_attempts": stored["attempts"]
        - stored["tasks_with_attempt"]
        + max(0, stored["main_runs"] - stored["attempts"]),
        "unvalidated": len(used) - stored["validated_tasks"],
        "duplicate_validations": stored["validations"] - stored["validated_tasks"],
    }


# --- figures ---------------------------------------------------------------------------


def _label(d: dict[str, Any]) -> str:
    if d.get("web_only"):
        return "OTLP exporter, web only"
    return "OTLP exporter" if d["kind"] == "otlp" else "attempts API"


def _figures(d: dict[str, Any], target_rate: float) -> list[Figure]:
    label = _label(d)
    cpu = d["cpu_per_trace_ms"]
    statuses = ", ".join(f"{k}: {v}" for k, v in sorted(d["http_statuses"].items()))
    figures = [
        Figure(
            "intake",
            f"{label}: sustained traces/s ({d['clients']} clients)",
            d["traces_per_s"],
            "traces/s",
            "target",
            target_rate,
            note=f"{d['traces_acked']} traces in {d['wall_s']} s; {d['spans_per_s']:,.0f} spans/s",
        ),
        Figure(
            "intake",
            f"  {label}: acknowledgement p50 / p95 / p99",
            d["ack_p50_ms"],
            "ms",
            "p50 under light load (warm-up run)",
            d.get("light_ack_p50_ms"),
            note=f"p95 {d['ack_p95_ms']} ms, p99 {d['ack_p99_ms']} ms over {d['ack_calls']} calls",
        ),
        Figure(
            "intake",
            f"  {label}: errors / retries",
            d["ack_failures"],
            "",
            "retries",
            d["retries"],
            note=f"HTTP {statuses}",
        ),
        Figure(
            "intake",
            f"  {label}: CPU per trace web / workers / PostgreSQL",
            cpu.get("web", 0.0),
            "ms",
            "workers",
            cpu.get("workers", 0.0),
            note=f"PostgreSQL {cpu.get('postgres', 0.0)} ms; WAL {d.get('wal_kb_per_trace')} KB; "
            f"clients {d['client_cpu_s']} CPU-s in all (same machine)",
        ),
        Figure(
            "intake",
            f"  {label}: validations drained after intake",
            d["drain_per_s"] or 0.0,
            "/s",
            "CPU bound: cores / CPU-s per verdict",
            d["drain_cpu_bound_per_s"],
            note=f"{d['settled_after_intake']} verdicts after intake, in {d['drain_s']} s; "
            f"{d['validated_per_s']}/s from start to last verdict; intake "
            f"{d['traces_per_s']} traces/s",
        ),
    ]
    return figures[:-1] if d.get("web_only") else figures


def _targets(d: dict[str, Any], target_rate: float) -> list[Target]:
    label = _label(d)
    lost = d["lost_spans"] + d["lost_attempts"]
    dup = d["duplicate_spans"] + d["duplicate_attempts"] + d["duplicate_validations"]
    backlog = d["unvalidated"]
    rate = d["drain_per_s"] or d["validated_per_s"] or 0.0
    still = (
        f"; {backlog:,} still to validate ({d['stored'].get('pending_jobs', 0):,} with their "
        f"validation job waiting), "
        f"about {backlog / rate / 60:.0f} min more at {rate}/s"
        if backlog and rate
        else ""
    )
    targets = [
        Target(
            "intake",
            f"{label}: >= {target_rate:,.0f} traces/s sustained",
            f"{d['traces_per_s']:,.1f} traces/s over {d['wall_s']} s",
            d["traces_per_s"] >= target_rate,
        ),
        Target(
            "intake",
            f"{label}: p95 acknowledgement < 500 ms",
            f"{d['ack_p95_ms']} ms",
            d["ack_p95_ms"] < 500,
        ),
        Target(
            "intake",
            f"{label}: 0 lost, duplicated or failed",
            f"lost {lost}, duplicated {dup}, errors {d['ack_failures']}, failed tasks "
            f"{d['stored']['failed']}",
            lost == 0 and dup == 0 and d["ack_failures"] == 0 and d["stored"]["failed"] == 0,
        ),
        Target(
            "intake",
            f"{label}: the backlog drains at >= 80 % of the CPU bound",
            f"{d['drain_per_s']}/s against {d['drain_cpu_bound_per_s']}/s"
            if d["drain_per_s"] is not None
            else f"no backlog: {d['left_at_intake_end']} tasks unvalidated at the end of intake",
            d["drain_per_s"] is None
            or d["drain_per_s"] >= 0.8 * (d["drain_cpu_bound_per_s"] or float("inf")),
        ),
        Target(
            "intake",
            f"{label}: every task validated within the drain window "
            f"({d['drain_window_s']:,.0f} s after intake)",
            f"{d['tasks_used'] - backlog:,} of {d['tasks_used']:,}{still}",
            backlog == 0,
        ),
    ]
    return targets[:3] if d.get("web_only") else targets


def run(
    *,
    clients: int = 8,
    seconds: float = 60.0,
    rate: float = 1100.0,
    target_rate: float = 1000.0,
    spans_per_trace: int = 10,
    web_workers: int = 2,
    web_threads: int = 8,
    validation_concurrency: int = 50,
    validation_processes: int = 2,
    db_pool: int = 10,
    drain_timeout: float = 600.0,
    kinds: tuple[str, ...] = KINDS,
    broker_url: str,
    database_url: str,
    log_dir: Path,
) -> dict[str, Any]:
    if not broker_url.startswith(("redis://", "rediss://")):
        raise RuntimeError("the intake benchmark needs a Redis broker (CELERY_BROKER_URL)")
    if not database_url.startswith(("postgres://", "postgresql://")):
        raise RuntimeError("the intake benchmark needs PostgreSQL (DATABASE_URL)")
    if not kinds or set(kinds) - set(KINDS):
        raise ValueError(f"intake runs are {', '.join(KINDS)}, not {kinds!r}")
    cleanup()
    user = _owner()
    _, token = api_token_create(user=user, name="bench-intake")
    runs = {}
    args = {
        "clients": clients,
        "seconds": seconds,
        "rate": rate,
        "spans_per_trace": spans_per_trace,
        "drain_timeout": drain_timeout,
        "broker_url": broker_url,
    }
    warm = {
        **args,
        "seconds": 1.0,
        "rate": 2.0 * clients,
        "drain_timeout": min(drain_timeout, WARM_DRAIN_TIMEOUT),
    }
    for name in kinds:
        kind = "attempts" if name == "attempts" else "otlp"
        web_only = name == "otlp-web"
        # Each run on a profile of its own, started on an empty database and fresh
        # queues: a backlog the run before left does not take the CPU of the next.
        profile = IntakeProfile(
            broker_url=broker_url,
            database_url=database_url,
            log_path=log_dir / f"bench-intake-{name}.log",
            web_workers=web_workers,
            web_threads=web_threads,
            validation_concurrency=validation_concurrency,
            validation_processes=validation_processes,
            db_pool=db_pool,
            groups=("web",) if web_only else ALL_GROUPS,
        )
        each = {"profile": profile, "user": user, "token": token, "web_only": web_only}
        try:
            with profile:
                # A light run first: every web process has served a request (lazy setup
                # done), and its acknowledgement p50 is the unloaded baseline.
                light = one_run(kind, label=f"{name} warm-up", **each, **warm)
                cleanup_run(user)
                runs[name] = one_run(kind, label=name, **each, **args)
                runs[name]["light_ack_p50_ms"] = light["ack_p50_ms"]
        finally:
            _forget_queues(broker_url, profile.prefix)
            t0 = time.monotonic()
            cleanup()
            print(f"bench: intake {name}: cleaned up in {time.monotonic() - t0:.0f} s", flush=True)
    figures = [f for kind in runs for f in _figures(runs[kind], target_rate)]
    targets = [t for kind in runs for t in _targets(runs[kind], target_rate)]
    details = {
        "config": f"{clients} clients x {seconds} s at {rate:,.0f} traces/s offered; web "
        f"{web_workers}x{web_threads} gthread, validation "
        f"{validation_processes}x{validation_concurrency}, "
        f"DB pool {db_pool}/process",
        **runs,
    }
    return result(figures=figures, targets=targets, details=details)
