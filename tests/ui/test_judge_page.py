"""The judge page (/ops/judge/): the gate's comparisons and figures, making a default,
and shadow mode, as an operator sees them."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from evidence_app.jobs import judge_comparison_job, shadow_validation_job
from evidence_app.judges.at_target import at_target_figures
from evidence_app.judges.figures import comparison_figures
from evidence_app.models import JudgeComparison, JudgeDefault, ShadowJudge, ShadowVerdict
from evidence_app.validation.services import validation_run
from tasks_app.workflow import services
from tests.evidence_app.conftest import scripted_judge  # noqa: F401
from tests.evidence_app.validation_helpers import ScriptedJudge, validating_task, verdict

pytestmark = pytest.mark.django_db


def _figures(candidate_only: int, baseline_only: int) -> dict[str, Any]:
    def case(candidate: bool, baseline: bool, kind: str = "correct") -> dict[str, Any]:
        return {
            "kind": kind,
            "candidate": "accepted" if candidate else "rejected",
            "baseline": "accepted" if baseline else "rejected",
            "candidate_correct": candidate,
            "baseline_correct": baseline,
        }

    outcomes = ([case(True, True)] * 20 + [case(True, False)] * candidate_only) + [
        case(False, True)
    ] * baseline_only
    return comparison_figures(outcomes)


def _comparison(state: str, **fields: Any) -> JudgeComparison:
    values: dict[str, Any] = {
        "template": "terse",
        "model": "offline:judge",
        "baseline_template": "default",
        "baseline_model": "offline:judge",
        "state": state,
        "done": 34 if state == "succeeded" else 5,
        "total": 34,
        **fields,
    }
    return JudgeComparison.objects.create(**values)


def test_the_page_shows_a_finished_comparisons_figures_and_the_verdict(
    client: Any, operator: Any, reviewer: Any
) -> None:
    """Issue 27, item 5: the figures of both judges side by side with their intervals,
    McNemar's p-value and the verdict; the make-default form only on a finished
    comparison; progress for a running one, which makes the list poll; the reason of a
    failed one. Reviewers are refused."""
    finished = _comparison("succeeded", figures=_figures(12, 2))
    running = _comparison("running")
    failed = _comparison("failed", error="InvalidInput: unknown validator template 'retired'")
    client.force_login(operator)
    html = client.get(reverse("ops_judge")).content.decode()
    assert 'href="/ops/judge/"' in html  # the operator nav's entry
    assert "Accuracy (verdict as labelled)" in html
    assert "94.1 % (32/34; 95 % CI 80.3–99.3 %)" in html  # the candidate's accuracy
    assert "64.7 % (22/34; 95 % CI 46.5–80.3 %)" in html  # the current judge's
    assert "p = 0.0129" in html and ">better</strong>" in html
    assert "Cases where only one judge was right (14)" in html
    assert html.count("Yes, make it the default") == 1
    assert reverse("ops_judge_default", args=[finished.pk]) in html
    assert reverse("ops_judge_default", args=[running.pk]) not in html
    assert "Cases judged: 5 of 34" in html and 'hx-trigger="every 2s"' in html
    assert "unknown validator template &#x27;retired&#x27;" in html
    assert f'id="comparison-{failed.pk}"' in html

    poll = client.get(
        reverse("ops_judge"), HTTP_HX_REQUEST="true", HTTP_HX_TARGET="judge-comparisons"
    )
    assert (
        poll.content.decode().lstrip().startswith('<section class="panel" id="judge-comparisons"')
    )

    client.force_login(reviewer)
    assert client.get(reverse("ops_judge")).status_code == 403


def test_a_candidate_is_compared_from_the_page_and_made_the_default_once_finished(
    client: Any, operator: Any, settings: Any
) -> None:
    """Issue 27, item 5: the form queues a comparison (an unknown model is refused
    before anything is queued); an unfinished one cannot be made the default (nothing
    changes), nor one of 2 cases (issue 39); a finished one of enough cases can, after
    the confirmation, and the history says who and from which comparison."""
    settings.VALIDATOR_MODEL = "offline:judge"
    client.force_login(operator)
    url = reverse("ops_judge")
    refused = client.post(url, {"template": "terse", "model": "nope:model"})
    assert refused.status_code == 422 and not JudgeComparison.objects.exists()
    no_case = client.post(url, {"template": "terse", "model": "offline:judge", "cases": "nope-9"})
    assert no_case.status_code == 422 and "No held-out case matches nope-9" in (
        no_case.content.decode()
    )
    assert not JudgeComparison.objects.exists()
    response = client.post(
        url, {"template": "terse", "model": "offline:judge", "cases": "supported-02, missing-02"}
    )
    assert response.status_code == 302
    comparison = JudgeComparison.objects.get()
    assert (comparison.case_filter, comparison.total, comparison.requested_by) == (
        ["supported-02", "missing-02"],
        2,
        operator,
    )
    make_default = reverse("ops_judge_default", args=[comparison.pk])
    page = client.post(make_default, {"confirm": "yes"}, follow=True).content.decode()
    assert "Nothing changed" in page and "only a finished comparison" in page
    assert not JudgeDefault.objects.exists()

    assert judge_comparison_job(comparison.pk) == "succeeded"
    # Two cases are too few to change the judge (issue 39): no form, and a post is refused.
    html = client.get(url).content.decode()
    assert "Too few cases to change the judge: 2 compared, at least 30 needed" in html
    assert make_default not in html
    two = client.post(make_default, {"confirm": "yes"}, follow=True).content.decode()
    assert "Nothing changed: Comparison" in two and "at least 30 compared cases" in two
    assert not JudgeDefault.objects.exists()

    comparison = _comparison("succeeded", figures=_figures(12, 2))
    make_default = reverse("ops_judge_default", args=[comparison.pk])
    unconfirmed = client.post(make_default, {}, follow=True).content.decode()
    assert "Nothing changed: confirm" in unconfirmed and not JudgeDefault.objects.exists()
    done = client.post(make_default, {"confirm": "yes", "note": "after the gate"}, follow=True)
    assert "is now the judge of every new verdict" in done.content.decode()
    chosen = JudgeDefault.objects.get()
    assert (chosen.template, chosen.comparison, chosen.chosen_by, chosen.note) == (
        "terse",
        comparison,
        operator,
        "after the gate",
    )
    html = client.get(url).content.decode()
    assert f'comparison <a href="#comparison-{comparison.pk}">#{comparison.pk}</a>' in html
    assert '<dd class="mono">terse</dd>' in html


def test_shadow_mode_starts_and_stops_from_the_page_with_its_figures(
    client: Any,
    operator: Any,
    reviewer: Any,
    requester: Any,
    scripted_judge: ScriptedJudge,  # noqa: F811
) -> None:
    """Issue 27, item 5: an operator starts a candidate in shadow and stops it; its
    figures (attempts judged, agreement with the current judge, with people's decisions)
    stay on the page."""
    client.force_login(operator)
    shadow_url = reverse("ops_judge_shadow")
    started = client.post(
        shadow_url,
        {"op": "start", "shadow-template": "terse", "shadow-model": "offline:judge"},
        follow=True,
    )
    assert "now judges every new attempt in shadow" in started.content.decode()
    shadow = ShadowJudge.objects.get(active=True)
    again = client.post(
        shadow_url,
        {"op": "start", "shadow-template": "default", "shadow-model": "offline:judge"},
        follow=True,
    )
    assert "already judging in shadow" in again.content.decode()
    assert ShadowJudge.objects.count() == 1

    # The current judge rejects; the candidate (offline) accepts; a person is satisfied.
    scripted_judge.replies = [verdict("insufficient_evidence", evidence_gaps=["gap"])]
    task = validating_task(owner=requester)
    validation_run(task_id=task.pk, attempt_index=1)
    assert shadow_validation_job(ShadowVerdict.objects.get().pk) == "done"
    services.task_decide(task_id=task.pk, actor=reviewer, action="satisfied")

    html = client.get(reverse("ops_judge")).content.decode()
    assert "is judging in shadow since" in html and "Stop shadow mode" in html
    assert "Attempts judged: <strong>1</strong>" in html
    assert '<tr><th scope="row">not accepted</th><td class="num">1</td>' in html
    # People: the candidate agreed with the person's satisfied, the current judge did not.
    assert '<tr><th scope="row">Decisions</th><td class="num">1</td>' in html
    assert "100 %, κ –" in html and "0 %, κ –" in html

    # Issue 47: one click does not stop it; the confirmation does.
    unconfirmed = client.post(shadow_url, {"op": "stop"}, follow=True).content.decode()
    assert "Nothing changed: confirm to stop shadow mode." in unconfirmed
    assert ShadowJudge.objects.filter(active=True).count() == 1
    stopped = client.post(shadow_url, {"op": "stop", "confirm": "yes"}, follow=True)
    stopped = stopped.content.decode()
    assert "Shadow mode stopped" in stopped and "Start in shadow" in stopped
    assert "Last shadow:" in stopped and "Attempts judged: <strong>1</strong>" in stopped
    shadow.refresh_from_db()
    assert not shadow.active and shadow.stopped_by == operator

    client.force_login(reviewer)
    assert client.post(shadow_url, {"op": "start"}).status_code == 403
    assert not ShadowJudge.objects.filter(active=True).exists()


def test_a_comparison_shows_both_judges_at_a_certified_risk(client: Any, operator: Any) -> None:
    """Issue 38, item 7: the candidate's automation at its certified threshold beside the
    current judge's, today's accept share and the paired test."""
    outcomes = [
        {
            "kind": "correct",
            "baseline": "insufficient_evidence",
            "candidate": "accepted",
            "baseline_score": 0.5,
            "candidate_score": 0.99,
        }
    ] * 160
    figures = {**_figures(1, 1), "at_target": at_target_figures(outcomes, target=0.02)}
    _comparison("succeeded", figures=figures)
    client.force_login(operator)
    html = client.get(reverse("ops_judge")).content.decode()
    assert "At a certified risk" in html
    assert "0.990" in html and "160/160 (100.00 %)" in html
    assert "none (0 scored accepts)" in html
    assert "at the target the candidate is <strong>better</strong>" in html
