"""Requester and task pages: my tasks, new task, task detail with its lazy sections,
live progress, and the actions (U2, U3, U4). Permission checks live here, never
in templates (STYLE); views call services and never assign ``status``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import F
from django.db.models.functions import Length
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import get_object_or_404, redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from evidence_app.models import SnapshotKind, ValidationSnapshot
from evidence_app.review import task_page, trace_tree
from evidence_app.review.forms import FeedbackForm, NoteForm, TaskCreateForm, claim_labels_from_post
from evidence_app.review.queue_views import (
    queue_filters,
    queue_position,
    queue_response,
    reviewer_choices,
)
from evidence_app.trust.claim_labels import task_decide_with_claim_labels
from evidence_app.validation.claims import (
    disagreement_reason,
    judges_disagree,
    review_reason,
    shown_claims,
    shown_counts,
)
from evidence_app.validation.selectors import (
    answer_segments,
    citation_excerpts,
    evidence_labels_for_task,
    evidence_labels_of,
    task_cost_of,
)
from project.diffs import diff_lines
from project.downloads import set_attachment
from project.errors import DomainError, Forbidden
from project.pagination import CountedPaginator
from project.roles import is_operator, is_reviewer, is_staff_role
from project.views import (
    AuthenticatedHttpRequest,
    HtmxHttpRequest,
    render_fragment,
    render_page,
    reviewer_required,
    wants_fragment,
)
from tasks_app.models import (
    ClaimEvent,
    Feedback,
    FeedbackAction,
    Run,
    RunKind,
    RunMessage,
    Task,
    TaskEvent,
    ToolEvidence,
)
from tasks_app.workflow import services, states
from tasks_app.workflow.selectors import can_act, count_of, status_counts, visible_task
from tasks_app.workflow.states import TaskStatus

POLLING_STATUSES = states.EXECUTION_ACTIVE_STATUSES | states.RUNNABLE_STATUSES
TASKS_PER_PAGE = 50
# The detail page lists this many tool results; the rest load on request (a 500-result
# list alone would be ~250 KB of HTML and most of the page's render time).
EVIDENCE_INLINE_ITEMS = 50


def is_polling(task: Task) -> bool:
    """A task whose attempt is queued or running: its page polls for progress (U4)."""
    return task.status in POLLING_STATUSES


# --- Lists ---------------------------------------------------------------------------------


@login_required
@require_GET
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    """A reviewer starts at the queue (issue 13); everyone else at their own tasks."""
    if is_staff_role(request.user):
        return redirect("review_queue")
    return my_tasks(request)


@login_required
@require_GET
def my_tasks(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The requester's own tasks (U4); polls while one of them is queued or running."""
    return _task_list(request, Task.objects.filter(owner=request.user), scope="mine")


@reviewer_required
@require_GET
def task_list_all(request: HttpRequest) -> HttpResponse:
    return _task_list(request, Task.objects.all(), scope="all")


def _task_list(request: HttpRequest, base: Any, *, scope: str) -> HttpResponse:
    status = request.GET.get("status", "")
    # All tasks: the status counters (no scan of the table, issue 16); own tasks: counted.
    counts = status_counts(None if scope == "all" else base)
    qs = base.for_list().order_by("-created_at", "-id")
    if status in TaskStatus.values:
        qs = qs.filter(status=status)
    total = count_of(counts, [status] if status in TaskStatus.values else None)
    page = CountedPaginator(qs, TASKS_PER_PAGE, count=total).get_page(request.GET.get("page"))
    polling = any(counts.get(s, 0) for s in POLLING_STATUSES)
    context = {
        "page": page,
        "tasks": page.object_list,
        "counts": [(s, TaskStatus(s).label, counts.get(s, 0)) for s in TaskStatus.values],
        "status_filter": status,
        "scope": scope,
        "polling": polling,
        "list_url": request.get_full_path(),
    }
    if wants_fragment(request, "task-list"):
        return render_fragment(request, "tasks_app/task_list.html#task_list", context)
    return render_page(request, "tasks_app/task_list.html", context)


