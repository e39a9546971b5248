"""Reads of evidence other apps need, so they never reach into packets or rendering, and
the cost of a task, its attempts and the system per day."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Count, JSONField, OuterRef, Q, Subquery, Sum
from django.db.models.functions import JSONObject, Substr, TruncDate
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from pydantic import BaseModel, Field

from evidence_app.models import ReplayRequest, SnapshotKind, ValidationSnapshot, ValidationStatus
from evidence_app.packets.packet_text import render_packet
from evidence_app.packets.task_packet import build_packet
from evidence_app.trust.stats import agreement_rate, cohen_kappa
from evidence_app.validation.routing import judges_disagree
from evidence_app.validator.citations import find_quote
from evidence_app.validator.schema import stored_result
from project.costs import CostTotal
from project.schemas import as_list
from tasks_app.records import Run, RunKind, Task, ToolEvidence


def rendered_attempt_evidence(task: Task, attempt_index: int) -> str:
    """The attempt's evidence as the validator would see it: full, unabridged."""
    return render_packet(build_packet(task, attempt_index))


SUMMARY_FIELDS = (
    "id",
    "task_id",
    "attempt_index",
    "status",
    "score",
    "failure_category",
    "model_status",
    "claim_summary",
    "created_at",
)


def latest_original(task_id: int) -> ValidationSnapshot | None:
    """The task's latest validation (not a replay), without the big prompt columns."""
    return (
        ValidationSnapshot.objects.originals()
        .without_bodies()
        .filter(task_id=task_id)
        .order_by("-created_at", "-id")
        .first()
    )


def validation_summary(snapshot: ValidationSnapshot | None) -> dict[str, Any] | None:
    if snapshot is None:
        return None
    return {
        "id": snapshot.pk,
        "attempt_index": snapshot.attempt_index,
        "status": snapshot.status,
        "passed": snapshot.passed,
        "score": snapshot.score,
        "failure_category": snapshot.failure_category or None,
        "model_status": snapshot.model_status or None,
        "claim_summary": snapshot.claim_summary or {},
        "created_at": snapshot.created_at,
    }


def latest_summary_json() -> Subquery:
    """The outer task's latest original verdict summary as one JSON object (PostgreSQL):
    a list of tasks gets every row's summary in its own query, without a second query
    and 50 model instances per page. ``validation_summary_of_json`` reads it."""
    latest = (
        ValidationSnapshot.objects.originals()
        .filter(task=OuterRef("pk"))
        .order_by("-created_at", "-id")
        .values(json=JSONObject(**{f: f for f in SUMMARY_FIELDS if f != "task_id"}))
    )
    return Subquery(latest[:1], output_field=JSONField())


def validation_summary_of_json(row: dict[str, Any] | None) -> dict[str, Any] | None:
    """``validation_summary`` of a ``latest_summary_json`` object."""
    if row is None:
        return None
    return {
        "id": row["id"],
        "attempt_index": row["attempt_index"],
        "status": row["status"],
        "passed": row["status"] == ValidationStatus.ACCEPTED,
        "score": row["score"],
        "failure_category": row["failure_category"] or None,
        "model_status": row["model_status"] or None,
        "claim_summary": row["claim_summary"] or {},
        "created_at": parse_datetime(row["created_at"]),
    }


def verdict(snapshot: ValidationSnapshot | None) -> dict[str, Any] | None:
    """The latest verdict of a task: the V1 fields a person needs to decide."""
    if snapshot is None:
        return None
    result = snapshot.result if isinstance(snapshot.result, dict) else {}
    parsed = stored_result(result)
    data = validation_summary(snapshot) or {}
    data.update(
        issues=as_list(result.get("issues")),
        missing_requirements=as_list(result.get("missing_requirements")),
        evidence_gaps=as_list(result.get("evidence_gaps")),
        recommended_revision_prompt=_as_text_or_none(result.get("recommended_revision_prompt")),
        reasoning=_as_text_or_none(result.get("reasoning")) or "",
        claims=[c.model_dump() for c in parsed.claims],
        requirements=[r.model_dump() for r in parsed.requirements],
        reconciliation=parsed.reconciliation,
        model=snapshot.model_name,
        template_version=snapshot.template_version,
    )
    return data


