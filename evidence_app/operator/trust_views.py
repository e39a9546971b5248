"""The operator page of the certified false-accept and false-reject rates, measured on
the blind audits (see evidence_app.trust.rates), and of auto-accept at a certified risk:
each judge's threshold, its curve and guarantee, and the shadow and approve controls
(see evidence_app.trust.autoaccept_overview)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from evidence_app.models import AutoAcceptThreshold
from evidence_app.operator.forms import TrustQueryForm
from evidence_app.trust.autoaccept_overview import WINDOW_DAYS, autoaccept_overview
from evidence_app.trust.rates import trust_report
from evidence_app.trust.standing import standing
from evidence_app.trust.threshold_services import (
    threshold_approve,
    threshold_shadow_start,
    threshold_stop,
)
from project.errors import DomainError
from project.views import operator_required, render_page


@operator_required
@require_GET
def ops_trust(request: HttpRequest) -> HttpResponse:
    form = TrustQueryForm(request.GET or None)
    period, target = "week", None
    if form.is_bound and form.is_valid():
        period = form.cleaned_data["period"] or period
        target = form.cleaned_data["target"]
    report = trust_report(period=period, target=target)
    return render_page(
        request,
        "evidence_app/ops_trust.html",
        {
            "report": report,
            "form": form,
            "target_value": target if target is not None else settings.TRUST_TARGET_FALSE_ACCEPT,
            "standings": standing(autoaccept_overview()),
            "window_days": WINDOW_DAYS,
            "uncovered_count": sum(u.count for u in report.uncovered),
            "shadow_hours": settings.AUTOACCEPT_SHADOW_HOURS,
            "uncertified_to_a_person": settings.AUTOACCEPT_UNCERTIFIED == "certified-only",
        },
        status=422 if form.is_bound and not form.is_valid() else 200,
    )


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