# --- New task ------------------------------------------------------------------------------


@login_required
def task_new(request: HttpRequest) -> HttpResponse:
    form = TaskCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            task = services.task_create(
                owner=request.user,
                title=data["title"],
                request=data["request"],
                rules=data["rules"],
                plan=data["plan"],
                validation_policy=data["validation_policy"],
                validation_keywords=data["validation_keywords"],
                audit_rate=data["audit_rate"],
                audit_reject_rate=data["audit_reject_rate"],
                audit_rate_reason=data["audit_rate_reason"],
                second_model=data["second_model"],
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"Task #{task.pk} created; the agent will start shortly.")
            return redirect("task_detail", task_id=task.pk)
    status = 422 if request.method == "POST" else 200
    return render_page(request, "tasks_app/task_new.html", {"form": form}, status=status)


# --- Task detail ---------------------------------------------------------------------------


def detail_context(
    request: HttpRequest, task_id: int, *, queue_params: QueryDict | None = None
) -> dict[str, Any]:
    """Everything the detail page shows, in a bounded number of queries whatever the
    size of the task: big text columns come as a head + length, and a section over
    ``UI_LAZY_SECTION_CHARS`` is left to a lazy fragment (U2)."""
    limit = settings.UI_LAZY_SECTION_CHARS
    user = request.user
    task = task_page.task(user, task_id, limit=limit)
    snapshots = task_page.snapshots(task)
    originals = [s for s in snapshots if s.kind == SnapshotKind.VALIDATION]
    latest = originals[-1] if originals else None
    selected = _chosen_snapshot(request, snapshots, latest)
    runs = task_page.runs(task)
    feedback = task_page.feedback(task)
    return {
        "task": task,
        "otlp_traces": task_page.otlp_traces(task),
        "lazy_limit": limit,
        **_snapshot_context(snapshots, latest, selected, limit=limit),
        **_verdict_context(task, latest, limit=limit, second=_second_of(snapshots, latest)),
        **_evidence_context(task, runs),
        "claim_evidence": _claim_evidence(task, latest, runs),
        "runs": runs,
        # The trace tree's top levels (issue 26); runs and their steps are staff material.
        "trace": trace_tree.attempts(runs) if is_staff_role(user) else [],
        # Stored per request when it was made (issue 18); summed here, never re-priced.
        "cost": task_cost_of(
            runs=[(r.attempt_index, r.cost) for r in runs],
            snapshots=[(s.attempt_index, s.kind, s.cost) for s in snapshots],
        ),
        "timeline": _timeline(
            task_page.events(task), feedback, runs, snapshots, task_page.claim_events(task)
        ),
        **_people_context(request, task, feedback, queue_params),
        "budget": attempt_budget(task, feedback),
        **_revision_context(task, feedback),
        "failure_run": next((r for r in reversed(runs) if r.error), None),
        "polling": is_polling(task),
        "is_staff_role": is_staff_role(user),
        "can_see_admin": user.has_perm("tasks_app.view_task"),
        "is_operator": is_operator(user),
    }


def _chosen_snapshot(
    request: HttpRequest, snapshots: list[ValidationSnapshot], latest: ValidationSnapshot | None
) -> ValidationSnapshot | None:
    """The verdict the page opens on: ``?snapshot=`` when it is one of the task's, else
    the latest original."""
    wanted = request.GET.get("snapshot")
    if wanted and wanted.isdigit():
        return next((s for s in snapshots if s.pk == int(wanted)), latest)
    return latest


