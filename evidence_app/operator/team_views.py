"""The review team's page for operators: decisions per reviewer, time per item, the
review queue's age and the audits waiting for a person."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from evidence_app.trust.team import DEFAULT_PERIOD, PERIODS, team_figures
from project.views import operator_required, render_page

PERIOD_LABELS = {"day": "last 24 hours", "week": "last 7 days", "month": "last 30 days"}


@operator_required
@require_GET
def ops_team(request: HttpRequest) -> HttpResponse:
    period = request.GET.get("period", DEFAULT_PERIOD)
    if period not in PERIODS:
        period = DEFAULT_PERIOD
    team = team_figures(period)
    return render_page(
        request,
        "evidence_app/ops_team.html",
        {
            "team": team,
            "time_rows": [
                ("decisions", team.decision_time),
                ("audits", team.audit_time),
                ("all items", team.item_time),
            ],
            "period": period,
            "period_label": PERIOD_LABELS[period],
            "periods": list(PERIOD_LABELS.items()),
        },
    )
