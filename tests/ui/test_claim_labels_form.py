"""Claim verdicts on the decision form (issue 27, item 4): a reviewer labels each claim of
the latest validation (and may correct a citation) while deciding; stored with the
decision, in its transaction."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from evidence_app.models import ClaimLabel, ValidationSnapshot
from tasks_app.models import Feedback, Task, ToolEvidence
from tasks_app.workflow.states import TaskStatus as S
from tests.ui.conftest import make_reviewable_task

pytestmark = pytest.mark.django_db

HX_MAIN = {"HTTP_HX_REQUEST": "true", "HTTP_HX_TARGET": "main"}
CLAIMS = [
    {"id": "1", "text": "It is 1,800 EUR per employee per year", "verdict": "supported"},
    {"id": "2", "text": "handbook 18", "verdict": "unsupported"},
]


def with_claims(task: Task) -> ValidationSnapshot:
    """Test setup: the fixture's verdict, with two claims."""
    snapshot = ValidationSnapshot.objects.get(task=task)
    snapshot.result = {**snapshot.result, "claims": CLAIMS}
    snapshot.save(update_fields=["result"])
    return snapshot


@pytest.fixture
def labelled_task(requester: Any) -> Task:
    task = make_reviewable_task(requester)
    with_claims(task)
    return task


def test_the_decision_form_offers_a_verdict_per_claim(
    client: Any, reviewer: Any, labelled_task: Task
) -> None:
    """Issue 27, item 4: one labelled select per claim (default "not labelled"), the
    citation correction with the attempt's evidence, and the validation they belong to."""
    client.force_login(reviewer)
    page = client.get(reverse("task_detail", args=[labelled_task.pk])).content.decode()
    snapshot = ValidationSnapshot.objects.get(task=labelled_task)
    form = page[
        page.index('id="feedback-form"') : page.index("</form>", page.index("feedback-form"))
    ]
    assert f'name="claims_snapshot" value="{snapshot.pk}"' in form
    for i in range(2):
        assert f'<label for="claim-label-{i}">' in form
        assert f'name="claim_label_{i}"' in form and f'name="claim_quote_{i}"' in form
    assert '<option value="">not labelled</option>' in form
    assert "handbook 18" in form
    # The validator's mark and the choices in the claim signs used everywhere (issue 47).
    assert re.search(
        r'<span class="muted">validator</span> <span class="badge claim-badge '
        r'claim-unsupported"><span class="claim-icon" aria-hidden="true">\?</span> '
        r"without support</span>",
        form,
    )
    assert '<option value="contradicted">✗ contradicted</option>' in form
    evidence = ToolEvidence.objects.get(task=labelled_task, title="Training budget")
    # Numbered as the validator saw them: the search result is R1, the document R2.
    assert f'<option value="{evidence.pk}">R2 · Training budget</option>' in form


def test_no_claims_no_claim_verdicts(client: Any, reviewer: Any, requester: Any) -> None:
    """Issue 27, item 4: a verdict without claims shows no claim verdicts on the form."""
    task = make_reviewable_task(requester)
    client.force_login(reviewer)
    page = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    assert 'id="act-satisfied"' in page and "claim-labels-box" not in page


def test_a_decision_with_claim_verdicts_stores_them(
    client: Any, reviewer: Any, labelled_task: Task
) -> None:
    """Issue 27, item 4: htmx post of Satisfied with one claim contradicted (with a
    corrected citation) and one left unlabelled: the decision and one label, tied to it."""
    client.force_login(reviewer)
    evidence = ToolEvidence.objects.get(task=labelled_task, title="Training budget")
    snapshot = ValidationSnapshot.objects.get(task=labelled_task)
    response = client.post(
        reverse("task_feedback", args=[labelled_task.pk]),
        {
            "action": "satisfied",
            "version": labelled_task.version,
            "claims_snapshot": snapshot.pk,
            "claim_label_0": "contradicted",
            "claim_evidence_0": evidence.pk,
            "claim_quote_0": "1,800 EUR",
            "claim_label_1": "",
            "claim_evidence_1": "",
            "claim_quote_1": "",
        },
        **HX_MAIN,
    )
    assert response.status_code == 200
    decision = Feedback.objects.get(task=labelled_task)
    label = ClaimLabel.objects.get()
    assert label.feedback_id == decision.pk and label.author == reviewer
    assert (label.claim_index, label.label, label.judge_verdict) == (0, "contradicted", "supported")
    assert label.corrected_citation == {"evidence_id": evidence.pk, "quote": "1,800 EUR"}


def test_a_half_given_citation_refuses_the_decision_and_writes_nothing(
    client: Any, reviewer: Any, labelled_task: Task
) -> None:
    """Issue 27, item 4: a quote without its evidence item is refused with the reason;
    no decision, no label, the task still waits for a person."""
    client.force_login(reviewer)
    response = client.post(
        reverse("task_feedback", args=[labelled_task.pk]),
        {
            "action": "satisfied",
            "version": labelled_task.version,
            "claim_label_1": "unsupported",
            "claim_quote_1": "section 18",
        },
        **HX_MAIN,
    )
    assert response.status_code == 422
    shown = [str(m) for m in get_messages(response.wsgi_request)]
    assert any("claim 2: a corrected citation needs an evidence item" in m for m in shown)
    assert not Feedback.objects.exists() and not ClaimLabel.objects.exists()
    labelled_task.refresh_from_db()
    assert labelled_task.status == S.NEEDS_REVIEW


def test_labels_of_an_older_validation_are_refused(
    client: Any, reviewer: Any, labelled_task: Task
) -> None:
    """Issue 27, item 4: the form carried the validation the person saw; labels for
    another one are refused (409) and nothing is written."""
    client.force_login(reviewer)
    response = client.post(
        reverse("task_feedback", args=[labelled_task.pk]),
        {
            "action": "satisfied",
            "version": labelled_task.version,
            "claims_snapshot": ValidationSnapshot.objects.get(task=labelled_task).pk + 100,
            "claim_label_0": "supported",
        },
        **HX_MAIN,
    )
    assert response.status_code == 409
    assert not Feedback.objects.exists() and not ClaimLabel.objects.exists()


def test_the_agreement_page_shows_per_claim_agreement(
    client: Any, operator: Any, reviewer: Any, labelled_task: Task, settings: Any
) -> None:
    """Issue 27, item 4: beside the task-level figures, per template version and model,
    the validator's claim verdicts against the people's labels with agreement and kappa;
    an applied decision's labels count."""
    settings.DECISION_UNDO_SECONDS = 0
    client.force_login(reviewer)
    client.post(
        reverse("task_feedback", args=[labelled_task.pk]),
        {
            "action": "satisfied",
            "version": labelled_task.version,
            "claim_label_0": "supported",
            "claim_label_1": "supported",
        },
        **HX_MAIN,
    )
    assert ClaimLabel.objects.count() == 2
    client.force_login(operator)
    page = client.get(reverse("ops_agreement")).content.decode()
    section = page[page.index('id="claim-agreement-heading"') :]
    assert "Labelled claims</dt><dd>2</dd>" in section
    assert "Agreement (3 verdicts)</dt><dd>50 %" in section
    # The validator said supported once and unsupported once; the person supported both:
    # chance agreement 0.5, observed 0.5, kappa 0.
    assert "Cohen's κ (3 verdicts)</dt><dd>0.000" in section
    assert 'aria-label="Claim verdicts: validator against person' in section