def _snapshot_context(
    snapshots: list[ValidationSnapshot],
    latest: ValidationSnapshot | None,
    selected: ValidationSnapshot | None,
    *,
    limit: int,
) -> dict[str, Any]:
    bodies = task_page.snapshot_bodies(selected, limit=limit) if selected else {}
    return {
        "snapshots": snapshots,
        "latest": latest,
        "selected": selected,
        "selected_input": bodies.get("rendered_input"),
        # A multi-megabyte input waits for a click instead of loading when scrolled to.
        "input_click": bool(selected and (getattr(selected, "input_len", 0) or 0) > 1_000_000),
        "selected_system": bodies.get("system_prompt"),
        "selected_raw": bodies.get("raw_responses"),
    }


def _second_of(
    snapshots: Sequence[ValidationSnapshot], latest: ValidationSnapshot | None
) -> ValidationSnapshot | None:
    """The second judge's verdict beside ``latest``, if a second judge judged it."""
    if latest is None:
        return None
    return next(
        (s for s in snapshots if s.kind == SnapshotKind.SECOND and s.companion_of_id == latest.pk),
        None,
    )


def _judge_why(snapshot: ValidationSnapshot) -> str:
    """One line on a judge's verdict: why it is not an acceptance, else its first issue."""
    result = snapshot.result if isinstance(snapshot.result, dict) else {}
    reason = review_reason(snapshot.status, result, snapshot.error)
    issues = result.get("issues")
    if not reason and isinstance(issues, list) and issues:
        reason = str(issues[0])
    return reason


def _judge_pair(
    latest: ValidationSnapshot | None, second: ValidationSnapshot | None
) -> list[dict[str, Any]]:
    """Both judges' verdicts side by side (empty without a second judge)."""
    if latest is None or second is None:
        return []
    return [
        {"role": role, "label": label, "s": s, "why": _judge_why(s)}
        for role, label, s in (("first", "First judge", latest), ("second", "Second judge", second))
    ]


def _verdict_context(
    task: Task,
    latest: ValidationSnapshot | None,
    *,
    limit: int,
    second: ValidationSnapshot | None = None,
) -> dict[str, Any]:
    result = (latest.result or {}) if latest else {}
    disagree = bool(latest and second and judges_disagree(latest.status, second.status))
    claim_view = None
    if latest:
        claim_view = _claim_view(
            latest,
            answer=getattr(task, "answer_head", ""),
            complete=getattr(task, "answer_len", 0) <= limit,
        )
    return {
        "verdict": result,
        "claim_view": claim_view,
        # The verdict on screen belongs to the current answer only once that attempt has
        # been validated; during a revision it is the previous answer's (issue 13).
        "verdict_is_current": bool(latest and latest.attempt_index == task.attempt_count),
        "verdict_lists": verdict_lists(latest.result if latest else None),
        "review_reason": (
            _pair_reason(latest, second)
            if latest and second and disagree
            else review_reason(
                latest.status, result if isinstance(result, dict) else {}, latest.error
            )
            if latest
            else ""
        ),
        "judge_pair": _judge_pair(latest, second),
        "judges_disagree": disagree,
    }


def _pair_reason(latest: ValidationSnapshot, second: ValidationSnapshot) -> str:
    return disagreement_reason(latest.model_name, latest.status, second.model_name, second.status)


def _evidence_context(task: Task, runs: Sequence[Run]) -> dict[str, Any]:
    """The first ``EVIDENCE_INLINE_ITEMS`` tool results; the totals come from the runs'
    counts, so an attempt with 20,000 results reads 50 rows here (issue 26)."""
    count = sum(r.evidence_count for r in runs)  # type: ignore[attr-defined]
    head = task_page.evidence(task, limit=EVIDENCE_INLINE_ITEMS)
    return {
        "evidence_labels": evidence_labels_of(head, runs),
        "evidence_count": count,
        "evidence_head": head,
        "evidence_rest": max(0, count - EVIDENCE_INLINE_ITEMS),
        "evidence_chars": sum(r.evidence_chars for r in runs),  # type: ignore[attr-defined]
    }


