"""Auto-accept's controls on the Trust page (``ops_trust``, evidence_app.operator): an
operator starts a proposed threshold's shadow, approves it, or stops an approved one."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from evidence_app.autoaccept.services import (
    threshold_approve,
    threshold_shadow_start,
    threshold_stop,
)
from evidence_app.models import AutoAcceptThreshold
from project.errors import DomainError
from project.views import operator_required


@operator_required
@require_POST
def ops_threshold(request: HttpRequest, threshold_id: int) -> HttpResponse:
    """Start a proposed threshold's shadow (``op=shadow``), approve one whose shadow ran
    its course (``op=approve``) or stop an approved one's auto-accept with a reason
    (``op=stop``); refused, with nothing changed, otherwise."""
    op = request.POST.get("op")
    try:
        if op == "shadow":
            row = threshold_shadow_start(threshold_id=threshold_id, user=request.user)
            messages.success(
                request,
                f"Threshold {row.threshold:.2f} runs in shadow: it moves no task; the page "
                "shows what it would have done.",
            )
        elif op == "approve":
            row = threshold_approve(threshold_id=threshold_id, user=request.user)
            messages.success(
                request,
                f"Threshold {row.threshold:.2f} approved: accepted verdicts of this judge "
                "scoring below it now go to a person.",
            )
        elif op == "stop":
            threshold_stop(
                threshold_id=threshold_id,
                user=request.user,
                reason=request.POST.get("reason", "")[:2000],
            )
            messages.success(
                request,
                "Auto-accept stopped: every accepted verdict of this judge goes to a person "
                "until a new threshold is approved.",
            )
        else:
            messages.error(request, "Nothing changed: choose shadow, approve or stop.")
    except AutoAcceptThreshold.DoesNotExist:
        messages.error(request, f"Nothing changed: threshold {threshold_id} does not exist.")
    except DomainError as exc:
        messages.error(request, f"Nothing changed: {exc.message}")
    return redirect("ops_trust")
