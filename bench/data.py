"""Bench data: fast bulk inserts (COPY on PostgreSQL, ``bulk_create`` elsewhere) and
the tasks the benchmarks read: many small tasks, and tasks with megabytes of evidence.

Bench data is written directly (like test fixtures): a task's ``status`` here is data
set up for reading, not a state change, so it does not go through ``task_transition``.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.db import connection, models, transaction
from django.utils import timezone

from evidence_app.models import ValidationSnapshot
from evidence_app.validator.schema import claim_summary
from project.roles import REVIEWERS
from tasks_app.models import Run, RunMessage, Task, TaskEvent, ToolEvidence, content_digest
from tasks_app.workflow.states import TaskStatus

WORDS = (
    "policy budget travel office expense approval handbook section employee manager "
    "quarter report invoice training contract vendor security review deadline region "
    "allowance limit lisbon berlin remote hardware laptop renewal exception escalation"
).split()


def text_of(size: int, seed: int) -> str:
    """Deterministic prose-like text of exactly ``size`` characters, unique per seed."""
    line_no = 0
    chunks: list[str] = []
    total = 0
    while total < size:
        words = " ".join(WORDS[(seed * 7 + line_no * 3 + k) % len(WORDS)] for k in range(12))
        line = f"[{seed}:{line_no}] {words}.\n"
        chunks.append(line)
        total += len(line)
        line_no += 1
    return "".join(chunks)[:size]


def bulk_insert(
    model: type[models.Model], rows: list[dict[str, Any]], *, batch: int = 5000
) -> None:
    """Insert rows (dicts of attname → value) as fast as the backend allows. No
    ``save()`` runs: callers fill computed columns themselves."""
    if not rows:
        return
    rows = _with_defaults(model, rows)
    names = list(rows[0])
    if connection.vendor == "postgresql":
        columns = ", ".join(f'"{model._meta.get_field(n).column}"' for n in names)
        table = model._meta.db_table
        connection.ensure_connection()
        with connection.connection.cursor() as cur:
            with cur.copy(f'COPY "{table}" ({columns}) FROM STDIN') as copy:
                for row in rows:
                    copy.write_row(
                        [json.dumps(v) if isinstance(v, dict | list) else v for v in row.values()]
                    )
        return
    for start in range(0, len(rows), batch):
        model.objects.bulk_create([model(**row) for row in rows[start : start + batch]])


def _with_defaults(model: type[models.Model], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows completed with the model's defaults for the columns they leave out (a column
    added by a later migration), so COPY never writes a NULL where the model has none."""
    missing = [
        f
        for f in model._meta.concrete_fields
        if f.attname not in rows[0] and not f.primary_key and f.has_default()
    ]
    if not missing:
        return rows
    return [{**row, **{f.attname: f.get_default() for f in missing}} for row in rows]


def user(username: str, *, reviewer: bool = False, superuser: bool = False) -> Any:
    User = get_user_model()
    account, created = User.objects.get_or_create(
        username=username, defaults={"is_staff": reviewer or superuser, "is_superuser": superuser}
    )
    if created:
        account.set_password("bench-password")
        account.save()
    if reviewer:
        account.groups.add(Group.objects.get_or_create(name=REVIEWERS)[0])
    return account


def task_rows(owner_id: int, *, start: int, count: int, review_every: int) -> list[dict[str, Any]]:
    """``count`` small tasks; every ``review_every``-th one in needs_review, the rest
    spread over the other settled states; task ``i`` created ``(i + 1) x 30 s`` before
    now, so every stage's tasks lie in the past (a year back at 1,000,000) and a day
    holds ~2,900 of them, as a live database would."""
    others = [
        TaskStatus.CLOSED,
        TaskStatus.AWAITING_FEEDBACK,
        TaskStatus.CLOSED,
        TaskStatus.ABANDONED,
        TaskStatus.FAILED,
        TaskStatus.CLOSED,
    ]
    now = timezone.now()
    rows = []
    for i in range(start, start + count):
        status = TaskStatus.NEEDS_REVIEW if i % review_every == 0 else others[i % len(others)]
        created = now - timedelta(seconds=(i + 1) * 30)
        rows.append(
            {
                "owner_id": owner_id,
                "title": f"Bench question {i}: {WORDS[i % len(WORDS)]} {WORDS[i * 7 % len(WORDS)]}",
                "request": text_of(300, i),
                "rules": "Cite the handbook section.",
                "plan": {},
                "validation_policy": "always",
                "validation_keywords": [],
                "status": status,
                "version": 3,
                "attempt_count": 1,
                "max_attempts": 2,
                "final_answer": text_of(400, i + 1),
                "validation_outcome": "accepted"
                if status == TaskStatus.AWAITING_FEEDBACK
                else None,
                "claimed_by_id": None,
                "claimed_at": None,
                "lease_token": "",
                "heartbeat_at": None,
                "requeue_count": 0,
                "created_at": created,
                "updated_at": created,
            }
        )
    return rows