def _claim_evidence(
    task: Task, latest: ValidationSnapshot | None, runs: Sequence[Run]
) -> list[tuple[int, str]]:
    """The evidence a corrected citation on the decision form can name: the validated
    attempt's first results, labelled R1, R2… as the validator saw them. Read only when
    the form offers claim verdicts (a current verdict with claims)."""
    claims = (latest.result or {}).get("claims") if latest else None
    if latest is None or not claims or latest.attempt_index != task.attempt_count:
        return []
    items = task_page.attempt_evidence(task, latest.attempt_index, limit=EVIDENCE_INLINE_ITEMS)
    # Position of the attempt's first result in the task's list (attempt, run, sequence).
    start = sum(
        r.evidence_count  # type: ignore[attr-defined]
        for r in runs
        if r.attempt_index < latest.attempt_index
    )
    labels = evidence_labels_of(items, runs, start=start)
    return [(e.pk, f"{labels.get(e.pk, '–')} · {e.title or e.tool_name}") for e in items]


def _people_context(
    request: HttpRequest,
    task: Task,
    feedback: list[Feedback],
    queue_params: QueryDict | None = None,
) -> dict[str, Any]:
    """Who may do what on the page: act, claim, assign; the queue around the task, in
    the queue filters of ``queue_params`` (default: the page's query string)."""
    user = request.user
    queue_nav = None
    if is_staff_role(user):
        filters, query = queue_filters(request.GET if queue_params is None else queue_params)
        queue_nav = queue_position(user, filters, task.pk) | {"query": query}
    reviewer = is_reviewer(user)
    pending = next((f for f in reversed(feedback) if f.is_pending), None)
    return {
        "can_act": can_act(user, task),
        # A decision in its undo window (issue 26): the panel shows it instead of the forms.
        "pending_decision": pending,
        "undo_seconds": settings.DECISION_UNDO_SECONDS,
        "can_undo": pending is not None and (pending.author_id == user.pk or reviewer),
        "can_claim": reviewer,
        "claim_live": task.claim_is_live(),
        "claimed_by_me": task.claimed_by_id == user.pk,
        "note_form": NoteForm(),
        "notes": [f for f in feedback if f.action == FeedbackAction.NOTE],
        "queue_nav": queue_nav,
        "reviewers": reviewer_choices() if reviewer and task.is_open else [],
    }


def verdict_lists(result: dict[str, Any] | None) -> list[tuple[str, list[str]]]:
    """The verdict's issues, missing requirements and evidence gaps, each sentence shown
    once (under the first heading it appears in) so the card does not repeat itself."""
    if not result:
        return []
    seen: set[str] = set()
    out = []
    for key, heading in (
        ("issues", "Issues"),
        ("missing_requirements", "Not covered"),
        ("evidence_gaps", "Missing from the evidence"),
    ):
        raw = result.get(key) or []
        items = []
        for item in raw if isinstance(raw, list) else [raw]:
            text = str(item).strip()
            norm = " ".join(text.lower().split())
            if (
                text
                and norm not in seen
                and norm != " ".join(str(result.get("reasoning", "")).lower().split())
            ):
                seen.add(norm)
                items.append(text)
        if items:
            out.append((heading, items))
    return out


def _revision_context(task: Task, feedback: list[Feedback]) -> dict[str, Any]:
    """The person's revise comment beside the answer it asked for (issue 26 item 6):
    the current answer's, and each later attempt's in the answer history."""
    asked = {
        f.attempt_index + 1: f
        for f in feedback
        if f.action == FeedbackAction.REVISE and f.state == "applied"
    }
    answers = attempt_answers(task) if task.attempt_count > 1 else []
    for answer in answers:
        answer["revision"] = asked.get(answer["attempt"])
    return {"answers": answers, "revision_asked": asked.get(task.attempt_count)}


