"""What the task page reads (selectors): the task with the heads of its big columns,
its verdicts, evidence, runs, timeline rows and OTLP traces, each in a bounded number
of queries whatever the size of the task. The view only composes them."""

from __future__ import annotations

from typing import Any

from django.db.models import F, OuterRef, Subquery, Sum, TextField
from django.db.models.functions import Cast, Coalesce, Left, Length
from django.shortcuts import get_object_or_404

from evidence_app.models import STORED_INPUT_CHARS, ValidationSnapshot
from evidence_app.review import trace_tree
from tasks_app.records import ClaimEvent, Feedback, OtlpTrace, Run, Task, TaskEvent, ToolEvidence


def task(user: Any, task_id: int, *, limit: int) -> Task:
    """The task if ``user`` may see it (else 404), its request, rules and answer as the
    first ``limit`` characters and their lengths."""
    visible = (
        Task.objects.visible_to(user)
        .select_related("owner", "claimed_by")
        .defer("request", "rules", "final_answer")
        # Why it is in its status, in the same query (issue 48: not one more per page).
        .with_status_reason()
        .annotate(
            request_len=Length("request"),
            request_head=Left("request", limit),
            rules_len=Length("rules"),
            rules_head=Left("rules", limit),
            answer_len=Length("final_answer"),
            answer_head=Left("final_answer", limit),
        )
    )
    return get_object_or_404(visible, pk=task_id)


def snapshots(task: Task) -> list[ValidationSnapshot]:
    """Every verdict of the task (replays too), oldest first, with the sizes of their
    big columns instead of the columns."""
    return list(
        ValidationSnapshot.objects.filter(task=task)
        .without_bodies()
        .select_related("requested_by")
        .annotate(
            input_len=STORED_INPUT_CHARS,
            system_len=Length("system_prompt"),
            raw_len=Length(Cast("raw_responses", TextField())),
        )
        .order_by("created_at", "id")
    )


def snapshot_bodies(selected: ValidationSnapshot, *, limit: int) -> dict[str, Any]:
    """The big columns of ``selected`` that are at most ``limit`` characters (the others
    load lazily)."""
    small = [
        field
        for field, size in (
            ("rendered_input", selected.input_len),  # type: ignore[attr-defined]
            ("system_prompt", selected.system_len),  # type: ignore[attr-defined]
            ("raw_responses", selected.raw_len),  # type: ignore[attr-defined]
        )
        if (size or 0) <= limit
    ]
    if not small:
        return {}
    return ValidationSnapshot.objects.filter(pk=selected.pk).values(*small).get()


def evidence(task: Task, *, limit: int) -> list[ToolEvidence]:
    """The task's first ``limit`` tool results without their content, with their stored
    sizes (the others load on request: an attempt can hold 20,000 of them)."""
    return list(
        ToolEvidence.objects.filter(task=task)
        .without_content()
        .annotate(size=F("content_chars"))  # stored on save: no 10 MB read
        .order_by("attempt_index", "run_id", "sequence")[:limit]
    )


def attempt_evidence(task: Task, attempt: int, *, limit: int) -> list[ToolEvidence]:
    """The first ``limit`` tool results of one attempt, without their content (the
    evidence a reviewer can point a corrected citation at)."""
    return list(
        ToolEvidence.objects.filter(task=task, attempt_index=attempt)
        .without_content()
        .order_by("run_id", "sequence")[:limit]
    )


def _chars_per_run() -> Coalesce:
    """Characters of the outer run's tool results (stored sizes, no content read)."""
    rows = ToolEvidence.objects.filter(run=OuterRef("pk")).order_by().values("run")
    return Coalesce(Subquery(rows.annotate(n=Sum("content_chars")).values("n")[:1]), 0)


def runs(task: Task) -> list[Run]:
    """The task's runs without their output, with their numbers of model calls and tool
    calls and the size of their tool results (what the trace tree and the evidence panel
    show)."""
    return list(
        Run.objects.filter(task=task)
        .defer("output_text", "payload", "usage", "warnings")
        .annotate(
            **trace_tree.step_counts(),  # model_calls, evidence_count
            evidence_chars=_chars_per_run(),
        )
        .order_by("attempt_index", "graph_index", "id")
    )


def evidence_runs(task: Task) -> list[Run]:
    """The task's runs as the Evidence list needs them: attempt, kind and number of tool
    results (its total and its R labels come from these counts)."""
    return list(
        Run.objects.filter(task=task)
        .only("id", "task_id", "attempt_index", "kind", "graph_index")
        .annotate(evidence_count=trace_tree.step_counts()["evidence_count"])
        .order_by("attempt_index", "graph_index", "id")
    )


def events(task: Task) -> list[TaskEvent]:
    return list(TaskEvent.objects.filter(task=task).select_related("actor"))


def claim_events(task: Task) -> list[ClaimEvent]:
    return list(ClaimEvent.objects.filter(task=task).select_related("actor", "previous_holder"))


def feedback(task: Task) -> list[Feedback]:
    return list(Feedback.objects.filter(task=task).select_related("author", "undone_by"))


def otlp_traces(task: Task) -> list[OtlpTrace]:
    """The task's OTLP traces, each with the spans that arrived after validation started
    (listed, never dropped), at most 50."""
    traces = list(task.otlp_traces.order_by("first_span_at"))
    for trace in traces:
        trace.late_spans = list(  # type: ignore[attr-defined]
            trace.spans.filter(late=True).only("name", "received_at").order_by("received_at")[:50]
        )
    return traces
