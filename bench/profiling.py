"""pyinstrument profiles of missed targets, written under ``bench/profiles/`` (quick
runs write under ``var/bench/profiles/``): one text profile per benchmark with a miss,
re-running the workload behind the missed figure in this process."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent


def _profile(fn: Callable[[], Any]) -> str:
    from pyinstrument import Profiler

    profiler = Profiler(interval=0.0005)
    profiler.start()
    try:
        fn()
    finally:
        profiler.stop()
    return profiler.output_text(unicode=True, color=False, show_all=False)


def _pipeline(quick: bool) -> dict[str, str]:
    from bench import pipeline

    pipeline.ensure_documents()
    pipeline.in_process(2)  # warm
    n = 3 if quick else 20
    text = _profile(lambda: pipeline.in_process(n))
    pipeline.cleanup()
    head = (
        f"{n} tasks run in-process (attempt_run + validation_run, bench models, no broker):\n"
        "the worker-side work of the pipeline benchmark.\n"
    )
    return {"pipeline": head + text}


def _team(quick: bool) -> dict[str, str]:
    from django.contrib.auth import get_user_model

    from bench import team

    user, _ = get_user_model().objects.get_or_create(username=team.OWNER)
    text = _profile(lambda: team._once(user, 3, 3))
    return {"team": "one team run, 3 nodes, MAX_PARALLEL_TEAM_NODES=3:\n" + text}


def _ui(quick: bool, details: dict[str, Any], missed: list[str]) -> dict[str, str]:
    from django.test import Client
    from django.urls import reverse

    from bench import data
    from tasks_app.models import Task

    reviewer = data.user("bench_reviewer", reviewer=True)
    client = Client()
    client.force_login(reviewer)
    n = 5 if quick else 30
    out = {}
    pages = []
    if any("queue" in m for m in missed):
        pages.append(("ui-queue", reverse("review_queue")))
    if any("detail" in m for m in missed):
        detail = Task.objects.filter(title__startswith="Bench: ").order_by("-pk").first()
        if detail is not None:
            pages.append(("ui-detail", reverse("task_detail", args=[detail.pk])))
    for name, url in pages:
        for _ in range(3):
            client.get(url, secure=True)

        def hit(url: str = url) -> None:
            for _ in range(n):
                client.get(url, secure=True)

        out[name] = f"{n} warm GET {url} as a reviewer ({Task.objects.count():,} tasks):\n" + (
            _profile(hit)
        )
    return out


def _packets(quick: bool, details: dict[str, Any]) -> dict[str, str]:
    from bench import data
    from evidence_app.packets.packet_text import render_packet
    from evidence_app.packets.task_packet import build_packet
    from tasks_app.models import Task

    owner = data.user("bench_packets")
    main = details.get("main", {})
    task = data.evidence_task(
        owner, total_chars=main.get("chars_in", 1_000_000), items=main.get("items", 50)
    )
    try:
        render_packet(build_packet(task, 1))
        text = _profile(lambda: [render_packet(build_packet(task, 1)) for _ in range(3)])
    finally:
        Task.objects.filter(owner=owner).delete()
    return {"packets": "3x build_packet + render_packet of the main packet:\n" + text}


def _intake(quick: bool) -> dict[str, str]:
    """The acknowledgement path: OTLP export requests of one SDK batch (512 spans, as the
    benchmark's exporters send) through the endpoint in this process."""
    from django.contrib.auth import get_user_model
    from django.test import Client

    from bench.otlp import ENDPOINT, _export_request
    from tasks_app.accounts.auth import api_token_create
    from tasks_app.models import OtlpTrace, Task

    user, _ = get_user_model().objects.get_or_create(username="bench-intake-profile")
    _, raw = api_token_create(user=user, name="profile")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}")
    n = 3 if quick else 20
    bodies = [_export_request(51, 10) for _ in range(n + 1)]
    client.post(ENDPOINT, bodies.pop(), content_type="application/x-protobuf", secure=True)

    def hit() -> None:
        for body in bodies:
            client.post(ENDPOINT, body, content_type="application/x-protobuf", secure=True)

    try:
        text = _profile(hit)
        attempts = _intake_attempts(client, user, n=5 if quick else 100)
    finally:
        OtlpTrace.objects.filter(owner=user).delete()
        Task.objects.filter(owner=user).delete()
    return {
        "intake": f"{n} OTLP export requests of 510 spans (51 traces x 10):\n" + text,
        "intake-attempts": attempts,
    }


def _intake_attempts(client: Any, user: Any, *, n: int) -> str:
    """``POST /api/v1/tasks/{id}/attempts`` with the benchmark clients' body (the content
    of one trace), ``n`` times on as many external tasks, in this process."""
    from bench.intake import external_tasks
    from bench.intake_clients import attempt_body

    body = attempt_body()
    ids = external_tasks(user, n + 1, "profile")
    url = "/api/v1/tasks/{}/attempts"
    client.post(url.format(ids.pop()), body, content_type="application/json", secure=True)

    def hit() -> None:
        for task_id in ids:
            answer = client.post(
                url.format(task_id), body, content_type="application/json", secure=True
            )
            if answer.status_code != 201:
                raise RuntimeError(f"POST attempts -> {answer.status_code}: {answer.content[:200]}")

    return f"{n} POST /tasks/{{id}}/attempts (one trace's content each):\n" + _profile(hit)


def profile_misses(report: dict[str, Any], *, quick: bool) -> dict[str, str]:
    """Profile each benchmark with a missed target; returns name -> profile path."""
    folder = (BENCH_DIR.parent / "var" / "bench" / "profiles") if quick else BENCH_DIR / "profiles"
    folder.mkdir(parents=True, exist_ok=True)
    # Only the benchmarks of this run: an --only run keeps the other profiles.
    for name in report["benchmarks"]:
        for old in [*folder.glob(f"{name}.txt"), *folder.glob(f"{name}-*.txt")]:
            old.unlink()
    written: dict[str, str] = {}
    for name, res in report["benchmarks"].items():
        missed = [t["target"] for t in res.get("targets", []) if not t["met"]]
        if not missed:
            continue
        print(f"bench: profiling {name} (missed: {'; '.join(missed)})", flush=True)
        started = time.monotonic()
        try:
            if name == "pipeline":
                texts = _pipeline(quick)
            elif name == "team":
                texts = _team(quick)
            elif name == "ui":
                texts = _ui(quick, res.get("details", {}), missed)
            elif name == "packets":
                texts = _packets(quick, res.get("details", {}))
            elif name == "intake":
                texts = _intake(quick)
            else:
                continue
        except Exception as exc:  # a profile is a bonus; never lose the results over it
            print(f"bench: profiling {name} failed: {type(exc).__name__}: {exc}")
            continue
        for key, text in texts.items():
            path = folder / f"{key}.txt"
            path.write_text(f"Missed: {'; '.join(missed)}\n\n{text}", encoding="utf-8")
            written[key] = str(path.relative_to(BENCH_DIR.parent))
        print(f"bench: profiled {name} in {time.monotonic() - started:.1f} s", flush=True)
    return written