def attempt_budget(task: Task, feedback: list[Feedback]) -> dict[str, Any]:
    """What the attempt count means: automatic retries after a validator rejection are
    bounded by ``max_attempts``; revisions people ask for are not (V2, S5)."""
    revisions = sum(
        1 for f in feedback if f.action == FeedbackAction.REVISE and f.state == "applied"
    )
    automatic = max(0, task.attempt_count - 1 - revisions)
    return {
        "attempt": task.attempt_count,
        "revisions": revisions,
        "automatic": automatic,
        "automatic_allowed": max(0, task.max_attempts - 1),
        # The validator retries on its own only while fewer than max_attempts have run.
        "auto_retry_left": task.attempt_count < task.max_attempts,
    }


ANSWER_DIFF_MAX_CHARS = 200_000


def attempt_answers(task: Task) -> list[dict[str, Any]]:
    """Each attempt's final answer (the main run's output, or the synthesis of a team),
    newest first, with a line diff to the attempt before it or ``unchanged``."""
    rows = (
        Run.objects.filter(task=task, kind__in=[RunKind.MAIN, RunKind.SYNTHESIS])
        .annotate(out_len=Length("output_text"))
        .filter(out_len__lte=ANSWER_DIFF_MAX_CHARS)
        .order_by("attempt_index", "graph_index", "id")
        .values_list("attempt_index", "output_text")
    )
    by_attempt: dict[int, str] = {}
    for attempt, text in rows:
        if text:
            by_attempt[attempt] = text  # the last final run of the attempt wins
    out: list[dict[str, Any]] = []
    previous: tuple[int, str] | None = None
    for attempt in sorted(by_attempt):
        text = by_attempt[attempt]
        item: dict[str, Any] = {"attempt": attempt, "text": text, "previous": None}
        if previous is not None:
            item["previous"] = previous[0]
            item["unchanged"] = previous[1].strip() == text.strip()
            item["diff"], item["diff_capped"] = diff_lines(
                previous[1],
                text,
                label_a=f"attempt {previous[0]}",
                label_b=f"attempt {attempt}",
            )
        out.append(item)
        previous = (attempt, text)
    return list(reversed(out))


def _claim_view(
    snapshot: ValidationSnapshot, *, answer: str, complete: bool
) -> dict[str, Any] | None:
    """The claim view of a verdict (issue 12), or None for a verdict without claims."""
    result = snapshot.result if isinstance(snapshot.result, dict) else {}
    claims = shown_claims([c for c in result.get("claims") or [] if isinstance(c, dict)])
    if not claims:
        return None
    return {
        "snapshot": snapshot,
        "model_status": snapshot.model_status or snapshot.status,
        "summary": snapshot.claim_summary or {},
        "counts": shown_counts(claims),
        # A lazily loaded long answer is shown as claims only, without marks in place.
        "segments": answer_segments(answer, claims) if complete else [],
        "claims": claims,
        "requirements": [r for r in result.get("requirements") or [] if isinstance(r, dict)],
        "reconciliation": result.get("reconciliation") or [],
    }


