"""Issue 47, item 4: on a disagreement each claim shows each judge's mark side by side,
in the claim signs used everywhere (the claim list, the answer's highlights, the
claim-label form); the audit reveal uses the same signs."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse

from evidence_app.validation.services import validation_run
from project.llm.registry import register_model, unregister_model
from tests.audit_helpers import drawn_audit
from tests.evidence_app.validation_helpers import (
    ScriptedJudge,
    grounded,
    validating_task,
    verdict,
)

pytestmark = pytest.mark.django_db

FIRST, SECOND = "test:first-marks", "test:second-marks"
BUDGET = "The annual training budget per employee is 1,750 EUR."


def badge(state: str, sign: str, words: str) -> str:
    return (
        f'<span class="badge claim-badge claim-{state}"><span class="claim-icon" '
        f'aria-hidden="true">{sign}</span> {words}</span>'
    )


@pytest.fixture
def disagreement(settings: Any, requester: Any) -> Iterator[Any]:
    """The first judge accepts (claim 1 supported), the second rejects it (claim 1
    contradicted) and makes a claim of its own."""
    claim = "The annual training budget per employee is 1,750 EUR"
    first_body = grounded("accepted")
    first_body["claims"][0]["text"] = claim
    second_claims = [
        {"id": "1", "text": claim, "verdict": "contradicted", "citations": []},
        {"id": "2", "text": "paid once a year", "verdict": "unsupported", "citations": []},
    ]
    first = ScriptedJudge([verdict("accepted", **first_body)])
    second = ScriptedJudge([verdict("rejected", claims=second_claims)])
    register_model(FIRST, first.factory())
    register_model(SECOND, second.factory())
    settings.VALIDATOR_MODEL, settings.VALIDATOR_SECOND_MODEL = FIRST, SECOND
    settings.MODEL_MAX_RETRIES = 0
    task = validating_task(owner=requester, answer=BUDGET)
    validation_run(task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    assert task.status == "needs_review"
    yield task
    unregister_model(FIRST)
    unregister_model(SECOND)


def test_each_claim_shows_both_judges_marks_side_by_side(
    client: Any, reviewer: Any, disagreement: Any
) -> None:
    """Issue 47, item 4: the claim list gives "First judge ✓ supported" beside "Second
    judge ✗ contradicted"; the count line gives the second judge's count; a claim only the
    second judge made is listed with its mark; the claim-label form shows both marks."""
    client.force_login(reviewer)
    html = client.get(reverse("task_detail", args=[disagreement.pk])).content.decode()
    marks = re.search(
        r'<span class="judge-marks" data-claim-marks="1">(.*?)</span></span></span>', html, re.S
    )
    assert marks is not None
    first, second = marks.group(0).split('data-mark="second"')
    assert badge("supported", "✓", "supported") in first
    assert badge("contradicted", "✗", "contradicted") in second
    count = re.search(r'id="claim-count-second">(.*?)</span>\s*</p>', html, re.S).group(1)
    assert "second judge:" in count and "1 contradicted" in count
    only = html.split('id="second-only-claims"')[1].split("</div>")[0]
    assert badge("unsupported", "?", "without support") in only and "paid once a year" in only
    form = html[html.index('id="claim-labels-box"') :]
    assert (
        f'<span class="muted">first judge</span> {badge("supported", "✓", "supported")} '
        f'<span class="muted">second judge</span> {badge("contradicted", "✗", "contradicted")}'
    ) in form


def test_the_answer_highlight_carries_both_signs_and_says_them_in_words(
    client: Any, reviewer: Any, disagreement: Any
) -> None:
    """Issue 47, item 4: a claim's highlight in the answer has the first judge's sign and
    the second's, and says both in words for a screen reader."""
    client.force_login(reviewer)
    html = client.get(reverse("task_detail", args=[disagreement.pk])).content.decode()
    answer = html.split('id="answer-claims"')[1].split("</pre>")[0]
    assert '<span class="claim-icon" aria-hidden="true">✓</span>' in answer
    assert (
        'claim-icon-second claim-contradicted" aria-hidden="true" title="second judge">✗' in answer
    )
    assert "(first judge: supported; second judge: contradicted)" in answer
    reason = html.split('id="verdict-reason"')[1].split("</p>")[0]
    assert "says insufficient evidence" in reason and "insufficient_evidence" not in reason


def test_a_requester_sees_one_judge_s_marks(client: Any, requester: Any, disagreement: Any) -> None:
    """Issue 47, item 4: the second judge is reviewers' and operators' material, as the
    judge pair is."""
    client.force_login(requester)
    html = client.get(reverse("task_detail", args=[disagreement.pk])).content.decode()
    assert "judge-marks" not in html and "claim-icon-second" not in html


def test_the_audit_reveal_shows_the_marks_in_the_claim_signs(client: Any, reviewer: Any) -> None:
    """Issue 47, item 4: after the judgement, each claim's validator mark and the
    person's are the badges used everywhere, not bare words."""
    audit = drawn_audit("accepted")
    client.force_login(reviewer)
    html = client.post(
        f"/review/audits/{audit.pk}/",
        {"correct": "not_correct", "comment": "It is 1,800 EUR.", "claim_0": "contradicted"},
        follow=True,
    ).content.decode()
    judged = html.split('id="audit-claims-judged"')[1].split("</ol>")[0]
    first = judged.split("</li>")[0]
    assert f'<span class="muted">you</span> {badge("contradicted", "✗", "contradicted")}' in first
    assert '<span class="muted">validator</span> <span class="badge claim-badge claim-' in first