def _as_text_or_none(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)


# --- Claim view ----------------------------------------------------------------

# Characters of stored content shown on each side of a cited quote.
EXCERPT_CONTEXT_CHARS = 400


def evidence_labels_for_task(task_id: int) -> dict[int, str]:
    """The ``R<n>`` label the validator saw for every tool result of the task, by
    evidence id, numbered per attempt like ``render.evidence_labels`` numbers a packet
    (team runs in graph order, then the attempt's last main/synthesis run). Results of
    a superseded run are in no packet and get no label. Reads ids only, no content."""
    runs = list(
        Run.objects.filter(task_id=task_id)
        .order_by("attempt_index", "graph_index", "id")
        .values_list("id", "attempt_index", "kind")
    )
    evidence: dict[int, list[int]] = {}
    for evidence_id, run_id in (
        ToolEvidence.objects.filter(task_id=task_id)
        .order_by("run_id", "sequence")
        .values_list("id", "run_id")
    ):
        evidence.setdefault(run_id, []).append(evidence_id)
    labels: dict[int, str] = {}
    for ordered in _packet_runs(runs).values():
        n = 0
        for run_id in ordered:
            for evidence_id in evidence.get(run_id, []):
                n += 1
                labels[evidence_id] = f"R{n}"
    return labels


def evidence_labels_of(
    items: Sequence[ToolEvidence], runs: Sequence[Run], *, start: int = 0
) -> dict[int, str]:
    """The labels ``evidence_labels_for_task`` gives ``items``, which are the task's
    tool results from position ``start`` of the list ordered by (attempt, run,
    sequence), computed from ``runs`` (every run of the task, in graph order, with its
    ``evidence_count``) instead of reading every result id (an attempt can hold 20,000
    results): a result's number is the results of the runs before its run in
    the packet plus its rank in its run."""
    counts = {r.pk: r.evidence_count for r in runs}  # type: ignore[attr-defined]
    listed_before: dict[int, int] = {}  # results listed before the run's first one
    n = 0
    for run in sorted(runs, key=lambda r: (r.attempt_index, r.pk)):
        listed_before[run.pk] = n
        n += counts[run.pk]
    packet_before: dict[int, int] = {}  # results before the run's first one in its packet
    for ordered in _packet_runs([(r.pk, r.attempt_index, r.kind) for r in runs]).values():
        n = 0
        for run_id in ordered:
            packet_before[run_id] = n
            n += counts[run_id]
    labels: dict[int, str] = {}
    for i, item in enumerate(items):
        if item.run_id in packet_before:
            rank = start + i - listed_before[item.run_id]
            labels[item.pk] = f"R{packet_before[item.run_id] + rank + 1}"
    return labels


def _packet_runs(runs: list[tuple[int, int, str]]) -> dict[int, list[int]]:
    """Per attempt, the runs whose results the validator saw, in packet order: the team
    runs in graph order, then the attempt's last main or synthesis run. ``runs`` are
    (id, attempt, kind) in graph order."""
    team: dict[int, list[int]] = {}
    main_run: dict[int, int] = {}
    for run_id, attempt, kind in runs:
        if kind == RunKind.TEAM_NODE:
            team.setdefault(attempt, []).append(run_id)
        else:
            main_run[attempt] = run_id  # a later main/synthesis run supersedes
    return {
        attempt: team.get(attempt, []) + ([main_run[attempt]] if attempt in main_run else [])
        for attempt in sorted({a for _, a, _ in runs})
    }


@dataclass(frozen=True)
class AnswerSegment:
    text: str
    claim: dict[str, Any] | None = None