def _timeline(
    events: list[TaskEvent],
    feedback: list[Feedback],
    runs: Sequence[Run],
    snapshots: Sequence[ValidationSnapshot],
    claim_events: Sequence[ClaimEvent] = (),
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for e in events:
        who = e.actor.get_username() if e.actor else e.actor_kind
        items.append({"at": e.at, "kind": "status", "event": e, "who": who})
    for c in claim_events:
        who = c.actor.get_username() if c.actor else c.actor_kind
        items.append({"at": c.at, "kind": "claim", "claim": c, "who": who})
    for f in feedback:
        items.append({"at": f.created_at, "kind": f.action, "feedback": f})
        if f.undone_at is not None:
            items.append({"at": f.undone_at, "kind": "undone", "undone": f})
    for r in runs:
        items.append({"at": r.started_at, "kind": "run", "run": r})
    for s in snapshots:
        items.append({"at": s.created_at, "kind": s.kind, "snapshot": s})
    items.sort(key=lambda item: item["at"])
    return items


@login_required
@require_GET
def task_detail(request: HttpRequest, task_id: int) -> HttpResponse:
    context = detail_context(request, task_id)
    if is_staff_role(request.user):
        # The team page's time per item counts from a reviewer's first view of the
        # attempt; a requester looking at their own task is not review work.
        services.review_visit_record(task=context["task"], reviewer=request.user)
    return render_page(request, "tasks_app/task_detail.html", context)


# --- Lazy sections -------------------------------------------------------------------------

TEXT_SECTIONS = {"request": "request", "rules": "rules", "answer": "final_answer"}


@login_required
@require_GET
def task_section(request: HttpRequest, task_id: int, section: str) -> HttpResponse:
    """One big text column of the task, or the tool results after the first
    ``EVIDENCE_INLINE_ITEMS`` of the evidence list, loaded on demand."""
    if section == "evidence":
        return _evidence_rest(request, task_id)
    field = TEXT_SECTIONS.get(section)
    if field is None:
        raise Http404("No such section")
    task = visible_task(request, task_id)
    text = Task.objects.filter(pk=task.pk).values_list(field, flat=True).get()
    return render_fragment(
        request, "tasks_app/_text_block.html", {"text": text, "block_id": f"{section}-{task.pk}"}
    )


def _evidence_rest(request: HttpRequest, task_id: int) -> HttpResponse:
    task = visible_task(request, task_id)
    items = list(
        ToolEvidence.objects.filter(task=task)
        .without_content()
        .annotate(size=F("content_chars"))
        .order_by("attempt_index", "run_id", "sequence")[EVIDENCE_INLINE_ITEMS:]
    )
    return render_fragment(
        request,
        "tasks_app/_evidence_items.html",
        {"items": items, "task": task, "evidence_labels": evidence_labels_for_task(task.pk)},
    )


def _require_staff_for_internals(request: HttpRequest) -> None:
    """Validator input, raw responses and transcripts are operator material: requesters
    get the answer and the verdict in words (issue 13). Checked after visibility, so a
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
    """The rendered validator input, its system prompt or the raw responses (U2)."""
    if section == "input":
        snap = _visible_snapshot(request, task_id, snapshot_id, "rendered_input")
        return render_fragment(
            request,
            "tasks_app/_viewer.html",
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
            "tasks_app/_viewer.html",
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
            request, "tasks_app/_raw_responses.html", {"raw": snap.raw_responses, "snapshot": snap}
        )
    raise Http404("No such section")


@login_required
@require_GET
def snapshot_download(request: HttpRequest, task_id: int, snapshot_id: int) -> HttpResponse:
    """The validator input exactly as sent, as a text file (U2)."""
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
    """Full content of one tool result, loaded when the reviewer opens it (U2). With
    ``?start=&end=`` (a citation chip, issue 26) those characters are marked."""
    task = visible_task(request, task_id)
    item = get_object_or_404(ToolEvidence, pk=evidence_id, task=task)
    context: dict[str, Any] = {"item": item, "marked": marked_span(request.GET, item.content)}
    if context["marked"]:
        context["label"] = evidence_labels_for_task(task.pk).get(item.pk, "")
        context["claim_id"] = request.GET.get("claim", "")
    return render_fragment(request, "tasks_app/_evidence_content.html", context)


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
    surrounding text (issue 12). Reads excerpts, never a whole tool result."""
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
        "tasks_app/_claim_evidence.html",
        {
            "task": task,
            "claim": shown,
            "excerpts": citation_excerpts(task.pk, shown["citations"]),
        },
    )


@login_required
@require_GET
def run_transcript(request: HttpRequest, task_id: int, run_id: int) -> HttpResponse:
    task = visible_task(request, task_id)
    _require_staff_for_internals(request)
    run = get_object_or_404(Run, pk=run_id, task=task)
    transcript = list(RunMessage.objects.filter(run=run).order_by("index").defer("payload"))
    return render_fragment(
        request, "tasks_app/_transcript.html", {"run": run, "transcript": transcript}
    )


# --- Live progress ---------------------------------------------------------------------------


