"""The audit stream's pages: the open audits, oldest first, and the blind audit page,
where a person judges an answer against the request and the evidence and only then sees
what the validator decided. Nothing on these pages before the judgement says what the
validator decided (no verdict, score, claim marks, reason, task status or events)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods

from evidence_app.models import Audit, AuditState, VerdictRoute
from evidence_app.review import audit_page, task_page
from evidence_app.review.forms import AuditJudgeForm
from evidence_app.trust.audits import audit_judge, audit_mark_viewed
from evidence_app.trust.blinding import audit_exposure, audit_refusal
from project.errors import DomainError, Forbidden
from project.pagination import CountedPaginator
from project.roles import is_reviewer
from project.views import render_fragment, render_page, reviewer_required

AUDITS_PAGE_SIZE = 50


@reviewer_required
@require_GET
def audit_queue(request: HttpRequest) -> HttpResponse:
    """The open audits this person may judge, oldest first: audit id, attempt and age
    only (blind: no task title or id); then the audits they judged, with their task."""
    count = audit_page.open_audit_count(request.user)
    page = CountedPaginator(
        audit_page.audits(request.user), AUDITS_PAGE_SIZE, count=count
    ).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "audits": page.object_list,
        "judged": audit_page.judged_by(request.user),
        "now": timezone.now(),
    }
    return render_page(request, "evidence_app/audit_queue.html", context)


@reviewer_required
@require_http_methods(["GET", "POST"])
def audit_detail(request: HttpRequest, audit_id: int) -> HttpResponse:
    found = audit_page.audit(audit_id)
    claims = audit_page.audited_claims(found)
    if request.method == "POST":
        if not is_reviewer(request.user):
            raise PermissionDenied("Only reviewers judge audits.")
        form = AuditJudgeForm(request.POST, claims=claims)
        if form.is_valid():
            try:
                audit_judge(
                    found.pk,
                    user=request.user,
                    correct=form.cleaned_data["correct"] == "correct",
                    comment=form.cleaned_data["comment"],
                    claim_labels=form.claim_labels(),
                )
            except Forbidden as exc:
                raise PermissionDenied(exc.message) from None
            except DomainError as exc:
                messages.error(request, f"Not recorded: {exc.message}")
            return redirect("audit_detail", audit_id=found.pk)
        return render_page(
            request,
            "evidence_app/audit_detail.html",
            _context(request, found, claims, form),
            status=422,
        )
    if found.state == AuditState.OPEN:
        audit_mark_viewed(audit_id=found.pk, user=request.user)
    return render_page(
        request,
        "evidence_app/audit_detail.html",
        _context(request, found, claims, AuditJudgeForm(claims=claims)),
    )


@reviewer_required
@require_GET
def audit_section(request: HttpRequest, audit_id: int, section: str) -> HttpResponse:
    """The audited task's request or rules in full, by the audit's id: the blind page
    never names the task (its own URLs would)."""
    found = audit_page.audit(audit_id)
    text = audit_page.audited_text(found, section)
    return render_fragment(
        request, "evidence_app/_text_block.html", {"text": text, "block_id": f"audit-{section}"}
    )


@reviewer_required
@require_GET
def audit_evidence(request: HttpRequest, audit_id: int, evidence_id: int) -> HttpResponse:
    """One tool result of the audited attempt in full, by the audit's id."""
    found = audit_page.audit(audit_id)
    item = audit_page.audited_evidence_item(found, evidence_id)
    return render_fragment(
        request, "evidence_app/_evidence_content.html", {"item": item, "marked": None}
    )


def _context(
    request: HttpRequest, found: Audit, claims: list[dict[str, Any]], form: AuditJudgeForm
) -> dict[str, Any]:
    limit = settings.UI_LAZY_SECTION_CHARS
    judged = found.state == AuditState.DONE
    user = request.user
    refusal = None if judged else audit_refusal(found, user)
    exposure = None if judged else audit_exposure(found, user)
    return {
        "audit": found,
        # Request and rules as heads with their lengths (the task page's lazy sections),
        # read without reporting a view of the task: the page shows neither its title,
        # its id nor its status.
        "task": task_page.task(user, found.task_id, limit=limit),
        "lazy_limit": limit,
        "answer": audit_page.audited_answer(found),
        "claims": claims,
        **audit_page.audited_evidence(found),
        "blind_audit_id": found.pk,
        "form": form,
        "can_judge": is_reviewer(user) and not judged and refusal is None,
        "refusal": refusal,
        "exposure": exposure,
        "judged": judged,
        "reveal": _reveal(found) if judged else None,
    }


def _reveal(found: Audit) -> dict[str, Any]:
    """The person's call beside the validator's, in words."""
    accepted = found.route == VerdictRoute.AUTO_ACCEPTED
    validator = "accepted it" if accepted else "rejected it"
    if found.false_verdict:
        outcome = "a false accept" if accepted else "a false reject"
    else:
        outcome = "you agree"
    return {
        "person": "correct" if found.correct else "not correct",
        "validator": validator,
        "verdict": found.snapshot.get_status_display(),
        "outcome": outcome,
        "false_verdict": found.false_verdict,
    }
