"""The task page's context: the task with its verdicts (and a second judge's beside
the first), evidence, claims, people, revisions and timeline, composed from what
``task_page`` reads; permission checks stay in the views."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.db.models.functions import Length
from django.http import HttpRequest, QueryDict

from evidence_app.models import SnapshotKind, ValidationSnapshot
from evidence_app.review import lists, task_page, trace_tree
from evidence_app.review.forms import NoteForm
from evidence_app.review.queue_selectors import queue_filters, queue_position, reviewer_choices
from evidence_app.trust.blinding import audit_exposures_record
from evidence_app.validation.claims import review_reason, shown_claims, shown_counts
from evidence_app.validation.routing import disagreement_reason, judges_disagree
from evidence_app.validation.selectors import answer_segments, evidence_labels_of, task_cost_of
from project.diffs import diff_lines
from project.roles import is_operator, is_reviewer, is_staff_role
from tasks_app import records
from tasks_app.records import (
    ClaimEvent,
    Feedback,
    FeedbackAction,
    Run,
    RunKind,
    Task,
    TaskEvent,
    can_act,
)

POLLING_STATUSES = records.EXECUTION_ACTIVE_STATUSES | records.RUNNABLE_STATUSES


# The detail page lists this many tool results; the rest load on request (a 500-result
# list alone would be ~250 KB of HTML and most of the page's render time).
EVIDENCE_INLINE_ITEMS = 50


def is_polling(task: Task) -> bool:
    """A task whose attempt is queued or running: its page polls for progress."""
    return task.status in POLLING_STATUSES


def detail_context(
    request: HttpRequest, task_id: int, *, queue_params: QueryDict | None = None
) -> dict[str, Any]:
    """Everything the detail page shows, in a bounded number of queries whatever the
    size of the task: big text columns come as a head + length, and a section over
    ``UI_LAZY_SECTION_CHARS`` is left to a lazy fragment."""
    limit = settings.UI_LAZY_SECTION_CHARS
    user = request.user
    task = task_page.task(user, task_id, limit=limit)
    # The page shows the verdict, route and status: its open audits are not blind for
    # this reader any more.
    audit_exposures_record(user=user, task_ids=[task.pk], channel=f"GET {request.path}")
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
        # The trace tree's top levels; runs and their steps are staff material.
        "trace": trace_tree.attempts(runs) if is_staff_role(user) else [],
        # Stored per request when it was made; summed here, never re-priced.
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
            second=second,
        )
    return {
        "verdict": result,
        "claim_view": claim_view,
        # The verdict on screen belongs to the current answer only once that attempt has
        # been validated; during a revision it is the previous answer's.
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
    # The statuses in words, as the verdict badges say them.
    return disagreement_reason(
        latest.model_name,
        latest.get_status_display().lower(),
        second.model_name,
        second.get_status_display().lower(),
    )


def _evidence_context(task: Task, runs: Sequence[Run]) -> dict[str, Any]:
    """The Evidence list's first page (``EVIDENCE_INLINE_ITEMS`` tool results); the
    totals come from the runs' counts, so an attempt with 20,000 results reads a page of
    rows here and the list pages on from there."""
    page, labels = lists.evidence_page(task, runs, offset=0, size=EVIDENCE_INLINE_ITEMS)
    return {
        "evidence_labels": labels,
        "evidence_count": page.total,
        "evidence_page": page,
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
        # A decision in its undo window: the panel shows it instead of the forms.
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
    """The person's revise comment beside the answer it asked for:
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
    bounded by ``max_attempts``; revisions people ask for are not."""
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


def _stored_claims(snapshot: ValidationSnapshot | None) -> list[dict[str, Any]]:
    result = snapshot.result if snapshot and isinstance(snapshot.result, dict) else {}
    return shown_claims([c for c in result.get("claims") or [] if isinstance(c, dict)])


def _second_marks(claims: list[dict[str, Any]], second: ValidationSnapshot) -> dict[str, Any]:
    """The second judge's mark on each of the first judge's claims (``second`` on each
    claim: the state, "" when it made no such claim), matched by id, else by the same
    text; its claims the first judge did not make; its counts."""
    theirs = _stored_claims(second)
    by_id = {c["id"]: c for c in theirs if c["id"]}
    by_text = {" ".join(str(c.get("text", "")).split()).lower(): c for c in theirs}
    matched: set[int] = set()
    for claim in claims:
        text = " ".join(str(claim.get("text", "")).split()).lower()
        other = by_id.get(claim["id"]) if claim["id"] else None
        if other is None or id(other) in matched:
            other = by_text.get(text)
        if other is not None and id(other) not in matched:
            matched.add(id(other))
            claim["second"] = other["shown"]
        else:
            claim["second"] = ""
    return {
        "model": second.model_name,
        "counts": shown_counts(theirs),
        "only": [c for c in theirs if id(c) not in matched],
    }


def _claim_view(
    snapshot: ValidationSnapshot,
    *,
    answer: str,
    complete: bool,
    second: ValidationSnapshot | None = None,
) -> dict[str, Any] | None:
    """The claim view of a verdict, or None for a verdict without claims; with a second
    judge's verdict, its mark beside each claim (``_second_marks``)."""
    result = snapshot.result if isinstance(snapshot.result, dict) else {}
    claims = _stored_claims(snapshot)
    if not claims:
        return None
    return {
        "second": _second_marks(claims, second) if second is not None else None,
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
