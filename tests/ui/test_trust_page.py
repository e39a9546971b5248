"""Issue 27, item 2: the operator page of the certified false-accept rate (/ops/trust/)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from tests.evidence_app.trust_helpers import verdicts

pytestmark = pytest.mark.django_db


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_trust_page_shows_estimate_interval_audits_and_the_way_to_the_target(
    client: Any, operator: Any
) -> None:
    """Issue 27, item 2: per group the eligible verdicts, audits judged and outstanding,
    the estimate with its exact interval, the method, and how many more audits bring the
    upper bound under the target; a bound already under says certified."""
    verdicts(1000, probability=0.1, audits=[True] * 100 + [None] * 4)
    verdicts(20, probability=1.0, route="auto_rejected", audits=[True] * 2 + [False] * 18)
    client.force_login(operator)
    response = client.get(reverse("ops_trust"))
    assert response.status_code == 200
    page = text_of(response.content.decode())
    # 0 wrong of 100 judged: [0 %, 3.62 %]; 183 judged needed for 2 %: 83 more, 830 verdicts.
    assert "False accepts 1,000 100 0.00 % 0.00 % – 3.62 % exact" in page
    # Issue 43: outstanding audits without their route.
    assert "Outstanding: 4 audits drawn and not yet judged" in page
    assert "83 more audits (≈ 830 verdicts at the audit rate 10.00 %)" in page
    assert "False rejects 20 20 (2 wrong) 10.00 %" in page
    assert "not reachable at the observed rate (target 2.00 %)" in page
    assert "Clopper–Pearson" in page and "Bonferroni" in page
    assert "Per week" in page

    certified = text_of(client.get(reverse("ops_trust"), {"target": "0.05"}).content.decode())
    assert "upper bound under 5.00 %: certified" in certified

    daily = text_of(client.get(reverse("ops_trust"), {"period": "day"}).content.decode())
    assert "Per day" in daily and "· false accepts" in daily


def test_trust_page_refuses_a_bad_target_with_a_clear_error(client: Any, operator: Any) -> None:
    """Issue 27, item 2: a target that is not a share between 0 and 1 is a 422 with the
    field's error; the figures are shown against the default target."""
    verdicts(10, probability=1.0, audits=[True] * 10)
    client.force_login(operator)
    response = client.get(reverse("ops_trust"), {"target": "5"})
    assert response.status_code == 422
    page = response.content.decode()
    assert 'aria-invalid="true"' in page and "Showing the default target." in page
    assert "bring the upper bound under the target of 2.00 %" in text_of(page)


def test_trust_page_is_for_operators_and_empty_without_eligible_verdicts(
    client: Any, operator: Any, reviewer: Any
) -> None:
    """Issue 27, item 2: a reviewer gets 403; with no eligible verdict the page says how
    to start the audit stream; the operator menu links the page."""
    client.force_login(reviewer)
    assert client.get(reverse("ops_trust")).status_code == 403
    client.force_login(operator)
    page = client.get(reverse("ops_trust")).content.decode()
    assert "set AUDIT_RATE to start the audit stream" in page
    assert f'href="{reverse("ops_trust")}"' in client.get(reverse("ops_agreement")).content.decode()


def test_trust_page_says_what_audits_found_in_plain_words_before_the_tables(
    client: Any, operator: Any
) -> None:
    """Issue 39 item 5, reworded by issue 47 item 1: per judge the audited rate is said in
    a sentence ("not shown yet: N more judged audits", or "under the target: at most X %
    … wrong") that names the answers it counts, before any table."""
    verdicts(1000, probability=0.1, audits=[True] * 100 + [None] * 4)
    client.force_login(operator)
    html = client.get(reverse("ops_trust")).content.decode()
    audited = re.search(r'<section[^>]*id="trust-audited".*?</section>', html, re.S).group(0)
    assert audited.index('class="trust-line"') < audited.index("<table")
    summary = text_of(audited)
    assert "Of the 1,000 accepted answers it sent without a person in the last 30 days" in summary
    assert "not shown yet 83 more judged audits (about 830 verdicts" in summary
    assert "under 2.00 %" in summary
    certified = client.get(reverse("ops_trust"), {"target": "5 %"}).content.decode()
    summary = text_of(
        re.search(r'<section[^>]*id="trust-audited".*?</section>', certified, re.S).group(0)
    )
    assert "under the target at most 3.62 % are wrong" in summary
    assert "from 100 judged audits" in summary and "target of 5.00 %" in summary


@pytest.mark.parametrize(
    ("typed", "error"),
    [
        (
            "2",
            "2 would be 200 %: write the target as a share (0.02 for 2 %) or as a "
            "percentage with its sign (2 %).",
        ),
        ("two", "“two” is not a rate"),
        ("0", "A target rate lies between 0.01 % and 99.99 %"),
    ],
)
def test_a_target_typed_as_a_bare_percentage_gets_an_error_that_says_how_to_write_it(
    client: Any, operator: Any, typed: str, error: str
) -> None:
    """Issue 39 item 5: a target typed as 2 (meaning 2 %) is refused with both ways to
    write it, not "less than or equal to 0.9999"; "2 %" and "0.02" are the same target."""
    client.force_login(operator)
    response = client.get(reverse("ops_trust"), {"target": typed})
    assert response.status_code == 422
    page = text_of(response.content.decode())
    assert error in page and "0.9999" not in page.replace("(0.0001 to 0.9999)", "")
    for same in ("2 %", "2%", "0.02"):
        ok = client.get(reverse("ops_trust"), {"target": same})
        assert ok.status_code == 200 and ok.context["target_value"] == pytest.approx(0.02)