@login_required
@require_GET
def task_progress(request: HttpRequest, task_id: int) -> HttpResponse:
    """Polled while an attempt is queued or running (U4). When the task changed status
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
        "tasks_app/_progress.html",
        {"task": task, "progress_runs": runs, "progress_calls": calls, "polling": is_polling(task)},
    )


# --- Actions ---------------------------------------------------------------------------------


def _refusal_status(exc: DomainError) -> int:
    return exc.http_status if exc.http_status in (409, 422) else 409


@login_required
@require_POST
def task_feedback(request: HtmxHttpRequest, task_id: int) -> HttpResponse:
    """satisfied / revise / abandon (U3). The form carries the task version the person
    saw; a task that changed since is refused with a message and nothing is applied."""
    task = visible_task(request, task_id)
    if not can_act(request.user, task):
        raise PermissionDenied("Only the requester or a reviewer can decide on this task.")
    form = FeedbackForm(request.POST)
    status = 200
    next_id: int | None = None
    query = ""
    if not form.is_valid() and _refused_comment_in_page(form):
        # The person stays in the form: the text, the focus and the error beside the field,
        # never a banner that closes the form (typed text would then become shortcuts).
        # The queue filters the form carried, so complete-and-next keeps them.
        queue_params = QueryDict(form.data.get("filters", ""))
        context = detail_context(request, task.pk, queue_params=queue_params)
        context.update(
            revise_error=form.errors["comment"][0], revise_comment=form.data.get("comment", "")
        )
        return render_page(request, "tasks_app/task_detail.html", context, status=422)
    if not form.is_valid():
        messages.error(request, _form_refusal(form))
        status = 422
        return_to = request.POST.get("return_to", "")
    else:
        data = form.cleaned_data
        return_to = data["return_to"]
        if return_to == "next" and is_staff_role(request.user):
            # Neighbours are read before the decision moves this task out of the queue.
            filters, query = queue_filters(QueryDict(data["filters"]))
            position = queue_position(request.user, filters, task.pk)
            if position["position"]:
                next_id = position["after_decision_id"]
            else:
                return_to = ""  # not a queue item: stay on its page
        try:
            # Claim verdicts go with the decision, in its transaction (a refused label
            # refuses the decision: nothing half written).
            snapshot_id, labels = claim_labels_from_post(request.POST)
            decision = task_decide_with_claim_labels(
                task_id=task.pk,
                actor=request.user,
                action=data["action"],
                comment=data["comment"],
                expected_version=data["version"],
                labels=labels,
                snapshot_id=snapshot_id,
            )
        except DomainError as exc:
            messages.error(request, f"Not applied: {exc.message}")
            status = _refusal_status(exc)
        else:
            _decision_message(request, decision)
    return _after_action(
        request, task.pk, return_to=return_to, status=status, next_id=next_id, query=query
    )


def _decision_message(request: HttpRequest, decision: Feedback) -> None:
    task = decision.task
    label = decision.get_action_display().lower()
    if decision.is_pending:
        # The undo toast beside this message names the decision and counts down.
        messages.info(request, f"#{task.pk} {task.title}: {label}, applying in a moment.")
        return
    target = TaskStatus(services.FEEDBACK_TARGETS[FeedbackAction(decision.action)])
    messages.success(request, f"#{task.pk} {task.title}: {label} → {target.label}.")


@login_required
@require_POST
def decision_undo(request: HtmxHttpRequest, task_id: int, feedback_id: int) -> HttpResponse:
    """Undo a decision inside its window (issue 26): the task is as it was, and the
    timeline says who undid it. Too late, or someone else's: refused with the reason."""
    task = visible_task(request, task_id)
    status = 200
    try:
        undone = services.decision_undo(
            feedback_id=feedback_id, task_id=task.pk, actor=request.user
        )
    except Feedback.DoesNotExist:
        raise Http404("No such decision on this task.") from None
    except Forbidden as exc:
        raise PermissionDenied(exc.message) from None
    except DomainError as exc:
        messages.error(request, f"Not undone: {exc.message}")
        status = _refusal_status(exc)
    else:
        messages.success(
            request,
            f"Undone: your {undone.get_action_display().lower()} decision on #{task.pk} "
            "was not applied.",
        )
    if request.htmx:
        return render_page(
            request, "tasks_app/task_detail.html", detail_context(request, task.pk), status=status
        )
    return redirect("task_detail", task_id=task.pk)


