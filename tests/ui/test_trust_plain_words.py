"""Issue 47, item 1: Trust says first, per judge, one sentence a team lead can repeat,
then its state, then the next step, then the figures; the methods are folded away; each
figure counts the answers its sentence names, and no state contradicts another."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from evidence_app.models import AutoAcceptThreshold, ThresholdState, ValidationSnapshot
from evidence_app.validator.templates import get_template
from tests.evidence_app.trust_helpers import verdicts
from tests.evidence_app.validation_helpers import JUDGE
from tests.factories import TaskFactory

pytestmark = pytest.mark.django_db

CURVE = [
    {"threshold": 1.0, "accepted": 100, "coverage": 0.5, "risk": 0.0, "upper": 0.029},
    {"threshold": 0.95, "accepted": 170, "coverage": 0.8095, "risk": 0.0, "upper": 0.0175},
    {"threshold": 0.9, "accepted": 210, "coverage": 1.0, "risk": 0.038, "upper": 0.0677},
]


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip()


def threshold(**fields: Any) -> AutoAcceptThreshold:
    values: dict[str, Any] = {
        "template_version": get_template("default").version,
        "model_name": JUDGE,
        "state": ThresholdState.APPROVED,
        "threshold": 0.95,
        "target": 0.02,
        "delta": 0.05,
        "labelled": 210,
        "automated": 0.8095,
        "risk": 0.0,
        "upper": 0.0175,
        "curve": CURVE,
        "approved_at": timezone.now() - timedelta(days=2),
    }
    values.update(fields)
    return AutoAcceptThreshold.objects.create(**values)


def answers(scores_and_routes: list[tuple[float, str]], *, hours_ago: float = 1) -> None:
    """Accepted, scored verdicts of the judge, created ``hours_ago``."""
    task = TaskFactory()
    ValidationSnapshot.objects.bulk_create(
        ValidationSnapshot(
            task=task,
            attempt_index=i + 1,
            status="accepted",
            score=score,
            route=route,
            template_version=get_template("default").version,
            model_name=JUDGE,
            created_at=timezone.now() - timedelta(hours=hours_ago),
        )
        for i, (score, route) in enumerate(scores_and_routes)
    )


def judges(client: Any) -> list[dict[str, Any]]:
    """Each judge's block on Trust, as text: sentence, state, next step and figures, in
    the order they appear, with the state's badge."""
    html = client.get(reverse("ops_trust")).content.decode()
    summary = html.split('id="trust-summary"')[1].split("</section>")[0]
    found = []
    for block in re.findall(
        r'<(?:article|div) class="trust-judge[^"]*" data-state="([^"]+)"(.*?)'
        r'</(?:article|div)>\s*(?=<article|<div class="trust-judge|<p class="trust-unc|$)',
        summary,
        re.S,
    ):
        state, body = block
        found.append(
            {
                "state": state,
                "order": [
                    body.find(f'class="{c}"')
                    for c in ("trust-sentence", "trust-state", "trust-next")
                ],
                "sentence": text_of(
                    re.search(r'class="trust-sentence">(.*?)</p>', body, re.S).group(1)
                ),
                "state_line": text_of(
                    re.search(r'class="trust-state">(.*?)</p>', body, re.S).group(1)
                ),
                "next": text_of(re.search(r'class="trust-next">(.*?)</p>', body, re.S).group(1)),
                "figures": {
                    text_of(about): dict(
                        (text_of(k), text_of(v))
                        for k, v in re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", dl, re.S)
                    )
                    for about, dl in re.findall(r"<h4>(.*?)</h4>\s*<dl[^>]*>(.*?)</dl>", body, re.S)
                },
                "first_figure": body.find('class="trust-figures"'),
            }
        )
    return found


def test_with_no_judge_trust_says_there_is_nothing_to_guarantee_and_what_to_do(
    client: Any, operator: Any
) -> None:
    """Issue 47, item 1: the state "none" is a sentence, a state and a next step; with
    audited answers that carry no score it says why nothing can be certified."""
    client.force_login(operator)
    [none] = judges(client)
    assert none["state"] == "none"
    assert none["sentence"].startswith("No judge has accepted an answer in the last 30 days")
    assert none["next"].startswith("Next: run tasks")
    # Audited answers without a score: no threshold can be certified, and the sentence
    # does not say that no answer was accepted.
    verdicts(30, probability=1.0, audits=[True] * 30)
    [unscored] = judges(client)
    assert unscored["state"] == "none"
    assert unscored["sentence"].startswith(
        "No guarantee: the answers judges accepted in the last 30 days carry no score"
    )


