"""What the trace tree of the task page reads (selectors): a task's attempts,
each attempt's runs (main, team nodes, synthesis), each run's steps (model calls and
tool calls in the order they happened) and one step's content.

The tree is built a level at a time: the page reads the attempts and the first page of
runs of each; a run's steps are read when the run is opened, ``PAGE_SIZE`` at a time,
and a step's content when the step is opened. Each read is a bounded number of indexed
queries whatever the size of the attempt (20,000 steps), so a large trace does not slow
the task page down.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db.models import (
    CharField,
    Count,
    Model,
    OuterRef,
    Q,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404

from project.costs import CostTotal
from tasks_app.records import LLMRequestSnapshot, Run, RunMessage, Task, ToolEvidence

# Children per page: a "more" row loads the next page (Langfuse shows traces of up to
# 20,000 observations; 200 rows of the tree are about 60 KB of HTML).
PAGE_SIZE = 200

MODEL_CALL = "model"
TOOL_CALL = "tool"


@dataclass(frozen=True)
class TreePage:
    """One page of a node's children: ``items``, where the next page starts (None when
    this is the last), how many children there are in all and how many rows the next
    pages hold."""

    items: list[Any]
    offset: int
    total: int
    next_offset: int | None
    size: int = PAGE_SIZE

    @property
    def remaining(self) -> int:
        return max(0, self.total - self.offset - len(self.items))

    @property
    def next_count(self) -> int:
        return min(self.size, self.remaining)

    @property
    def last_number(self) -> int:
        """The position in the whole list of this page's last row (1-based)."""
        return self.offset + len(self.items)


def offset_of(params: Mapping[str, str]) -> int:
    """Where the page a fragment asks for starts (its ``?offset=``; 0 when absent or not
    a number): the trace tree's pages and the task page's long lists alike."""
    raw = params.get("offset", "0")
    return int(raw) if raw.isdigit() and len(raw) < 10 else 0


@dataclass
class AttemptNode:
    """One attempt of a task, summed over its runs."""

    index: int
    run_count: int
    input_tokens: int
    output_tokens: int
    cost: CostTotal
    duration_ms: int | None
    runs: TreePage | None = None


@dataclass(frozen=True)
class Step:
    """A model call or a tool call of a run, with what the tree row shows."""

    kind: str
    pk: int
    at: datetime
    name: str
    duration_ms: int | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: Decimal | None = None
    chars: int = 0
    is_error: bool = False
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _page(rows: list[Any], *, offset: int, total: int) -> TreePage:
    more = len(rows) > PAGE_SIZE
    items = rows[:PAGE_SIZE]
    return TreePage(
        items=items, offset=offset, total=total, next_offset=offset + PAGE_SIZE if more else None
    )


def _count_per_run(model: type[Model]) -> Coalesce:
    """Rows of ``model`` of the outer run, as a correlated subquery (an index range
    count per run, no join that would multiply the two relations)."""
    rows = model._default_manager.filter(run=OuterRef("pk")).order_by().values("run")
    return Coalesce(Subquery(rows.annotate(n=Count("*")).values("n")[:1]), 0)


def attempts(runs: Sequence[Run]) -> list[AttemptNode]:
    """The attempts of the task's ``runs`` (as the task page reads them, in graph order
    with their ``model_calls`` and ``evidence_count``), oldest first, each with its
    summed tokens and cost, its wall-clock duration (first start to last finish) and the
    first page of its runs. No query: the page has read the runs already."""
    by_attempt: dict[int, list[Run]] = {}
    for run in runs:
        by_attempt.setdefault(run.attempt_index, []).append(run)
    nodes = []
    for index, members in sorted(by_attempt.items()):
        finishes = [r.finished_at for r in members if r.finished_at is not None]
        duration = None
        if finishes:
            first_start = min(r.started_at for r in members)
            duration = int((max(finishes) - first_start).total_seconds() * 1000)
        nodes.append(
            AttemptNode(
                index=index,
                run_count=len(members),
                input_tokens=sum(r.input_tokens for r in members),
                output_tokens=sum(r.output_tokens for r in members),
                cost=CostTotal.of(r.cost for r in members),
                duration_ms=duration,
                runs=_page(members[: PAGE_SIZE + 1], offset=0, total=len(members)),
            )
        )
    return nodes


def step_counts() -> dict[str, Coalesce]:
    """Annotations: a run's number of model calls and of tool calls."""
    return {
        "model_calls": _count_per_run(LLMRequestSnapshot),
        "evidence_count": _count_per_run(ToolEvidence),
    }