# Two claims per bench verdict (issue 12), so list pages show a claim summary.
BENCH_CLAIMS = [
    {
        "id": "1",
        "text": "bench claim one",
        "verdict": "supported",
        "citations": [{"ref": "R1", "quote": "bench", "verified": True, "evidence_id": None}],
    },
    {"id": "2", "text": "bench claim two", "verdict": "unsupported", "citations": []},
]


def snapshot_row(task_id: int, i: int, *, rendered_input: str = "") -> dict[str, Any]:
    rendered_input = rendered_input or f"bench rendered input of task {task_id}"
    status = ("insufficient_evidence", "rejected", "validator_error")[i % 3]
    category = (None, "unsupported_claim", None)[i % 3]
    return {
        "task_id": task_id,
        "attempt_index": 1,
        "kind": "validation",
        "replay_of_id": None,
        "requested_by_id": None,
        "status": status,
        "score": 0.4,
        "failure_category": category,
        "result": {
            "status": status,
            "score": 0.4,
            "issues": ["bench issue"],
            "reasoning": "bench",
            "claims": BENCH_CLAIMS,
            "model_status": status,
        },
        "evidence_run_ids": [],
        "session_ids": [],
        "tool_result_count": 3,
        "evidence_chars": 6000,
        "raw_responses": [{"attempt": 1, "text": "{}"}],
        "system_prompt": "You are the validator.",
        "rendered_input": rendered_input,
        "rendered_input_chars": len(rendered_input),
        "prompt_stored": True,
        "template_name": "default",
        "template_version": "default@bench",
        "model_name": "bench:judge",
        "latency_ms": 1,
        "input_tokens": 0,
        "output_tokens": 0,
        "request_count": 1,
        "schema_retry_count": 0,
        "schema_errors": [],
        "error": "",
        "chunk_verdicts": [],
        "model_status": status,
        "claim_summary": claim_summary({"claims": BENCH_CLAIMS}),
        "created_at": timezone.now(),
    }


@transaction.atomic
def add_tasks(owner: Any, *, start: int, count: int, review_every: int = 10) -> int:
    """Insert ``count`` tasks (and a verdict for each needs_review one); returns how
    many are in needs_review."""
    rows = task_rows(owner.pk, start=start, count=count, review_every=review_every)
    last_pk = Task.objects.aggregate(last=models.Max("pk"))["last"] or 0
    bulk_insert(Task, rows)
    # The new tasks: the ids after the last one (the bench is the database's only writer).
    new = Task.objects.filter(owner=owner, pk__gt=last_pk).order_by("pk")
    review_ids = list(new.filter(status=TaskStatus.NEEDS_REVIEW).values_list("pk", flat=True))
    bulk_insert(ValidationSnapshot, [snapshot_row(pk, i) for i, pk in enumerate(review_ids)])
    # The status change that brought each task where it is (issue 16): the queue's
    # "decided today" reads these events, so they grow with the tasks as in a live
    # database.
    bulk_insert(
        TaskEvent,
        [
            event_row(pk, status, created_at, owner.pk)
            for pk, status, created_at in new.values_list("pk", "status", "created_at")
        ],
    )
    return len(review_ids)


# The transition into each settled status: (from, actor is the requester, actor kind).
LAST_TRANSITION = {
    TaskStatus.NEEDS_REVIEW: (TaskStatus.VALIDATING, False, "validator"),
    TaskStatus.AWAITING_FEEDBACK: (TaskStatus.VALIDATING, False, "validator"),
    TaskStatus.CLOSED: (TaskStatus.AWAITING_FEEDBACK, True, "user"),
    TaskStatus.ABANDONED: (TaskStatus.NEEDS_REVIEW, True, "user"),
    TaskStatus.FAILED: (TaskStatus.RUNNING, False, "system"),
}