def test_a_certified_judge_reads_as_a_guarantee_whose_figures_count_its_answers(
    client: Any, operator: Any
) -> None:
    """Issue 47, item 1: "At most 2 % of the answers this judge accepts on its own are
    wrong, with 95 % confidence, for answers like the 210 labelled ones", its state
    (since when, by whom), a next step, then the figures: the labelled answers' figures
    name the same 210, the threshold and the target; the answers since approval count
    only those since approval (the old ones before it are not among them); the methods
    sit in a folded "How this is computed" after the figures."""
    threshold()
    answers([(0.97, "auto_accepted")] * 3 + [(0.9, "to_person")] * 2)
    answers([(0.99, "auto_accepted")] * 7, hours_ago=24 * 5)  # before the approval
    client.force_login(operator)
    [judge] = judges(client)
    assert judge["state"] == "certified"
    assert judge["order"] == sorted(judge["order"]) and judge["order"][-1] < judge["first_figure"]
    assert judge["sentence"] == (
        "At most 2 % of the answers this judge accepts on its own are wrong, with 95 % "
        "confidence, for answers like the 210 labelled ones: it accepts on its own only "
        "answers scoring 0.950 or more."
    )
    assert judge["state_line"].startswith("certified Certified since ")
    assert "threshold 0.950" in judge["state_line"]
    # The next score down on the curve, with its bound above the target.
    assert "0.900" in judge["next"] and "6.77 %" in judge["next"]
    labelled, since = judge["figures"].values()
    assert labelled["Labelled answers"] == "210" and labelled["Target"] == "2 %"
    assert labelled["Scoring 0.950 or more"].startswith("170, 80.95 %")
    assert labelled["95 % upper bound"] == "1.75 %"
    assert since["Accepted by the judge"] == "5"
    assert since["Sent to the requester without a person"] == "3 (60 %)"
    assert since["Sent to a person"] == "2"
    html = client.get(reverse("ops_trust")).content.decode()
    assert re.search(r'<details[^>]*id="trust-method"[^>]*>\s*<summary>How this is computed', html)
    assert html.index('class="trust-figures"') < html.index("Clopper–Pearson")
    assert "not certified" not in text_of(
        html.split('id="trust-summary"')[1].split("</section>")[0]
    )


def test_a_stopped_judge_says_since_when_and_why_and_automates_nothing_after(
    client: Any, operator: Any
) -> None:
    """Issue 47, item 1: a stopped judge has no guarantee: the sentence names the wrong
    audits and the stop; the figures after the stop show nothing sent without a person
    and no reviewer time saved; the audit figures are the sentence's numbers."""
    stopped = timezone.now() - timedelta(hours=3)
    threshold(drift_audits=10, drift_wrong=4, drift_statistic=5.4, stopped_at=stopped)
    answers([(0.99, "auto_accepted")] * 6, hours_ago=24)  # before the stop
    answers([(0.99, "to_person")] * 4)
    client.force_login(operator)
    [judge] = judges(client)
    assert judge["state"] == "stopped"
    assert judge["sentence"].startswith(
        "No guarantee: 4 of the 10 audits of the answers it accepted on its own were wrong, "
        "so its auto-accept stopped on "
    )
    assert judge["state_line"].startswith("stopped Stopped since ")
    assert judge["next"].startswith("Next: Compare a candidate judge")
    after, audits = judge["figures"].values()
    assert after == {
        "Accepted by the judge": "4",
        "Sent to the requester without a person": "0 (0 %)",
        "Sent to a person": "4",
    }
    assert audits == {"Judged": "10", "Found wrong": "4"}


def test_a_judge_without_a_certifiable_score_says_which_number_is_missing(
    client: Any, operator: Any
) -> None:
    """Issue 47, item 1: not certified: the sentence names the bound that is over the
    target and the target; the figures show the same bound; the next step says how many
    more audits (or a candidate) would change it."""
    threshold(
        state=ThresholdState.PROPOSED,
        threshold=None,
        approved_at=None,
        labelled=60,
        automated=0.0,
        risk=None,
        upper=None,
        curve=[{"threshold": 0.99, "accepted": 60, "coverage": 1.0, "risk": 0.0, "upper": 0.0487}],
    )
    answers([(0.99, "auto_accepted")] * 2)
    client.force_login(operator)
    [judge] = judges(client)
    assert judge["state"] == "not certified"
    assert judge["sentence"].startswith(
        "No guarantee: on its 60 labelled answers even the strictest score (0.990) has a "
        "95 % upper bound of 4.87 % false accepts, above the target of 2 %"
    )
    assert re.match(
        r"Next: Audit about [\d,]+ more of its answers scoring 0.990 or more", judge["next"]
    )
    window, labelled = judge["figures"].values()
    assert window["Sent to the requester without a person"] == "2 (100 %)"
    assert labelled["95 % upper bound"] == "4.87 %" and labelled["Target"] == "2 %"


def test_an_unknown_estimate_says_why_and_no_dash_stands_for_a_number(
    client: Any, operator: Any
) -> None:
    """Issue 47, item 1: when the audit rate changed and the new rate's audits are not
    judged yet, the estimate is "unknown" with its reason (how many verdicts it waits
    for), the sentence says what to do (with no count of open audits by route, which
    would tell where their tasks went), and no "(– wrong)" appears."""
    verdicts(50, probability=1.0, audits=[True] * 50, when=timezone.now() - timedelta(days=3))
    verdicts(40, probability=0.5, audits=[None] * 20)
    client.force_login(operator)
    html = client.get(reverse("ops_trust")).content.decode()
    audited = text_of(html.split('id="trust-audited"')[1].split("</section>")[0])
    assert "Of the 90 accepted answers it sent without a person in the last 30 days" in audited
    assert "unknown 40 were drawn at an audit rate none of whose audits is judged yet" in audited
    assert "Next: judge the open audits ( Audits )." in audited
    assert "unknown: 40 drawn at a rate with no judged audit yet" in audited
    assert "– wrong" not in audited and "(–" not in audited


def test_verdicts_no_guarantee_covers_are_named_at_the_top(client: Any, operator: Any) -> None:
    """Issue 47, item 1: automatic verdicts drawn at audit rate 0 are said in the first
    panel, with their count, not only in the table at the bottom."""
    verdicts(12, probability=0.0)
    client.force_login(operator)
    html = client.get(reverse("ops_trust")).content.decode()
    summary = text_of(html.split('id="trust-summary"')[1].split("</section>")[0])
    assert (
        "Not covered: 12 verdicts of the last 30 days moved a task without a person at audit rate 0"
        in summary
    )
    uncovered = text_of(html.split('id="trust-uncovered"')[1].split("</section>")[0])
    assert "12" in uncovered
