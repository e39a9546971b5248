"""Scrape cost of ``/metrics`` at scale (issue 18).

Runs in a child process on a database of its own (``<bench db>_metrics``, created and
migrated; seeded once and kept, so later runs only top it up), because a million tasks
would skew the other benchmarks' pages. PostgreSQL only.

Data per task: 4 status events, 1 agent run with 2 request snapshots, 1 validation
snapshot (a tenth with a schema retry, a twentieth chunked), spread over 30 days.

Figures:
- baseline (same run): the one unavoidable query, tasks grouped by status;
- first scrape of a fresh process (counts every append-only table once);
- steady scrape p50/p95 (20 scrapes, 50 new tasks' rows between each);
Targets: steady scrape p50 <= 500 ms and first scrape <= 60 s at 1M tasks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

import dj_database_url

from bench.common import Figure, Target, result, summary_ms

STEADY_SCRAPES = 20
NEW_TASKS_BETWEEN = 50


def run(*, tasks: int, database_url: str) -> dict[str, Any]:
    if not database_url.startswith(("postgres://", "postgresql://")):
        raise RuntimeError("the metrics benchmark needs PostgreSQL")
    db = dj_database_url.parse(database_url)
    url = database_url.replace(f"/{db['NAME']}", f"/{db['NAME']}_metrics", 1)
    from bench.common import ensure_database

    ensure_database(url)
    env = {**os.environ, "DATABASE_URL": url, "METRICS_SETTLE_SECONDS": "0"}
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v0"], env=env, check=True
    )
    out = subprocess.run(
        [sys.executable, "-m", "bench.metrics", str(tasks)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    measured = json.loads(out.stdout.strip().splitlines()[-1])
    steady = measured["steady_ms"]
    figures = [
        Figure(
            "metrics",
            f"first scrape, {tasks:,} tasks",
            measured["first_ms"],
            "ms",
            "tasks-by-status query",
            measured["baseline_ms"],
        ),
        Figure(
            "metrics",
            "steady scrape p50",
            steady["p50_ms"],
            "ms",
            "tasks-by-status query",
            measured["baseline_ms"],
            note=f"p95 {steady['p95_ms']:.0f} ms; {NEW_TASKS_BETWEEN} new tasks between scrapes",
        ),
    ]
    targets = [
        Target(
            "metrics",
            "steady scrape p50 <= 500 ms",
            f"{steady['p50_ms']:.0f} ms",
            steady["p50_ms"] <= 500,
        ),
        Target(
            "metrics",
            "first scrape <= 60 s",
            f"{measured['first_ms'] / 1000:.1f} s",
            measured["first_ms"] <= 60_000,
        ),
    ]
    return result(figures=figures, targets=targets, details=measured)


# --- The child process ---------------------------------------------------------------


def seed(total: int) -> dict[str, int]:
    """Top the metrics database up to ``total`` tasks with their rows (SQL, fast)."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from tasks_app.models import Task

    owner, _ = get_user_model().objects.get_or_create(username="bench-metrics")
    have = Task.objects.count()
    if have >= total:
        return {"seeded": 0, "tasks": have}
    start, count = have, total - have
    statuses = "ARRAY['awaiting_feedback','needs_review','closed','failed','abandoned','open']"
    with connection.cursor() as cur:
        cur.execute(
            f"""
            INSERT INTO tasks_app_task (title, request, rules, plan, validation_policy,
                validation_keywords, status, version, attempt_count, max_attempts,
                final_answer, lease_token, requeue_count, created_at, updated_at, owner_id,
                job_id, agent)
            SELECT 'bench ' || g, 'request ' || g, '', '{{}}', 'always', '[]',
                ({statuses})[1 + g %% 6], 4, 1, 2, 'answer', '', 0,
                now() - (g %% 43200) * interval '1 minute', now(), %s, '', 'internal'
            FROM generate_series(%s, %s) g
            RETURNING id
            """,
            [owner.pk, start + 1, start + count],
        )
        ids = [row[0] for row in cur.fetchall()]
        low, high = min(ids), max(ids)
        cur.execute(
            """
            INSERT INTO tasks_app_taskevent (task_id, from_status, to_status, actor_kind,
                reason, attempt_index, at)
            SELECT t.id, e.f, e.t, 'system', '', 1, t.created_at + e.n * interval '1 second'
            FROM tasks_app_task t,
                (VALUES (1, 'open', 'running'), (2, 'running', 'validating'),
                        (3, 'validating', 'awaiting_feedback'),
                        (4, 'awaiting_feedback', 'closed')) AS e(n, f, t)
            WHERE t.id BETWEEN %s AND %s
            ORDER BY t.id, e.n
            """,
            [low, high],
        )
        cur.execute(
            """
            INSERT INTO tasks_app_run (task_id, attempt_index, kind, node_id, node_role,
                graph_index, session_id, model_name, status, finish_reason, output_text,
                usage, input_tokens, output_tokens, cost, tool_iterations, started_at,
                finished_at, duration_ms, error, warnings, external_key, payload)
            SELECT id, 1, 'main', '', '', 0, gen_random_uuid(),
                CASE WHEN id %% 2 = 0 THEN 'openai:gpt-4.1' ELSE 'offline:researcher' END,
                'completed', 'stop', 'answer', '{}', 3000, 200,
                CASE WHEN id %% 2 = 0 THEN 0.0076 END, 1, created_at, created_at, 900, '', '[]',
                '', '{}'
            FROM tasks_app_task WHERE id BETWEEN %s AND %s ORDER BY id
            """,
            [low, high],
        )
        cur.execute(
            """
            INSERT INTO tasks_app_llmrequestsnapshot (run_id, iteration, provider, model_name,
                message_count, tool_names, message_chars, tool_schema_chars, thinking,
                latency_ms, input_tokens, output_tokens, cost, created_at)
            SELECT r.id, i, 'openai', r.model_name, 2 + i, '[]', 4000, 500, false,
                100 + (r.id * 37 + i) %% 5000, 1500, 100,
                CASE WHEN r.model_name = 'openai:gpt-4.1' THEN 0.0038 END, r.started_at
            FROM tasks_app_run r, generate_series(0, 1) i
            WHERE r.task_id BETWEEN %s AND %s ORDER BY r.id, i
            """,
            [low, high],
        )
        cur.execute(
            """
            INSERT INTO evidence_app_validationsnapshot (task_id, attempt_index, kind, status,
                result, evidence_run_ids, session_ids, tool_result_count, evidence_chars,
                raw_responses, system_prompt, rendered_input, rendered_input_chars,
                prompt_stored, template_name, template_version, model_name, latency_ms,
                input_tokens, output_tokens, request_count, schema_retry_count,
                schema_errors, error, chunk_verdicts, cost, created_at, claim_summary,
                model_status)
            SELECT id, 1, 'validation',
                (ARRAY['accepted', 'insufficient_evidence', 'rejected',
                       'validator_error'])[1 + id %% 4],
                '{}', '[]', '[]', 3, 9000, '[]', '', '', 9000, false, 'default', 'v1',
                CASE WHEN id %% 3 = 0 THEN 'openai:gpt-4.1' ELSE 'offline:judge' END,
                200 + (id * 53) %% 20000, 2500, 150, 1 + (id %% 10 = 0)::int,
                (id %% 10 = 0)::int, '[]', '',
                CASE WHEN id %% 20 = 0 THEN '[{"part": 1}, {"part": 2}]'::jsonb ELSE '[]' END,
                CASE WHEN id %% 3 = 0 THEN 0.0062 END, created_at + interval '2 seconds', '{}', ''
            FROM tasks_app_task WHERE id BETWEEN %s AND %s ORDER BY id
            """,
            [low, high],
        )
        if count > 10_000:
            cur.execute("ANALYZE")
    return {"seeded": count, "tasks": total}