def event_row(task_id: int, status: str, created_at: Any, owner_id: int) -> dict[str, Any]:
    from_status, by_person, kind = LAST_TRANSITION[TaskStatus(status)]
    return {
        "task_id": task_id,
        "from_status": from_status,
        "to_status": status,
        "actor_id": owner_id if by_person else None,
        "actor_kind": kind,
        "reason": "bench",
        "attempt_index": 1,
        "at": created_at + timedelta(minutes=30),
    }


@transaction.atomic
def evidence_task(
    owner: Any,
    *,
    total_chars: int,
    items: int,
    status: str = TaskStatus.NEEDS_REVIEW,
    distinct: int | None = None,
    title: str = "Bench task with large evidence",
    snapshot_input: str | None = None,
) -> Task:
    """A task whose attempt 1 gathered ``items`` tool results totalling ``total_chars``
    characters (``distinct`` different contents, repeated in turn, default all
    different), with the transcript the recorder writes (assistant tool call + tool
    message per result) and, if ``snapshot_input`` is given, a verdict with that input."""
    distinct = distinct or items
    size = max(1, total_chars // items)
    contents = [text_of(size, seed) for seed in range(distinct)]
    answer = "Bench answer citing the evidence [R1]."
    task = Task.objects.create(
        owner=owner,
        title=title,
        request="Summarise everything the evidence says about the travel policy.",
        rules="Cite the evidence.",
        status=status,
        attempt_count=1,
        version=3,
        final_answer=answer,
    )
    run = Run.objects.create(
        task=task,
        attempt_index=1,
        model_name="bench:agent",
        status="completed",
        finish_reason="stop",
        output_text=answer,
        tool_iterations=items,
        finished_at=timezone.now(),
    )
    evidence, messages = (
        [],
        [
            {
                "run_id": run.pk,
                "index": 0,
                "role": "system",
                "content": "You are a researcher.",
                "payload": {},
                "created_at": timezone.now(),
            },
            {
                "run_id": run.pk,
                "index": 1,
                "role": "user",
                "content": task.request,
                "payload": {},
                "created_at": timezone.now(),
            },
        ],
    )
    for i in range(items):
        content = contents[i % distinct]
        call_id = f"call-{i}"
        args = {"document_id": i % distinct}
        evidence.append(
            {
                "run_id": run.pk,
                "task_id": task.pk,
                "attempt_index": 1,
                "sequence": i,
                "tool_name": "read_document",
                "tool_call_id": call_id,
                "arguments": args,
                "content": content,
                "content_chars": len(content),
                "content_sha256": content_digest("read_document", content),
                "is_error": False,
                "url": "",
                "title": f"Document {i % distinct}",
                "event_payload": {"document_id": i % distinct},
                "created_at": timezone.now(),
            }
        )
        messages.append(
            {
                "run_id": run.pk,
                "index": 2 + 2 * i,
                "role": "assistant",
                "content": f"read_document({json.dumps(args)})",
                "payload": {
                    "tool_calls": [
                        {"tool_call_id": call_id, "tool_name": "read_document", "args": args}
                    ]
                },
                "created_at": timezone.now(),
            }
        )
        messages.append(
            {
                "run_id": run.pk,
                "index": 3 + 2 * i,
                "role": "tool",
                "content": content,
                "payload": {
                    "tool_call_id": call_id,
                    "tool_name": "read_document",
                    "is_error": False,
                },
                "created_at": timezone.now(),
            }
        )
    messages.append(
        {
            "run_id": run.pk,
            "index": 2 + 2 * items,
            "role": "assistant",
            "content": answer,
            "payload": {},
            "created_at": timezone.now(),
        }
    )
    bulk_insert(ToolEvidence, evidence, batch=100)
    bulk_insert(RunMessage, messages, batch=100)
    if snapshot_input is not None:
        bulk_insert(ValidationSnapshot, [snapshot_row(task.pk, 0, rendered_input=snapshot_input)])
    return task
