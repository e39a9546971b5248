"""``make bench`` / ``python -m bench``: run every benchmark, print the table, write
``bench/results.json`` and, for each missed target, a pyinstrument profile under
``bench/profiles/``.

Environment (defaults in brackets):
  DATABASE_URL       [postgres://postgres@127.0.0.1:5432/bench] created and migrated if absent
  CELERY_BROKER_URL  [redis://127.0.0.1:6379/5]
  BENCH_WORKERS      [number of CPU cores] worker processes of the pipeline benchmark

Options: ``--only pipeline,team,ui,long_lists,packets,otlp,intake,metrics,judge_model,
judge_throughput`` runs some; ``--quick``
runs tiny sizes (a smoke run, seconds; results go to ``var/bench/results-quick.json``);
``--no-profile`` skips the profiles.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from datetime import UTC, datetime
from typing import Any

from bench.common import BENCH_DIR, setup_django

ORDER = (
    "packets",
    "team",
    "pipeline",
    "latency",
    "ui",
    "long_lists",
    "otlp",
    "intake",
    "metrics",
    "judge_model",
    "judge_throughput",
)


def sizes(quick: bool) -> dict[str, dict[str, Any]]:
    if quick:
        return {
            "packets": {"mb": 0.2, "items": 20, "growth_mb": (0.05, 0.1, 0.2), "repeats": 3},
            "team": {"node_counts": (3,), "limits": (1, 3), "sleep": 0.05, "repeats": 1},
            "pipeline": {"n_latency": 5, "n_burst": 5, "warmup": 2, "n_in_process": 3},
            "latency": {
                "backlog": 30,
                "latency_ms": 50,
                "warmup": 3,
                "attempts_concurrency": 10,
                "validation_concurrency": 5,
                "attempts_processes": 1,
                "validation_processes": 1,
                "db_pool": 3,
            },
            "otlp": {"traces": 10, "spans_per_trace": 10, "repeats": 2},
            "intake": {
                "clients": 2,
                "seconds": 2.0,
                "rate": 20.0,
                "validation_concurrency": 4,
                "validation_processes": 1,
            },
            "metrics": {"tasks": 2_000},
            "judge_model": {"pairs": 20, "repeats": 1},
            "judge_throughput": {"validations": 4, "processes": 2, "threads": 1},
            "ui": {
                "tasks": (200, 400),
                "needs_review_share": 0.1,
                "evidence_mb": 0.2,
                "evidence_items": 20,
                "requests": 5,
                "growth_mb": (0.05, 0.1, 0.2),
            },
            "long_lists": {"results": 2_000, "baseline_results": 500, "repeats": 1},
        }
    return {
        "packets": {"mb": 10, "items": 500, "growth_mb": (1, 4, 16), "repeats": 5},
        "team": {"node_counts": (3, 6), "limits": (1, 3), "sleep": 0.3, "repeats": 3},
        "pipeline": {"n_latency": 200, "n_burst": 200, "warmup": 10},
        "latency": {
            "backlog": int(os.environ.get("BENCH_LATENCY_BACKLOG", "1000")),
            "latency_ms": int(os.environ.get("BENCH_MODEL_LATENCY_MS", "300")),
            "calls": int(os.environ.get("BENCH_MODEL_CALLS", "4")),
            "pool": os.environ.get("BENCH_WORKER_POOL", "threads"),
            "attempts_concurrency": int(os.environ.get("BENCH_ATTEMPTS_CONCURRENCY", "100")),
            "validation_concurrency": int(os.environ.get("BENCH_VALIDATION_CONCURRENCY", "50")),
            "attempts_processes": int(os.environ.get("BENCH_ATTEMPTS_PROCESSES", "2")),
            "validation_processes": int(os.environ.get("BENCH_VALIDATION_PROCESSES", "2")),
            "db_pool": int(os.environ.get("BENCH_DB_POOL", "10")),
        },
        "otlp": {"traces": 100, "spans_per_trace": 10, "repeats": 7},
        "intake": {
            "clients": int(os.environ.get("BENCH_INTAKE_CLIENTS", "8")),
            "seconds": float(os.environ.get("BENCH_INTAKE_SECONDS", "60")),
            # Offered rate, 10 % above the 1,000 traces/s target (which stays whatever is
            # offered): a server that keeps up shows it, the clients' final flush included.
            "rate": float(os.environ.get("BENCH_INTAKE_RATE", "1100")),
            "web_workers": int(os.environ.get("BENCH_INTAKE_WEB_WORKERS", "2")),
            "web_threads": int(os.environ.get("BENCH_INTAKE_WEB_THREADS", "8")),
            "validation_concurrency": int(os.environ.get("BENCH_VALIDATION_CONCURRENCY", "50")),
            "validation_processes": int(os.environ.get("BENCH_VALIDATION_PROCESSES", "2")),
            "kinds": tuple(
                os.environ.get("BENCH_INTAKE_KINDS", "otlp,otlp-web,attempts").split(",")
            ),
            # How long to wait for the validation backlog after each run.
            "drain_timeout": float(os.environ.get("BENCH_INTAKE_DRAIN_TIMEOUT", "600")),
        },
        "metrics": {"tasks": 1_000_000},
        "judge_model": {"pairs": 200, "repeats": 5},
        "judge_throughput": {
            "validations": int(os.environ.get("BENCH_JUDGE_VALIDATIONS", "40")),
            "processes": int(os.environ.get("BENCH_JUDGE_PROCESSES", "2")),
            "threads": int(os.environ.get("BENCH_JUDGE_THREADS", "2")),
        },
        "ui": {
            "tasks": tuple(
                int(x) for x in os.environ.get("BENCH_UI_TASKS", "10000,100000,1000000").split(",")
            ),
            "needs_review_share": 0.1,
            "evidence_mb": 10,
            "evidence_items": 500,
            "requests": 60,
            "growth_mb": (1, 4, 16),
        },
        "long_lists": {
            "results": 20_000,
            "baseline_results": 500,
            "repeats": int(os.environ.get("BENCH_LISTS_REPEATS", "5")),
        },
    }


def run_one(name: str, params: dict[str, Any]) -> dict[str, Any]:
    from django.conf import settings

    if name == "packets":
        from bench import packets

        return packets.run(**params)
    if name == "team":
        from bench import team

        return team.run(**params)
    if name == "pipeline":
        from bench import pipeline

        return pipeline.run(
            **params,
            workers=int(os.environ.get("BENCH_WORKERS") or os.cpu_count() or 2),
            broker_url=settings.CELERY_BROKER_URL,
            database_url=os.environ["DATABASE_URL"],
            log_dir=settings.VAR_DIR,
        )
    if name == "latency":
        from bench import latency

        return latency.run(
            **params,
            broker_url=settings.CELERY_BROKER_URL,
            database_url=os.environ["DATABASE_URL"],
            log_dir=settings.VAR_DIR,
        )
    if name == "ui":
        from bench import ui

        return ui.run(**params)
    if name == "long_lists":
        from bench import long_lists

        return long_lists.run(**params)
    if name == "otlp":
        from bench import otlp

        return otlp.run(**params)
    if name == "intake":
        from bench import intake

        return intake.run(
            **params,
            broker_url=settings.CELERY_BROKER_URL,
            database_url=os.environ["DATABASE_URL"],
            log_dir=settings.VAR_DIR,
        )
    if name == "metrics":
        from bench import metrics

        return metrics.run(**params, database_url=os.environ["DATABASE_URL"])
    if name == "judge_model":
        from bench import judge_model

        return judge_model.run(**params)
    if name == "judge_throughput":
        from bench import judge_throughput

        return judge_throughput.run(
            **params,
            broker_url=settings.CELERY_BROKER_URL,
            database_url=os.environ["DATABASE_URL"],
            log_dir=settings.VAR_DIR,
        )
    raise ValueError(name)


def print_report(report: dict[str, Any]) -> str:
    from bench.common import fmt, table

    rows = []
    for name in report["benchmarks"]:
        res = report["benchmarks"][name]
        if "error" in res:
            rows.append([name, "ERROR: " + res["error"].splitlines()[-1][:80], "", "", "", "", ""])
            continue
        for fig in res["figures"]:
            rows.append(
                [
                    name,
                    fig["name"],
                    fmt(fig["value"], fig["unit"]),
                    fig["baseline_name"],
                    fmt(fig["baseline"], fig["unit"]) if fig["baseline"] is not None else "-",
                    (f"{fig['ratio']:.2f}x" if fig["ratio"] is not None else "-"),
                    fig.get("note") or "",
                ]
            )
    lines = [
        table(
            rows, ["bench", "figure", "value", "baseline (same run)", "baseline", "ratio", "note"]
        )
    ]
    trows = []
    for name in report["benchmarks"]:
        for t in report["benchmarks"][name].get("targets", []):
            trows.append([name, t["target"], t["measured"], "MET" if t["met"] else "MISSED"])
    lines += ["", table(trows, ["bench", "target", "measured", "status"])]
    for name in report["benchmarks"]:
        growth = report["benchmarks"][name].get("details", {}).get("growth_table")
        if growth:
            lines += ["", f"growth ({name}):", table(growth["rows"], growth["headers"])]
    text = "\n".join(lines)
    print(text)
    return text


RESULTS_HEADING = "## Last results on this machine"


def update_readme(report: dict[str, Any]) -> None:
    """Replace the README's last-results section with this run's table."""
    readme = BENCH_DIR / "README.md"
    text = readme.read_text(encoding="utf-8")
    if RESULTS_HEADING not in text:
        return
    m = report["machine"]
    missed = [
        f"{name}: {t['target']} ({t['measured']})"
        for name, res in report["benchmarks"].items()
        for t in res.get("targets", [])
        if not t["met"]
    ]
    profiles = report.get("profiles") or {}
    body = [
        RESULTS_HEADING,
        "",
        f"`make bench` on {report['date']} (UTC), {report['total_seconds']} s in all. Machine: "
        f"{m['cpu']}, {m['cores']} cores, {m['memory_gb']} GB RAM, Python {m['python']}, "
        f"{m['platform']}; PostgreSQL at {report['database']}, Redis at {report['broker']}. "
        f"Load average (1/5/15 min) {report['load_average_start']} at the start and "
        f"{report['load_average_end']} at the end: other work shared the machine.",
        "",
        "```",
        report["table"],
        "```",
        "",
        "Missed: " + ("; ".join(missed) if missed else "none") + ".",
    ]
    if profiles:
        body += ["", "Profiles: " + ", ".join(f"`{p}`" for p in profiles.values()) + "."]
    head = text.split(RESULTS_HEADING, 1)[0]
    readme.write_text(head + "\n".join(body) + "\n", encoding="utf-8")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("--only", default="", help="comma-separated: " + ",".join(ORDER))
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    parser.add_argument("--no-profile", action="store_true", help="skip profiles of misses")
    args = parser.parse_args(argv)
    setup_django()
    from bench.common import machine

    chosen = [n for n in ORDER if not args.only or n in args.only.split(",")]
    plan = sizes(args.quick)
    started = time.monotonic()
    report: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "database": os.environ["DATABASE_URL"].split("@")[-1],
        "broker": os.environ["CELERY_BROKER_URL"].split("@")[-1],
        "quick": args.quick,
        # Other processes share the machine: the load before and after tells how quiet it was.
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "benchmarks": {},
    }
    for name in chosen:
        print(f"bench: running {name} ...", flush=True)
        t0 = time.monotonic()
        try:
            res = run_one(name, plan[name])
        except Exception as exc:
            traceback.print_exc()
            res = {"error": f"{type(exc).__name__}: {exc}", "figures": [], "targets": []}
        res["seconds"] = round(time.monotonic() - t0, 1)
        report["benchmarks"][name] = res
        print(f"bench: {name} done in {res['seconds']} s", flush=True)
    if not args.no_profile:
        from bench.profiling import profile_misses

        report["profiles"] = profile_misses(report, quick=args.quick)
    report["total_seconds"] = round(time.monotonic() - started, 1)
    report["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    print()
    report["table"] = print_report(report)
    print(
        f"\nbench: total {report['total_seconds']} s; load average (1/5/15 min) at start "
        f"{report['load_average_start']}, at end {report['load_average_end']}"
    )
    out = (
        BENCH_DIR.parent / "var" / "bench" / "results-quick.json"
        if args.quick
        else BENCH_DIR / "results.json"
    )
    if not args.only or args.quick:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"bench: wrote {out.relative_to(BENCH_DIR.parent)}")
        if not args.quick:
            update_readme(report)
            print("bench: updated the last results in bench/README.md")
    else:
        partial = BENCH_DIR.parent / "var" / "bench" / "results-partial.json"
        partial.parent.mkdir(parents=True, exist_ok=True)
        partial.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"bench: --only run; wrote {partial}")
    return 1 if any("error" in r for r in report["benchmarks"].values()) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