def runs_page(task: Task, attempt: int, *, offset: int) -> TreePage:
    """A page of the attempt's runs in graph order, without their output, each with its
    number of model calls and tool calls."""
    base = Run.objects.filter(task=task, attempt_index=attempt)
    rows = list(
        base.defer("output_text", "payload", "usage", "warnings")
        .annotate(**step_counts())
        .order_by("graph_index", "id")[offset : offset + PAGE_SIZE + 1]
    )
    return _page(rows, offset=offset, total=base.count())


def run_of(task: Task, run_id: int) -> Run:
    """The run if it belongs to ``task`` (else 404), without its output."""
    return get_object_or_404(
        Run.objects.filter(task=task).defer("output_text", "payload", "usage", "warnings"),
        pk=run_id,
    )


def steps_page(run: Run, *, offset: int) -> TreePage:
    """A page of the run's steps: its model calls and tool calls merged in the order
    they were recorded (ties: model call first, then by id). Three queries: the page of
    (kind, id) pairs, then the rows of each kind on the page."""
    calls = LLMRequestSnapshot.objects.filter(run=run)
    tools = ToolEvidence.objects.filter(run=run)
    kind = CharField()
    order = (
        calls.order_by()
        .annotate(kind=Value(MODEL_CALL, output_field=kind))
        .values_list("created_at", "id", "kind")
        .union(
            tools.order_by()
            .annotate(kind=Value(TOOL_CALL, output_field=kind))
            .values_list("created_at", "id", "kind"),
            all=True,
        )
        .order_by("created_at", "kind", "id")
    )
    keys = list(order[offset : offset + PAGE_SIZE + 1])
    total = calls.count() + tools.count()
    page = _page(keys, offset=offset, total=total)
    call_ids = [pk for _, pk, k in page.items if k == MODEL_CALL]
    tool_ids = [pk for _, pk, k in page.items if k == TOOL_CALL]
    call_rows = calls.filter(pk__in=call_ids).defer("full_request").in_bulk() if call_ids else {}
    tool_rows = tools.filter(pk__in=tool_ids).without_content().in_bulk() if tool_ids else {}
    steps = [
        _call_step(call_rows[pk]) if k == MODEL_CALL else _tool_step(tool_rows[pk])
        for _, pk, k in page.items
    ]
    return TreePage(items=steps, offset=offset, total=total, next_offset=page.next_offset)


def _call_step(call: LLMRequestSnapshot) -> Step:
    return Step(
        kind=MODEL_CALL,
        pk=call.pk,
        at=call.created_at,
        name=call.model_name,
        duration_ms=call.latency_ms,
        input_tokens=call.input_tokens,
        output_tokens=call.output_tokens,
        cost=call.cost,
        chars=call.message_chars,
        label=f"call {call.iteration + 1}",
        extra={"message_count": call.message_count, "tools": len(call.tool_names or [])},
    )


def _tool_step(item: ToolEvidence) -> Step:
    return Step(
        kind=TOOL_CALL,
        pk=item.pk,
        at=item.created_at,
        name=item.tool_name,
        chars=item.content_chars,
        is_error=item.is_error,
        label=item.title or item.url,
        extra={"sequence": item.sequence, "run_id": item.run_id},
    )


def model_call(task: Task, call_id: int) -> tuple[LLMRequestSnapshot, RunMessage | None]:
    """One model call of the task (else 404) and the message the model answered with:
    the run's first assistant message recorded with or after the call and before the
    run's next call (the loop writes a call and its answer together; a call that failed
    has none)."""
    call = get_object_or_404(
        LLMRequestSnapshot.objects.select_related("run").filter(run__task=task), pk=call_id
    )
    following = (
        LLMRequestSnapshot.objects.filter(run_id=call.run_id)
        .filter(Q(created_at__gt=call.created_at) | Q(created_at=call.created_at, id__gt=call.pk))
        .order_by("created_at", "id")
        .values_list("created_at", flat=True)
        .first()
    )
    answers = RunMessage.objects.filter(
        run_id=call.run_id, role="assistant", created_at__gte=call.created_at
    )
    if following is not None:
        answers = answers.filter(created_at__lt=following)
    answer = answers.order_by("created_at", "index").defer("payload").first()
    return call, answer


def tool_call(task: Task, evidence_id: int) -> ToolEvidence:
    """One tool call of the task with its full result (else 404)."""
    return get_object_or_404(ToolEvidence.objects.filter(task=task), pk=evidence_id)
