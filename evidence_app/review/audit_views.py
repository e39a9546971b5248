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
from project.errors import DomainError
from project.pagination import CountedPaginator
from project.roles import is_reviewer
from project.views import render_page, reviewer_required

AUDITS_PAGE_SIZE = 50


@reviewer_required
@require_GET
def audit_queue(request: HttpRequest) -> HttpResponse:
    """Open audits, oldest first: task title, attempt and age only (blind)."""
    count = audit_page.open_audit_count()
    page = CountedPaginator(audit_page.audits(), AUDITS_PAGE_SIZE, count=count).get_page(
        request.GET.get("page")
    )
    context = {"page": page, "audits": page.object_list, "now": timezone.now()}
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
        audit_mark_viewed(audit_id=found.pk)
    return render_page(
        request,
        "evidence_app/audit_detail.html",
        _context(request, found, claims, AuditJudgeForm(claims=claims)),
    )


def _context(
    request: HttpRequest, found: Audit, claims: list[dict[str, Any]], form: AuditJudgeForm
) -> dict[str, Any]:
    limit = settings.UI_LAZY_SECTION_CHARS
    judged = found.state == AuditState.DONE
    return {
        "audit": found,
        # Request and rules as heads with their lengths (the task page's lazy sections).
        "task": task_page.task(request.user, found.task_id, limit=limit),
        "lazy_limit": limit,
        "answer": audit_page.audited_answer(found),
        "claims": claims,
        **audit_page.audited_evidence(found),
        "form": form,
        "can_judge": is_reviewer(request.user) and not judged,
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
