"""Validations per second of the embedded judge on 2 worker processes, with its
entailment model and without it (``OFFLINE_JUDGE_READS_MEANING`` off), measured in one
run on the same answers (issue 44 item 5, issue 48 item 3).

Each validation is an external task whose attempt is already stored: 20 tool results
(``read_document`` results of public text, the FEVER evidence of the certification
cases) and an answer of 5 claims drawn from them. Only its validation job runs in the
workers (``offline:judge``, the real job: packet, prompt, judge, verdict, routing, audit
draw), so the figure is the judge's and not an agent's. Two worker processes
(``celery -A bench.worker worker --pool=threads``, the pipeline benchmark's
configuration) on one queue; a fresh pair for each configuration, so the model's
per-process cache starts empty and the words-only pair never loads the model.

No two validations share a claim (the model's cache would make the second one free):
validation ``i`` reads the evidence of 20 correct cases and claims 5 of them; a larger
run reuses each 20 with another 5 claims, up to 4 x (correct cases / 20): 236.

Figures: validations/s with the model beside words only, the workers' CPU per validation
(/proc, user + system) with and without the model, their difference (the model's
inference and what reads it, per validation) and the workers' peak resident memory.
Targets (issue 44 item 5): the model adds <= 300 ms of worker CPU per validation of 5
claims x 20 items, and <= +300 MB per worker process. Validations/s has no target of its
own: the issue asks for it beside today's figure, which the words-only run is.
"""

from __future__ import annotations

import json
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from celery import Celery
from django.db import transaction
from django.utils import timezone

from bench.common import (
    Figure,
    Target,
    bench_owner,
    cpu_ms_per,
    delete_tasks_of,
    require_redis,
    result,
    summary_ms,
    wait_for_tasks,
)
from bench.pipeline import Worker
from bench.procstat import cpu_seconds, descendants
from evidence_app.judge_bench import CERTIFY_CASES_PATH
from evidence_app.models import JudgeDefault, ShadowJudge, ValidationSnapshot
from evidence_app.validation.services import VALIDATE_JOB
from project.queues import VALIDATION
from tasks_app.actions import AttemptIn, external_attempt_submit, task_create
from tasks_app.models import Task, TaskEvent
from tasks_app.workflow.models import OutboxJob, TaskAgent
from tasks_app.workflow.states import TaskStatus

NAME = "judge_throughput"
OWNER = "bench_judge_throughput"
JUDGE = "offline:judge"
CLAIMS = 5
ITEMS = 20
MODEL_CPU_MS = 300.0
MEMORY_MB = 300.0


@dataclass(frozen=True)
class Answer:
    """One attempt to validate: its request, tool results (title, content) and claims."""

    request: str
    results: list[tuple[str, str]]
    claims: list[str]

    @property
    def answer(self) -> str:
        return " ".join(claim.rstrip(".") + "." for claim in self.claims)


def _cases(kind: str) -> list[dict[str, Any]]:
    """The certification cases of ``kind``, each claim once (FEVER states a few claims
    twice, with other evidence)."""
    cases = json.loads(Path(CERTIFY_CASES_PATH).read_text(encoding="utf-8"))
    first = {c["answer"]: c for c in reversed(cases) if c["kind"] == kind}
    return sorted(first.values(), key=lambda c: str(c["id"]))


