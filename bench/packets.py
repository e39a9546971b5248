"""Packet rendering: build (three queries + pydantic objects) and render (text, every
character kept, repeats pointed to) the evidence packet of one attempt.

Baseline (same run): reading the same evidence rows' content with one raw
``values_list`` query and joining it — the floor any packet builder pays to get the
bytes out of PostgreSQL. Checks: characters out >= the unique evidence characters and
every unique tool result present, in order, in the output (nothing dropped); bytes
saved by de-duplication on a packet whose results repeat (each content twice).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from django.contrib.auth import get_user_model

from bench import data
from bench.common import Figure, Target, result
from evidence_app.packets.packet_text import render_packet
from evidence_app.packets.task_packet import build_packet
from tasks_app.models import Task
from tasks_app.models import ToolEvidence as EvidenceRow

OWNER = "bench_packets"
MB = 1_000_000


def _median(fn: Any, repeats: int) -> tuple[float, Any]:
    samples, value = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        value = fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), value


def _all_present(rendered: str, contents: list[str]) -> bool:
    """Every content appears in the output, in order (one forward scan)."""
    position = 0
    for content in contents:
        found = rendered.find(content, position)
        if found < 0:
            return False
        position = found + len(content)
    return True


def measure(task: Task, repeats: int) -> dict[str, Any]:
    builds, renders, totals = [], [], []
    render_packet(build_packet(task, 1))  # warm
    for _ in range(repeats):
        started = time.perf_counter()
        packet = build_packet(task, 1)
        built = time.perf_counter()
        rendered = render_packet(packet)
        done = time.perf_counter()
        builds.append(built - started)
        renders.append(done - built)
        totals.append(done - started)
    # The run with the median total, so build + render = total in the figures.
    middle = sorted(range(repeats), key=lambda i: totals[i])[repeats // 2]
    build_s, render_s, total_s = builds[middle], renders[middle], totals[middle]
    raw_s, _ = _median(
        lambda: "".join(
            EvidenceRow.objects.filter(task=task, attempt_index=1)
            .order_by("run_id", "sequence")
            .values_list("content", flat=True)
        ),
        repeats,
    )
    results = [r for run in packet.all_runs for r in run.tool_results]
    seen: dict[str, str] = {}
    for r in results:
        seen.setdefault(r.content_sha256, r.content)
    unique = list(seen.values())
    # The counterfactual without de-duplication: every result gets its own identity.
    for i, r in enumerate(results):
        r.content_sha256 = f"distinct-{i}"
    undeduplicated = len(render_packet(packet))
    return {
        "items": len(results),
        "chars_in": sum(len(r.content) for r in results),
        "unique_chars_in": sum(len(c) for c in unique),
        "chars_out": len(rendered),
        "chars_out_without_dedup": undeduplicated,
        "dedup_saved_chars": undeduplicated - len(rendered),
        "all_unique_present_in_order": _all_present(rendered, unique),
        "build_ms": round(build_s * 1000, 2),
        "render_ms": round(render_s * 1000, 2),
        "total_ms": round(total_s * 1000, 2),
        "raw_read_ms": round(raw_s * 1000, 2),
    }


def run(
    *,
    mb: float = 10,
    items: int = 500,
    growth_mb: tuple[float, ...] = (1, 4, 16),
    repeats: int = 5,
) -> dict[str, Any]:
    owner = data.user(OWNER)
    Task.objects.filter(owner=owner).delete()
    try:
        main = measure(data.evidence_task(owner, total_chars=int(mb * MB), items=items), repeats)
        dup = measure(
            data.evidence_task(
                owner, total_chars=int(mb * MB), items=items, distinct=max(1, items // 2)
            ),
            repeats,
        )
        growth = {}
        for size in growth_mb:
            n = max(1, int(items * size / mb))  # same item size as the main packet
            growth[size] = measure(
                data.evidence_task(owner, total_chars=int(size * MB), items=n), max(1, repeats - 2)
            )
    finally:
        Task.objects.filter(owner=owner).delete()
        get_user_model().objects.filter(username=OWNER).delete()
    figures = [
        Figure(
            "packets",
            f"build+render {mb:g} MB / {items} items",
            main["total_ms"],
            "ms",
            "raw read of the same content",
            main["raw_read_ms"],
        ),
        Figure("packets", "  of which build", main["build_ms"], "ms"),
        Figure("packets", "  of which render", main["render_ms"], "ms"),
        Figure(
            "packets",
            "chars out",
            main["chars_out"],
            "chars",
            "chars in (unique)",
            main["unique_chars_in"],
        ),
        Figure(
            "packets",
            "dedup: chars out (each result twice)",
            dup["chars_out"],
            "chars",
            "same packet without dedup",
            dup["chars_out_without_dedup"],
            note=f"saved {dup['dedup_saved_chars']:,} chars",
        ),
    ]
    targets = [
        Target(
            "packets",
            f"build+render {mb:g} MB < 200 ms",
            f"{main['total_ms']:.0f} ms",
            main["total_ms"] < 200,
        ),
        Target(
            "packets",
            "nothing dropped: chars out >= unique chars in, every result present",
            f"{main['chars_out']:,} >= {main['unique_chars_in']:,}; present: "
            f"{main['all_unique_present_in_order'] and dup['all_unique_present_in_order']}",
            main["chars_out"] >= main["unique_chars_in"]
            and main["all_unique_present_in_order"]
            and dup["all_unique_present_in_order"],
        ),
    ]
    base = growth[growth_mb[0]]
    rows = []
    for size, g in growth.items():
        factor = size / growth_mb[0]
        rows.append(
            [
                f"{size:g} MB",
                str(g["items"]),
                f"{g['build_ms']:.1f}",
                f"{g['render_ms']:.1f}",
                f"{g['total_ms']:.1f}",
                f"{g['raw_read_ms']:.1f}",
                f"{g['total_ms'] / base['total_ms']:.2f}x for {factor:g}x data",
                f"{g['total_ms'] / size:.1f}",
            ]
        )
    details = {
        "main": main,
        "dedup": dup,
        "growth": {f"{k:g}MB": v for k, v in growth.items()},
        "growth_table": {
            "headers": [
                "evidence",
                "items",
                "build ms",
                "render ms",
                "total ms",
                "raw read ms",
                "growth",
                "ms per MB",
            ],
            "rows": rows,
        },
    }
    return result(figures=figures, targets=targets, details=details)