def answer_segments(answer: str, claims: list[dict[str, Any]]) -> list[AnswerSegment]:
    """The answer cut into plain text and the claims found in it (first occurrence,
    normalised match, no overlaps), in order, so each claim can be marked in place."""
    spans: list[tuple[int, int, dict[str, Any]]] = []
    for claim in claims:
        span = find_quote(str(claim.get("text") or ""), answer)
        if span is None or any(s < span.end and span.start < e for s, e, _ in spans):
            continue
        spans.append((span.start, span.end, claim))
    spans.sort(key=lambda item: item[0])
    segments: list[AnswerSegment] = []
    position = 0
    for start, end, claim in spans:
        if start > position:
            segments.append(AnswerSegment(answer[position:start]))
        segments.append(AnswerSegment(answer[start:end], claim))
        position = end
    if position < len(answer):
        segments.append(AnswerSegment(answer[position:]))
    return segments


@dataclass(frozen=True)
class CitationExcerpt:
    citation: dict[str, Any]
    label: str
    evidence: ToolEvidence | None
    before: str = ""
    quote: str = ""
    after: str = ""
    cut_before: bool = False
    cut_after: bool = False


def citation_excerpts(
    task_id: int, citations: list[dict[str, Any]], *, context: int = EXCERPT_CONTEXT_CHARS
) -> list[CitationExcerpt]:
    """For each citation, the quote with ``context`` characters around it, read with
    SUBSTR from the database: a multi-megabyte result is never loaded whole."""
    labels = evidence_labels_for_task(task_id)
    out: list[CitationExcerpt] = []
    for citation in citations:
        evidence_id = citation.get("evidence_id")
        start, end = citation.get("start"), citation.get("end")
        label = str(citation.get("ref") or "")
        row = None
        if isinstance(evidence_id, int):
            rows = ToolEvidence.objects.filter(pk=evidence_id, task_id=task_id).without_content()
            if citation.get("verified") and isinstance(start, int) and isinstance(end, int):
                from_char = max(0, start - context)
                rows = rows.annotate(
                    excerpt=Substr("content", from_char + 1, end + context - from_char)
                )
            row = rows.first()
        if row is None or not hasattr(row, "excerpt"):
            out.append(CitationExcerpt(citation=citation, label=label, evidence=row))
            continue
        assert isinstance(start, int) and isinstance(end, int)
        from_char = max(0, start - context)
        excerpt: str = row.excerpt
        out.append(
            CitationExcerpt(
                citation=citation,
                label=labels.get(row.pk, label),
                evidence=row,
                before=excerpt[: start - from_char],
                quote=excerpt[start - from_char : end - from_char],
                after=excerpt[end - from_char :],
                cut_before=from_char > 0,
                cut_after=end + context < row.content_chars,
            )
        )
    return out


# --- Cost ------------------------------------------------------------------
#
# Every figure is a sum of costs priced and stored when each request was made
# (project.costs); nothing is re-priced at read time. A sum that includes a part with an
# unknown cost says so (CostTotal.unknown) instead of pretending it is complete.


@dataclass
class AttemptCost:
    attempt_index: int
    agent: CostTotal = field(default_factory=CostTotal)
    validation: CostTotal = field(default_factory=CostTotal)
    # The second judge's verdicts on this attempt, apart from the first's.
    second_judge: CostTotal = field(default_factory=CostTotal)

    @property
    def total(self) -> CostTotal:
        total = CostTotal()
        total.merge(self.agent)
        total.merge(self.validation)
        total.merge(self.second_judge)
        return total

    def as_dict(self) -> dict[str, Any]:
        return {
            "attempt_index": self.attempt_index,
            "agent": self.agent.as_dict(),
            "validation": self.validation.as_dict(),
            "second_judge": self.second_judge.as_dict(),
            "total": self.total.as_dict(),
        }


