"""The operator page of the certified false-accept and false-reject rates, measured on
the blind audits (see evidence_app.trust.rates), and of auto-accept at a certified risk:
each judge's threshold, its curve and guarantee (see evidence_app.autoaccept.overview);
the shadow, approve and stop controls are auto-accept's own (evidence_app.autoaccept.views)."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from evidence_app.autoaccept.overview import WINDOW_DAYS, autoaccept_overview
from evidence_app.autoaccept.standing import standing
from evidence_app.operator.forms import TrustQueryForm
from evidence_app.trust.rates import trust_report
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