def answers(count: int, *, kind: str = "correct") -> list[Answer]:
    """``count`` answers of CLAIMS claims against ITEMS tool results; no two share a
    claim while ``count`` <= 4 x (cases of ``kind`` / ITEMS)."""
    cases = _cases(kind)
    slices = len(cases) // ITEMS
    out = []
    for i in range(count):
        chosen = cases[(i % slices) * ITEMS : (i % slices + 1) * ITEMS]
        group = (i // slices) % (ITEMS // CLAIMS)
        claimed = chosen[group * CLAIMS : (group + 1) * CLAIMS]
        subjects = ", ".join(
            c["request"].removeprefix("What does the source say about ").rstrip("?")
            for c in claimed
        )
        out.append(
            Answer(
                request=f"What do the sources say about {subjects}?",
                results=[(c["evidence"][0]["title"], c["evidence"][0]["content"]) for c in chosen],
                claims=[c["answer"] for c in claimed],
            )
        )
    return out


def distinct_answers(count: int) -> int:
    """How many of ``count`` answers claim what no earlier one claimed."""
    return min(count, len(_cases("correct")) // ITEMS * (ITEMS // CLAIMS))


def owner() -> Any:
    return bench_owner(OWNER)


def cleanup() -> int:
    return delete_tasks_of(OWNER)


def _submit(user: Any, answer: Answer) -> int:
    task = task_create(
        owner=user,
        title=f"bench judge throughput: {answer.request[:80]}",
        request=answer.request,
        agent=TaskAgent.EXTERNAL,
    )
    attempt = AttemptIn.model_validate(
        {
            "final_answer": answer.answer,
            "runs": [
                {
                    "model": "bench:external-agent",
                    "output_text": answer.answer,
                    "tool_results": [
                        {
                            "tool_name": "read_document",
                            "tool_call_id": f"call-{k}",
                            "arguments": {"title": title},
                            "title": title,
                            "content": content,
                        }
                        for k, (title, content) in enumerate(answer.results)
                    ],
                }
            ],
        }
    )
    external_attempt_submit(task_id=task.pk, attempt=attempt, actor=user)
    return task.pk


def queue_validations(sender: Celery, queue: str, batch: list[Answer]) -> tuple[list[int], float]:
    """Store every attempt of ``batch`` in one transaction, then send all their validation
    jobs at once to ``queue``'s validation queue. Returns the task ids and the wall clock
    just before the first send (the burst's start)."""
    user = owner()
    with transaction.atomic():
        ids = [_submit(user, answer) for answer in batch]
        # Each attempt recorded its validation job in the outbox. This benchmark publishes
        # them itself, as the relay would (marked published in the same transaction, so
        # the outbox's own after-commit publication leaves them alone): all at once to the
        # workers' queue, not one row at a time through the project app's broker.
        recorded = OutboxJob.objects.unpublished().filter(task_ref__in=ids, name=VALIDATE_JOB)
        jobs = list(recorded.values_list("job_id", "args"))
        recorded.update(published_at=timezone.now(), attempts=1)
    if len(jobs) != len(ids):
        raise RuntimeError(f"{len(ids)} attempts stored but {len(jobs)} validation jobs")
    started = time.time()
    for job_id, args in jobs:
        sender.send_task(VALIDATE_JOB, args=args, task_id=job_id, queue=f"{queue}.{VALIDATION}")
    return ids, started


def _validated_at(task_ids: list[int]) -> dict[int, datetime]:
    """When each task left ``validating`` (its verdict's transition, written by a
    worker)."""
    rows = TaskEvent.objects.filter(
        task_id__in=task_ids, from_status=TaskStatus.VALIDATING
    ).values_list("task_id", "at")
    return {task_id: at for task_id, at in rows}


def _wait_validated(
    task_ids: list[int], workers: list[Worker], timeout: float
) -> dict[int, datetime]:
    return wait_for_tasks(
        task_ids, _validated_at, workers, timeout=timeout, poll=0.1, what="validated"
    )


def _wait_ready(app: Celery, workers: list[Worker], timeout: float = 600.0) -> None:
    """Until every worker process answers a ping (each consumes the queue). On this
    shared 2-core machine a worker took over 2 minutes to start under load."""
    names = {w.hostname for w in workers}
    deadline = time.monotonic() + timeout
    while True:
        replies = app.control.ping(destination=sorted(names), timeout=1.0)
        if names <= {name for reply in replies for name in reply}:
            return
        if time.monotonic() > deadline or not all(w.alive() for w in workers):
            tails = "\n".join(w.log_tail() for w in workers)
            raise RuntimeError(f"worker processes not ready; logs:\n{tails}")


def _peak_rss_mb(pids: set[int]) -> float:
    """The largest peak resident memory (VmHWM) among ``pids``, in MB."""
    peak = 0.0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peak = max(peak, int(line.split()[1]) / 1024.0)
    return peak


@dataclass(frozen=True)
class Plan:
    """What one configuration runs: the answers, the warm-up ones, the worker shape."""

    batch: list[Answer]
    warm: list[Answer]
    processes: int
    threads: int
    broker_url: str
    database_url: str
    log_dir: Path


def measure(plan: Plan, *, reads_meaning: bool) -> dict[str, Any]:
    """One burst of ``plan.batch`` validations through ``plan.processes`` fresh worker
    processes judging with ``offline:judge``, the model on or off."""
    label = "model" if reads_meaning else "words"
    queue = f"bench-judge-{uuid.uuid4().hex[:10]}"
    env = {
        "VALIDATOR_MODEL": JUDGE,
        "OFFLINE_JUDGE_READS_MEANING": "true" if reads_meaning else "false",
    }
    workers = [
        Worker(
            broker_url=plan.broker_url,
            database_url=plan.database_url,
            concurrency=plan.threads,
            log_path=plan.log_dir / f"bench-judge-{label}-{i}.log",
            queue=queue,
            hostname=f"{queue}-{i}@bench",
            env=env,
        )
        for i in range(plan.processes)
    ]
    app = Celery("bench-judge", broker=plan.broker_url, set_as_current=False)
    with ExitStack() as stack:
        stack.callback(app.close)
        for worker in workers:
            stack.enter_context(worker)
        _wait_ready(app, workers)
        # Warm: each process has judged (and, with the model, loaded it).
        warm_ids, _ = queue_validations(app, queue, plan.warm)
        _wait_validated(warm_ids, workers, timeout=300)
        pids = set().union(*(descendants(w.process.pid) for w in workers if w.process))
        before = cpu_seconds(pids)
        ids, started = queue_validations(app, queue, plan.batch)
        done = _wait_validated(ids, workers, timeout=max(300.0, 10.0 * len(ids)))
        after = cpu_seconds(pids)
        rss = _peak_rss_mb(pids)
    wall = max(at.timestamp() for at in done.values()) - started
    cpu_ms = cpu_ms_per(before, after, len(ids))
    statuses: dict[str, int] = {}
    for status in Task.objects.filter(pk__in=ids).values_list("status", flat=True):
        statuses[status] = statuses.get(status, 0) + 1
    # The judge call's own wall time, as each verdict recorded it.
    judged = (
        ValidationSnapshot.objects.originals()
        .filter(task_id__in=ids)
        .values_list("latency_ms", flat=True)
    )
    settled = sorted(at.timestamp() - started for at in done.values())
    return {
        "validations": len(ids),
        "wall_s": round(wall, 3),
        "validations_per_s": round(len(ids) / wall, 2),
        "worker_cpu_ms_per_validation": round(cpu_ms, 1),
        "worker_peak_rss_mb": round(rss, 1),
        "statuses": statuses,
        "judge_call": summary_ms([ms / 1000.0 for ms in judged]),
        "first_validated_s": round(settled[0], 3),
        "last_validated_s": round(settled[-1], 3),
    }


def _check_judge() -> None:
    """The workers must judge with ``offline:judge`` alone: a team judge chosen on the
    judge page (JudgeDefault) would replace it, a shadow judge would add jobs."""
    if JudgeDefault.objects.exists():
        raise RuntimeError(
            f"the bench database has a JudgeDefault; the workers would not use {JUDGE}"
        )
    if ShadowJudge.objects.filter(active=True).exists():
        raise RuntimeError("the bench database has an active shadow judge")


def run(
    *,
    validations: int = 40,
    processes: int = 2,
    threads: int = 2,
    broker_url: str,
    database_url: str,
    log_dir: Path,
) -> dict[str, Any]:
    require_redis(broker_url, "judge throughput")
    _check_judge()
    cleanup()
    plan = Plan(
        batch=answers(validations),
        warm=answers(2 * processes * threads, kind="wrong"),
        processes=processes,
        threads=threads,
        broker_url=broker_url,
        database_url=database_url,
        log_dir=log_dir,
    )
    try:
        words = measure(plan, reads_meaning=False)
        model = measure(plan, reads_meaning=True)
    finally:
        cleanup()
    added_cpu = model["worker_cpu_ms_per_validation"] - words["worker_cpu_ms_per_validation"]
    added_rss = model["worker_peak_rss_mb"] - words["worker_peak_rss_mb"]
    shape = f"{processes} processes x {threads} threads"
    figures = [
        Figure(
            NAME,
            f"validations/s, {processes} workers, with the model",
            model["validations_per_s"],
            "validations/s",
            "the same, words only",
            words["validations_per_s"],
            note=f"{validations} validations of {CLAIMS} claims x {ITEMS} items; {shape}",
        ),
        Figure(
            NAME,
            "worker CPU per validation, with the model",
            model["worker_cpu_ms_per_validation"],
            "ms",
            "the same, words only",
            words["worker_cpu_ms_per_validation"],
            note="user+system of the worker processes, /proc",
        ),
        Figure(
            NAME,
            "  model's CPU per validation (difference)",
            round(added_cpu, 1),
            "ms",
            "worker CPU per validation, words only",
            words["worker_cpu_ms_per_validation"],
        ),
        Figure(
            NAME,
            "worker peak resident memory, with the model",
            model["worker_peak_rss_mb"],
            "MB",
            "the same, words only",
            words["worker_peak_rss_mb"],
            note="the largest VmHWM among the worker processes",
        ),
    ]
    targets = [
        Target(
            NAME,
            f"model adds <= {MODEL_CPU_MS:g} ms worker CPU per validation ({CLAIMS}x{ITEMS})",
            f"{added_cpu:.0f} ms",
            added_cpu <= MODEL_CPU_MS,
        ),
        Target(
            NAME,
            f"model adds <= +{MEMORY_MB:g} MB per worker process",
            f"+{added_rss:.0f} MB",
            added_rss <= MEMORY_MB,
        ),
    ]
    details = {
        "judge": JUDGE,
        "workers": shape,
        "validations": validations,
        "distinct_answers": distinct_answers(validations),
        "warmup_validations": len(plan.warm),
        "with_model": model,
        "words_only": words,
        "ratio_model_to_words": round(model["validations_per_s"] / words["validations_per_s"], 3)
        if words["validations_per_s"]
        else None,
    }
    return result(figures=figures, targets=targets, details=details)