@dataclass
class TaskCost:
    attempts: list[AttemptCost]
    replays: CostTotal

    @property
    def total(self) -> CostTotal:
        """Everything spent on the task: every attempt's agent runs and validations, and
        operators' replays."""
        total = CostTotal()
        for attempt in self.attempts:
            total.merge(attempt.total)
        total.merge(self.replays)
        return total

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total.as_dict(),
            "attempts": [a.as_dict() for a in self.attempts],
            "replays": self.replays.as_dict(),
        }


def task_cost(task: Task | int) -> TaskCost:
    """Cost per attempt (agent runs + original validations) and of replays."""
    task_id = task if isinstance(task, int) else task.pk
    runs = Run.objects.filter(task_id=task_id).values_list("attempt_index", "cost")
    snapshots = ValidationSnapshot.objects.filter(task_id=task_id).values_list(
        "attempt_index", "kind", "cost"
    )
    return task_cost_of(runs=runs, snapshots=snapshots)


def task_cost_of(
    *,
    runs: Iterable[tuple[int, Decimal | None]],
    snapshots: Iterable[tuple[int, str, Decimal | None]],
) -> TaskCost:
    """``task_cost`` from rows a page has already loaded: (attempt, cost) per run and
    (attempt, kind, cost) per validation snapshot."""
    attempts: dict[int, AttemptCost] = {}

    def attempt(index: int) -> AttemptCost:
        return attempts.setdefault(index, AttemptCost(attempt_index=index))

    for index, cost in runs:
        attempt(index).agent.add(cost)
    replays = CostTotal()
    for index, kind, cost in snapshots:
        if kind in (SnapshotKind.REPLAY, SnapshotKind.SHADOW):  # operators' experiments
            replays.add(cost)
        elif kind == SnapshotKind.SECOND:
            attempt(index).second_judge.add(cost)
        else:
            attempt(index).validation.add(cost)
    return TaskCost(attempts=[attempts[i] for i in sorted(attempts)], replays=replays)


SECOND_JUDGE_ROLE = "second judge"


@dataclass
class DailyCost:
    day: date
    role: str  # "agent" | "validator" | "second judge"
    model_name: str
    cost: CostTotal
    input_tokens: int
    output_tokens: int


def daily_costs(*, days: int = 14) -> list[DailyCost]:
    """Cost per day by agent model (runs), validator model (validations and replays)
    and second-judge model, newest day first. Grouped queries over indexed date ranges."""
    since = timezone.now() - timedelta(days=days)
    result: list[DailyCost] = []
    snapshots = ValidationSnapshot.objects.filter(created_at__gte=since)
    sources = (
        ("agent", Run.objects.filter(started_at__gte=since), "started_at"),
        ("validator", snapshots.exclude(kind=SnapshotKind.SECOND), "created_at"),
        (SECOND_JUDGE_ROLE, snapshots.filter(kind=SnapshotKind.SECOND), "created_at"),
    )
    for role, queryset, column in sources:
        rows = (
            queryset.annotate(day=TruncDate(column))
            .values("day", "model_name")
            .annotate(
                amount=Sum("cost"),
                priced=Count("id", filter=Q(cost__isnull=False)),
                unknown=Count("id", filter=Q(cost__isnull=True)),
                input_tokens=Sum("input_tokens"),
                output_tokens=Sum("output_tokens"),
            )
        )
        for row in rows:
            result.append(
                DailyCost(
                    day=row["day"],
                    role=role,
                    model_name=row["model_name"],
                    cost=CostTotal(
                        amount=row["amount"] or Decimal(0),
                        priced=row["priced"],
                        unknown=row["unknown"],
                    ),
                    input_tokens=row["input_tokens"] or 0,
                    output_tokens=row["output_tokens"] or 0,
                )
            )
    result.sort(key=lambda r: (r.day, r.role, r.model_name), reverse=True)
    return result


