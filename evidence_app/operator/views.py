"""Operator pages: the validator's index, its templates, rendered inputs
with a diff between attempts, LLM request snapshots, and agreement. A validation and its
replay are in ``validation_views``, the charts in ``charts``."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.views.decorators.http import require_GET

from evidence_app.models import (
    STORED_INPUT_CHARS,
    SnapshotKind,
    ValidationSnapshot,
    ValidationStatus,
)
from evidence_app.operator import llm_requests
from evidence_app.trust.agreement import agreement_stats
from evidence_app.trust.blinding import audit_exposures_record
from evidence_app.trust.claim_agreement import STANCES, claim_agreement_stats
from evidence_app.trust.team import audit_queue, queue_age
from evidence_app.validation.selectors import (
    cost_per_accepted_answer,
    daily_costs,
    judge_pair_stats,
)
from evidence_app.validator.templates import list_templates
from project.diffs import DIFF_MAX_LINES, diff_lines
from project.health import run_checks
from project.url_ids import MAX_ROW_ID
from project.views import operator_required, render_page
from tasks_app.records import LLMRequestSnapshot, Task

LLM_REQUESTS_PER_PAGE = 25
# The operator overview's cost window.
COST_DAYS = 14


def _templates() -> list[Any]:
    return list_templates()


@operator_required
@require_GET
def ops_index(request: HttpRequest) -> HttpResponse:
    by_kind = dict(
        ValidationSnapshot.objects.order_by()
        .values_list("kind")
        .annotate(n=Count("id"))
        .values_list("kind", "n")
    )
    models = list(
        ValidationSnapshot.objects.order_by()
        .values("model_name", "template_version")
        .annotate(
            n=Count("id"), errors=Count("id", filter=Q(status=ValidationStatus.VALIDATOR_ERROR))
        )
        .order_by("-n")[:20]
    )
    recent = list(
        ValidationSnapshot.objects.without_bodies()
        .select_related("task")
        .order_by("-created_at", "-id")[:25]
    )
    spent, accepted, per_accepted = cost_per_accepted_answer(days=COST_DAYS)
    return render_page(
        request,
        "evidence_app/ops_index.html",
        {
            "by_kind": by_kind,
            "models": models,
            "recent": recent,
            "request_count": LLMRequestSnapshot.objects.count(),
            # Issue 18: the same checks as /ready and manage.py check_health.
            "checks": run_checks(),
            "cost_days": COST_DAYS,
            "daily_costs": daily_costs(days=COST_DAYS),
            "spent": spent,
            "accepted": accepted,
            "per_accepted": per_accepted,
            # The review team's panel: the queue's age and the audits waiting.
            "team_queue": queue_age(),
            "team_audits": audit_queue(),
        },
    )


@operator_required
@require_GET
def ops_templates(request: HttpRequest) -> HttpResponse:
    usage = dict(
        ValidationSnapshot.objects.order_by()
        .values_list("template_version")
        .annotate(n=Count("id"))
        .values_list("template_version", "n")
    )
    templates = [{"t": t, "uses": usage.get(t.version, 0)} for t in _templates()]
    return render_page(
        request,
        "evidence_app/ops_templates.html",
        {"templates": templates},
    )


@operator_required
@require_GET
def ops_task_inputs(request: HttpRequest, task_id: int) -> HttpResponse:
    """Every rendered validator input of a task, and the diff between two of them."""
    task = get_object_or_404(Task.objects.for_list(), pk=task_id)
    audit_exposures_record(user=request.user, task_ids=[task.pk], channel=f"GET {request.path}")
    snapshots = list(
        ValidationSnapshot.objects.filter(task=task)
        .without_bodies()
        .annotate(input_len=STORED_INPUT_CHARS)
        .order_by("created_at", "id")
    )
    by_id = {s.pk: s for s in snapshots}
    originals = [s for s in snapshots if s.kind == SnapshotKind.VALIDATION]

    def pick(param: str, default: ValidationSnapshot | None) -> ValidationSnapshot | None:
        raw = request.GET.get(param, "")
        return by_id.get(int(raw), default) if raw.isdigit() else default

    a = pick("a", originals[-2] if len(originals) >= 2 else None)
    b = pick("b", originals[-1] if originals else None)
    diffs = _input_diffs(a, b)
    # Paged: a long task's requests were a 6,000 px table; the validator's
    # requests are listed with the agent's.
    requests_page, request_rows = llm_requests.request_page(
        task_id=task.pk, number=request.GET.get("rpage"), per_page=LLM_REQUESTS_PER_PAGE
    )
    return render_page(
        request,
        "evidence_app/ops_task_inputs.html",
        {
            "task": task,
            "snapshots": snapshots,
            "a": a,
            "b": b,
            **diffs,
            "diff_max": DIFF_MAX_LINES,
            "llm_requests": request_rows,
            "requests_page": requests_page,
        },
    )


def _input_diffs(a: ValidationSnapshot | None, b: ValidationSnapshot | None) -> dict[str, Any]:
    """The diff of two rendered inputs and of their instructions (capped), for the page."""
    diff: list[tuple[str, str]] = []
    system_diff: list[tuple[str, str]] = []
    diff_capped = system_capped = False
    if a is not None and b is not None and a.pk != b.pk:
        rows = {
            pk: (text, system)
            for pk, text, system in ValidationSnapshot.objects.filter(
                pk__in=[a.pk, b.pk]
            ).values_list("pk", "rendered_input", "system_prompt")
        }
        label_a = f"attempt {a.attempt_index} {a.kind} #{a.pk}"
        label_b = f"attempt {b.attempt_index} {b.kind} #{b.pk}"
        diff, diff_capped = diff_lines(
            rows[a.pk][0], rows[b.pk][0], label_a=label_a, label_b=label_b
        )
        # A replay with another template differs in the instructions, not the material.
        system_diff, system_capped = diff_lines(
            rows[a.pk][1], rows[b.pk][1], label_a=label_a, label_b=label_b
        )
    return {
        "diff": diff,
        "diff_capped": diff_capped,
        "system_diff": system_diff,
        "system_capped": system_capped,
    }


@operator_required
@require_GET
def ops_llm_requests(request: HttpRequest) -> HttpResponse:
    """The agent's and the validator's model requests, newest first (the
    validator's were missing), filterable by task and model; each row opens its details."""
    task_id = request.GET.get("task", "")
    model = request.GET.get("model", "").strip()
    wanted = int(task_id) if task_id.isdigit() else None
    if wanted is not None and wanted > MAX_ROW_ID:
        raise Http404(f"Task {task_id} not found.")
    page, rows = llm_requests.request_page(
        task_id=wanted,
        model=model,
        number=request.GET.get("page"),
        per_page=LLM_REQUESTS_PER_PAGE,
    )
    # The rows show validators' statuses and later attempts' requests; a task filter shows
    # how many attempts it took: each read records an exposure of those tasks' open audits.
    seen = {row.task_id for row in rows} | ({wanted} if wanted is not None else set())
    audit_exposures_record(user=request.user, task_ids=seen, channel=f"GET {request.path}")
    return render_page(
        request,
        "evidence_app/ops_llm_requests.html",
        {"page": page, "rows": rows, "task_filter": task_id, "model_filter": model},
    )


@operator_required
@require_GET
def ops_llm_request(request: HttpRequest, request_id: int) -> HttpResponse:
    """One agent request: its run, sizes, settings, tokens, cost and, when full request
    snapshots are on, the request itself as indented JSON."""
    found = llm_requests.agent_request(request_id)
    audit_exposures_record(
        user=request.user, task_ids=[found.run.task_id], channel=f"GET {request.path}"
    )
    return render_page(request, "evidence_app/ops_llm_request.html", {"r": found})


@operator_required
@require_GET
def ops_validator_requests(request: HttpRequest, snapshot_id: int) -> HttpResponse:
    """The requests of one validation: model, template, counts, tokens, cost, and every
    raw response, pretty-printed and foldable, with the schema-retry failures."""
    snapshot = llm_requests.validator_requests(snapshot_id)
    audit_exposures_record(
        user=request.user, task_ids=[snapshot.task_id], channel=f"GET {request.path}"
    )
    return render_page(
        request,
        "evidence_app/ops_validator_requests.html",
        {"s": snapshot, "raw": snapshot.raw_responses},
    )


@operator_required
@require_GET
def ops_agreement(request: HttpRequest) -> HttpResponse:
    groups = agreement_stats()
    decisions = ["satisfied", "revise", "abandon"]
    rows = []
    for g in groups:
        confusion = getattr(g, "confusion", {}) or {}
        # Every verdict row, even an empty one, so tables compare at a glance.
        statuses = list(ValidationStatus.values) + [
            s for s in confusion if s not in ValidationStatus.values
        ]
        rows.append(
            {
                "g": g,
                "matrix": [
                    (s, [confusion.get(s, {}).get(d, 0) for d in decisions]) for s in statuses
                ],
            }
        )
    return render_page(
        request,
        "evidence_app/ops_agreement.html",
        {
            "rows": rows,
            "decisions": decisions,
            "judge_pairs": judge_pair_stats(),
            **_claim_agreement_context(),
        },
    )


def _claim_agreement_context() -> dict[str, Any]:
    """The per-claim table: validator's claim verdict (rows) against the person's label."""
    stances = list(STANCES)
    return {
        "stances": stances,
        "claim_rows": [
            {"g": g, "matrix": [(s, [g.confusion[s][t] for t in stances]) for s in stances]}
            for g in claim_agreement_stats()
        ],
    }