def _form_refusal(form: FeedbackForm) -> str:
    if set(form.errors) == {"comment"}:
        return f"Not applied: {form.errors['comment'][0]}"
    return "The action was not understood: " + "; ".join(
        f"{k}: {' '.join(map(str, v))}" for k, v in form.errors.items()
    )


def _refused_comment_in_page(form: FeedbackForm) -> bool:
    """A revision refused only for its comment, sent from the task page (the queue's
    inline form checks the comment itself and re-renders the list)."""
    return set(form.errors) == {"comment"} and form.data.get("return_to") != "queue"


def _after_action(
    request: HtmxHttpRequest,
    task_id: int,
    *,
    return_to: str,
    status: int,
    next_id: int | None = None,
    query: str = "",
) -> HttpResponse:
    ok = status == 200
    if return_to == "queue" and is_staff_role(request.user):
        filters = QueryDict(request.POST.get("filters", ""))
        if request.htmx:
            return queue_response(request, filters, fragment="queue_list", status=status)
        return redirect(reverse("review_queue") + ("?" + filters.urlencode() if filters else ""))
    if ok and return_to == "next" and is_staff_role(request.user):
        # Complete-and-next (issue 13): the next task of the same filtered queue, or the
        # queue itself when this was the last one.
        suffix = f"?{query}" if query else ""
        if next_id is not None:
            path = reverse("task_detail", args=[next_id]) + suffix
        else:
            path = reverse("review_queue") + suffix
        if request.htmx:
            response = HttpResponse(status=200)
            response["HX-Location"] = json.dumps({"path": path, "target": "#main"})
            return response
        return redirect(path)
    if request.htmx:
        return render_page(
            request, "tasks_app/task_detail.html", detail_context(request, task_id), status=status
        )
    return redirect("task_detail", task_id=task_id)


@login_required
@require_POST
def task_claim(request: HtmxHttpRequest, task_id: int) -> HttpResponse:
    """Claim or release a task for review (U3); a claim held by someone else is refused
    unless the reviewer explicitly takes it over."""
    task = visible_task(request, task_id)
    if not is_reviewer(request.user):
        raise PermissionDenied("Only reviewers claim tasks.")
    op = request.POST.get("op", "claim")
    force = request.POST.get("force") == "1"
    status = 200
    try:
        if op == "release":
            services.task_release_claim(task_id=task.pk, reviewer=request.user, force=force)
            messages.info(request, f"Released #{task.pk}.")
        else:
            services.task_claim(task_id=task.pk, reviewer=request.user, force=force)
            messages.success(request, f"You {'took over' if force else 'claimed'} #{task.pk}.")
    except DomainError as exc:
        messages.error(request, f"Not applied: {exc.message}")
        status = _refusal_status(exc)
    return _after_action(request, task.pk, return_to="", status=status)


@login_required
@require_POST
def task_note(request: HtmxHttpRequest, task_id: int) -> HttpResponse:
    task = visible_task(request, task_id)
    if not can_act(request.user, task):
        raise PermissionDenied("Only the requester or a reviewer can add notes.")
    form = NoteForm(request.POST)
    status = 200
    if form.is_valid():
        try:
            services.task_add_note(
                task_id=task.pk, actor=request.user, comment=form.cleaned_data["comment"]
            )
            messages.success(request, "Note added.")
        except DomainError as exc:
            messages.error(request, exc.message)
            status = _refusal_status(exc)
    else:
        messages.error(request, "A note must not be empty.")
        status = 422
    return _after_action(request, task.pk, return_to="", status=status)
