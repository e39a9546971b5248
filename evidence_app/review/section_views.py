"""The task page's lazy sections: long texts, a verdict's
prompt and raw responses (staff only), a tool result's content with its cited span, a
claim's evidence, and the live progress while the task runs (the Evidence list and a
run's transcript page in ``list_views``)."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_GET

from evidence_app.models import ValidationSnapshot
from evidence_app.review.task_detail import is_polling
from evidence_app.validation.claims import shown_claims
from evidence_app.validation.selectors import citation_excerpts, evidence_labels_for_task
from project.downloads import set_attachment
from project.roles import is_staff_role
from project.views import render_fragment
from tasks_app.records import Run, Task, ToolEvidence, visible_task

TEXT_SECTIONS = {"request": "request", "rules": "rules", "answer": "final_answer"}


@login_required
@require_GET
def task_section(request: HttpRequest, task_id: int, section: str) -> HttpResponse:
    """One big text column of the task, loaded on demand."""
    field = TEXT_SECTIONS.get(section)
    if field is None:
        raise Http404("No such section")
    task = visible_task(request, task_id)
    text = Task.objects.filter(pk=task.pk).values_list(field, flat=True).get()
    return render_fragment(
        request, "evidence_app/_text_block.html", {"text": text, "block_id": f"{section}-{task.pk}"}
    )


def _require_staff_for_internals(request: HttpRequest) -> None:
    """Validator input, raw responses and transcripts are operator material: requesters
    get the answer and the verdict in words. Checked after visibility, so a
    task that is not yours stays a 404."""
    if not is_staff_role(request.user):
        raise PermissionDenied("The validator's internals are for reviewers and operators.")


def _visible_snapshot(
    request: HttpRequest, task_id: int, snapshot_id: int, *fields: str
) -> ValidationSnapshot:
    task = visible_task(request, task_id)
    _require_staff_for_internals(request)
    return get_object_or_404(
        ValidationSnapshot.objects.filter(task=task).only(
            "id", "task_id", "attempt_index", "kind", *fields
        ),
        pk=snapshot_id,
    )


@login_required
@require_GET
def snapshot_section(
    request: HttpRequest, task_id: int, snapshot_id: int, section: str
) -> HttpResponse:
    """The rendered validator input, its system prompt or the raw responses."""
    if section == "input":
        snap = _visible_snapshot(request, task_id, snapshot_id, "rendered_input")
        return render_fragment(
            request,
            "evidence_app/_viewer.html",
            {
                "text": snap.rendered_input,
                "viewer_id": "validator-input",
                "snapshot": snap,
                "task_id": task_id,
            },
        )
    if section == "system":
        snap = _visible_snapshot(request, task_id, snapshot_id, "system_prompt")
        return render_fragment(
            request,
            "evidence_app/_viewer.html",
            {
                "text": snap.system_prompt,
                "viewer_id": "system-viewer",
                "snapshot": snap,
                "task_id": task_id,
                "part": "system",
            },
        )
    if section == "raw":
        snap = _visible_snapshot(request, task_id, snapshot_id, "raw_responses", "schema_errors")
        return render_fragment(
            request,
            "evidence_app/_raw_responses.html",
            {"raw": snap.raw_responses, "snapshot": snap},
        )
    raise Http404("No such section")


@login_required
@require_GET
def snapshot_download(request: HttpRequest, task_id: int, snapshot_id: int) -> HttpResponse:
    """The validator input exactly as sent, as a text file."""
    part = request.GET.get("part", "input")
    field = "system_prompt" if part == "system" else "rendered_input"
    snap = _visible_snapshot(request, task_id, snapshot_id, field)
    response = HttpResponse(getattr(snap, field), content_type="text/plain; charset=utf-8")
    suffix = "system" if part == "system" else "input"
    set_attachment(
        response, "task", task_id, "attempt", snap.attempt_index, snap.kind, snap.pk, suffix
    )
    response["X-Content-Type-Options"] = "nosniff"
    return response


@login_required
@require_GET
def evidence_content(request: HttpRequest, task_id: int, evidence_id: int) -> HttpResponse:
    """Full content of one tool result, loaded when the reviewer opens it. With
    ``?start=&end=`` (a citation chip) those characters are marked."""
    task = visible_task(request, task_id)
    item = get_object_or_404(ToolEvidence, pk=evidence_id, task=task)
    context: dict[str, Any] = {"item": item, "marked": marked_span(request.GET, item.content)}
    if context["marked"]:
        context["label"] = evidence_labels_for_task(task.pk).get(item.pk, "")
        context["claim_id"] = request.GET.get("claim", "")
    return render_fragment(request, "evidence_app/_evidence_content.html", context)


def marked_span(query: QueryDict, content: str) -> dict[str, Any] | None:
    """``content`` cut around the characters ``[start, end)`` the query names, or None
    when it names none that lie inside the content."""
    start, end = query.get("start", ""), query.get("end", "")
    if not (start.isdigit() and end.isdigit()):
        return None
    a, b = int(start), int(end)
    if not a < b <= len(content):
        return None
    return {
        "start": a,
        "end": b,
        "before": content[:a],
        "quote": content[a:b],
        "after": content[b:],
    }


@login_required
@require_GET
def claim_evidence(
    request: HttpRequest, task_id: int, snapshot_id: int, claim_id: str
) -> HttpResponse:
    """The evidence one claim of a verdict cites, each quote highlighted in its
    surrounding text. Reads excerpts, never a whole tool result."""
    task = visible_task(request, task_id)
    snapshot = get_object_or_404(
        ValidationSnapshot.objects.without_bodies(), pk=snapshot_id, task=task
    )
    result = snapshot.result if isinstance(snapshot.result, dict) else {}
    claim = next(
        (
            c
            for c in result.get("claims") or []
            if isinstance(c, dict) and str(c.get("id")) == claim_id
        ),
        None,
    )
    if claim is None:
        raise Http404("No such claim in this verdict.")
    shown = shown_claims([claim])[0]
    return render_fragment(
        request,
        "evidence_app/_claim_evidence.html",
        {
            "task": task,
            "claim": shown,
            "excerpts": citation_excerpts(task.pk, shown["citations"]),
        },
    )


@login_required
@require_GET
def task_progress(request: HttpRequest, task_id: int) -> HttpResponse:
    """Polled while an attempt is queued or running. When the task changed status
    since the page was drawn, the whole task view is re-fetched into ``#main`` (no full
    reload); otherwise the steps and tool calls so far are returned."""
    task = visible_task(request, task_id)
    seen = request.GET.get("seen", "")
    if seen.isdigit() and int(seen) != task.version:
        response = HttpResponse(status=200)
        response["HX-Location"] = json.dumps(
            {"path": reverse("task_detail", args=[task.pk]), "target": "#main", "push": "false"}
        )
        return response
    runs = list(
        Run.objects.filter(task=task, attempt_index=task.attempt_count)
        .defer("output_text")
        .order_by("graph_index", "id")
    )
    calls = list(
        ToolEvidence.objects.filter(task=task, attempt_index=task.attempt_count)
        .without_content()
        .order_by("-created_at", "-id")[:30]
    )
    return render_fragment(
        request,
        "evidence_app/_progress.html",
        {"task": task, "progress_runs": runs, "progress_calls": calls, "polling": is_polling(task)},
    )