def cost_per_accepted_answer(*, days: int = 14) -> tuple[CostTotal, int, CostTotal | None]:
    """(total spent, accepted answers, cost per accepted answer) over the last ``days``:
    everything spent on agent runs and validations divided by the number of validations
    that accepted an answer. The ratio is None when nothing was accepted."""
    since = timezone.now() - timedelta(days=days)
    total = CostTotal()
    for queryset, column in (
        (Run.objects.all(), "started_at"),
        (ValidationSnapshot.objects.all(), "created_at"),
    ):
        row = queryset.filter(**{f"{column}__gte": since}).aggregate(
            amount=Sum("cost"),
            priced=Count("id", filter=Q(cost__isnull=False)),
            unknown=Count("id", filter=Q(cost__isnull=True)),
        )
        total.merge(
            CostTotal(
                amount=row["amount"] or Decimal(0), priced=row["priced"], unknown=row["unknown"]
            )
        )
    accepted = (
        ValidationSnapshot.objects.originals()
        .filter(created_at__gte=since, status=ValidationStatus.ACCEPTED)
        .count()
    )
    if not accepted:
        return total, 0, None
    per = CostTotal(
        amount=(total.amount / accepted).quantize(Decimal("0.0000000001")),
        priced=total.priced,
        unknown=total.unknown,
    )
    return total, accepted, per


def latest_replay_request(original: ValidationSnapshot) -> ReplayRequest | None:
    """The newest replay request of a validation, or None."""
    return original.replay_requests.order_by("-created_at", "-id").first()


def recent_replay_requests(*, user: Any, limit: int = 50) -> list[ReplayRequest]:
    """``user``'s newest replay requests (the bulk replay page's progress list)."""
    return list(
        ReplayRequest.objects.filter(requested_by=user)
        .select_related("original__task")
        .order_by("-created_at", "-id")[:limit]
    )


class JudgePairGroup(BaseModel):
    first_model: str
    second_model: str
    count: int
    compared: int = 0
    agreement_rate: float | None = None
    kappa: float | None = None
    disagreements: int = 0
    # first judge's status -> second judge's status -> count
    confusion: dict[str, dict[str, int]] = Field(default_factory=dict)


def judge_pair_stats() -> list[JudgePairGroup]:
    """Judge versus judge: every original verdict with a second judge's verdict beside
    it, grouped by (first model, second model), largest first: the binary call (accepted
    or not) of both, rate and Cohen's kappa over the pairs where neither judge failed;
    ``disagreements`` counts the pairs the routing sent to a person
    (``routing.judges_disagree``: a failed second judge counts as not accepting there)."""
    rows = (
        ValidationSnapshot.objects.filter(kind=SnapshotKind.SECOND, companion_of__isnull=False)
        .order_by()
        .values_list("companion_of__model_name", "model_name", "companion_of__status", "status")
    )
    grouped: dict[tuple[str, str], list[tuple[str, str]]] = defaultdict(list)
    for first_model, second_model, first_status, second_status in rows:
        grouped[(first_model, second_model)].append((first_status, second_status))
    groups = []
    error = ValidationStatus.VALIDATOR_ERROR
    for (first_model, second_model), pairs in grouped.items():
        confusion: dict[str, dict[str, int]] = {}
        for first, second in pairs:
            row = confusion.setdefault(first, {})
            row[second] = row.get(second, 0) + 1
        binary = [
            (first == ValidationStatus.ACCEPTED, second == ValidationStatus.ACCEPTED)
            for first, second in pairs
            if error not in (first, second)
        ]
        groups.append(
            JudgePairGroup(
                first_model=first_model,
                second_model=second_model,
                count=len(pairs),
                compared=len(binary),
                agreement_rate=agreement_rate(binary),
                kappa=cohen_kappa(binary),
                disagreements=sum(1 for first, second in pairs if judges_disagree(first, second)),
                confusion=confusion,
            )
        )
    groups.sort(key=lambda g: (-g.count, g.first_model, g.second_model))
    return groups
