"""Issue 27, item 2: GET /trust, the certified rates over the API (operators only)."""

from __future__ import annotations

import pytest
from django.test import Client

from evidence_app.trust.stats import clopper_pearson
from tests.evidence_app.trust_helpers import MODEL, TEMPLATE, verdicts

pytestmark = pytest.mark.django_db


def test_trust_reports_the_rate_interval_and_audits_needed(otto: Client) -> None:
    """Issue 27, item 2: one group with its last-30-days figures (estimate, exact 95 %
    interval, audits judged and outstanding, audits needed for the target) and rows per
    period."""
    verdicts(200, probability=0.25, audits=[False] + [True] * 49 + [None] * 3)
    verdicts(10, probability=1.0, route="auto_rejected", audits=[True] + [False] * 9)

    response = otto.get("/api/v1/trust", {"period": "day", "target": "0.05"})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["period"] == "day" and body["target"] == 0.05 and body["window_days"] == 30
    assert body["count"] == 1
    group = body["items"][0]
    assert (group["template_version"], group["model_name"]) == (TEMPLATE, MODEL)
    accepts = group["window"]["false_accepts"]
    exact = clopper_pearson(1, 50)
    assert accepts["eligible"] == 200
    assert (accepts["judged"], accepts["wrong"]) == (50, 1)
    # Issue 43: outstanding audits without their route, for the period as a whole.
    assert "outstanding" not in accepts and group["window"]["outstanding"] == 3
    assert accepts["method"] == "exact" and accepts["audit_rate"] == 0.25
    assert accepts["interval"] == pytest.approx(
        {"estimate": 0.02, "low": exact.low, "high": exact.high}
    )
    assert accepts["ppi"] is None and accepts["certified"] is False
    assert accepts["audits_needed"] > 0
    assert accepts["verdicts_needed"] == accepts["audits_needed"] * 4
    rejects = group["window"]["false_rejects"]
    assert (rejects["judged"], rejects["wrong"]) == (10, 1)
    assert rejects["audits_needed"] is None  # 10 % observed, 5 % target: not reachable
    (today,) = group["periods"]
    assert today["start"] is not None and today["false_accepts"]["eligible"] == 200


def test_trust_is_for_operators_and_checks_its_parameters(otto: Client, rita: Client) -> None:
    """Issue 27, item 2: a reviewer gets 403; an unknown period or a target outside
    (0, 1) is a 422 naming the field."""
    assert rita.get("/api/v1/trust").status_code == 403
    assert otto.get("/api/v1/trust").json()["items"] == []
    for query, field in (({"period": "year"}, "period"), ({"target": "1.5"}, "target")):
        response = otto.get("/api/v1/trust", query)
        assert response.status_code == 422
        assert response.json()["errors"][0]["field"] == field


@pytest.mark.parametrize("target", ["NaN", "nan", "inf", "-inf"])
def test_a_target_that_is_not_a_finite_number_is_a_422_saying_so(otto: Client, target: str) -> None:
    """Issue 43, item 4: ``target=NaN`` was refused as "less than 1"; it is not a number."""
    response = otto.get("/api/v1/trust", {"target": target})
    assert response.status_code == 422
    assert response.json()["errors"] == [
        {"field": "target", "message": "Input should be a finite number"}
    ]


@pytest.mark.parametrize("path", ["/api/v1/trust", "/api/v1/team"])
@pytest.mark.parametrize("query", [{"target": "5"}, {"period": "year"}, {"target": "NaN"}])
def test_the_role_is_refused_before_the_parameters_are_read(
    rita: Client, path: str, query: dict[str, str]
) -> None:
    """Issue 43, item 4: a reviewer's bad parameters are answered 403 (the role), not 422:
    the parameters of an operation they may not use are none of their business."""
    response = rita.get(path, query)
    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"


def test_an_operators_bad_period_is_still_a_422_naming_the_field(otto: Client) -> None:
    """Issue 43, item 4: the parameters read after the role are checked as before."""
    for path in ("/api/v1/trust", "/api/v1/team"):
        response = otto.get(path, {"period": "year"})
        assert response.status_code == 422
        assert response.json()["errors"][0]["field"] == "period"