def measure(total: int) -> dict[str, Any]:
    from django.db import connection

    from project import metrics
    from tasks_app.models import Task

    seeded = seed(total)

    def status_counts() -> float:
        from django.db.models import Count

        started = time.perf_counter()
        dict(Task.objects.values_list("status").annotate(n=Count("pk")).order_by())
        return time.perf_counter() - started

    status_counts()  # warm the cache like a scrape after the first would find it
    base = sorted(status_counts() for _ in range(5))[2]
    collector = metrics.DatabaseCollector()
    registry = metrics.CollectorRegistry(auto_describe=False)
    registry.register(metrics._MergedCollector(collector))

    started = time.perf_counter()
    text = metrics.generate_latest(registry)
    first = time.perf_counter() - started
    samples: list[float] = []
    for _ in range(STEADY_SCRAPES):
        seed(Task.objects.count() + NEW_TASKS_BETWEEN)
        started = time.perf_counter()
        text = metrics.generate_latest(registry)
        samples.append(time.perf_counter() - started)
    connection.close()
    return {
        **seeded,
        "baseline_ms": round(base * 1000, 1),
        "first_ms": round(first * 1000, 1),
        "steady_ms": summary_ms(samples),
        "exposition_bytes": len(text),
    }


if __name__ == "__main__":
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
    django.setup()
    print(json.dumps(measure(int(sys.argv[1]))))
