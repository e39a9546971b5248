"""Issue 46, item 3: the judge gate through the API: compare a candidate on the labelled
cases, read the result, make it the default (with a reason and the acknowledgement for a
candidate not found better), start and stop shadow mode; the judge page's rules, and
nothing changed on a refusal."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from evidence_app.jobs import judge_comparison_job
from evidence_app.judges.figures import comparison_figures
from evidence_app.models import JudgeComparison, JudgeDefault, ShadowJudge
from evidence_app.validation.current_judge import current_judge
from tasks_app.models import OutboxJob

pytestmark = pytest.mark.django_db

API = "/api/v1"
JSON = "application/json"
FEW_CASES = ["supported-02", "contradicted-02", "missing-02", "wrong_block-02"]


def _outcomes(candidate_only: int, baseline_only: int, both_right: int = 30) -> list:
    def case(candidate: bool, baseline: bool) -> dict[str, Any]:
        return {
            "kind": "correct",
            "candidate": "accepted" if candidate else "rejected",
            "baseline": "accepted" if baseline else "rejected",
            "candidate_correct": candidate,
            "baseline_correct": baseline,
        }

    return (
        [case(True, True)] * both_right
        + [case(True, False)] * candidate_only
        + [case(False, True)] * baseline_only
    )


def _finished(template: str, outcomes: list) -> JudgeComparison:
    """A comparison of ``template`` on offline:judge against the current judge, finished
    with these outcomes (the comparison job itself is covered below and in
    tests/evidence_app/judges/test_judge_gate.py)."""
    return JudgeComparison.objects.create(
        template=template,
        model="offline:judge",
        baseline_template="default",
        baseline_model="offline:judge",
        state="succeeded",
        done=len(outcomes),
        total=len(outcomes),
        figures=comparison_figures(outcomes),
    )


@pytest.fixture
def offline(settings: Any) -> None:
    settings.VALIDATOR_MODEL = "offline:judge"


def test_a_comparison_started_through_the_api_runs_and_reports_its_figures(
    otto: Client, offline: None
) -> None:
    """Issue 46, item 3: POST /judges/comparisons queues the comparison (202), its job
    judges both judges on the held-out cases, and GET answers its figures and verdict;
    four cases are too few to make a default (422, nothing recorded)."""
    response = otto.post(
        f"{API}/judges/comparisons",
        {"template": "terse", "model": "offline:judge", "cases": FEW_CASES},
        content_type=JSON,
    )
    assert response.status_code == 202, response.content
    queued = response.json()
    assert (queued["state"], queued["done"], queued["total"]) == ("queued", 0, 4)
    assert (queued["baseline_template"], queued["baseline_model"]) == ("default", "offline:judge")
    assert OutboxJob.objects.filter(args=[queued["id"]]).count() == 1

    assert judge_comparison_job(queued["id"]) == "succeeded"  # the worker's part
    done = otto.get(f"{API}/judges/comparisons/{queued['id']}").json()
    assert done["state"] == "succeeded" and done["done"] == 4
    figures = done["figures"]
    assert figures["cases"] == 4 and figures["verdict"] in (
        "better",
        "worse",
        "no significant difference",
    )
    assert figures["candidate"]["accuracy"]["n"] == 4 and "at_target" in figures
    assert done["can_default"] is False and done["stale"] is False
    listed = otto.get(f"{API}/judges/comparisons").json()
    assert [c["id"] for c in listed["items"]] == [queued["id"]]
    assert listed["current_template"] == "default" and listed["min_cases"] == 30

    refused = otto.post(
        f"{API}/judges/comparisons/{queued['id']}/default",
        {"reason": "It is shorter and just as good.", "acknowledge_not_better": True},
        content_type=JSON,
    )
    assert refused.status_code == 422
    assert "a new judge needs at least 30 compared cases" in refused.json()["detail"]
    assert not JudgeDefault.objects.exists() and current_judge() == ("default", "offline:judge")


def test_bad_candidates_are_refused_with_the_field_named_and_nothing_queued(
    otto: Client, rita: Client, offline: None
) -> None:
    """Issue 46, item 3: an unknown template or an unusable model is a 422 naming the
    field, a filter no held-out case matches a 422; a reviewer gets 403."""
    for body, field in (
        ({"template": "nosuch", "model": "offline:judge"}, "template"),
        ({"template": "terse", "model": "nosuch:model"}, "model"),
    ):
        response = otto.post(f"{API}/judges/comparisons", body, content_type=JSON)
        assert response.status_code == 422, response.content
        assert response.json()["errors"][0]["field"] == field
    no_case = otto.post(
        f"{API}/judges/comparisons",
        {"template": "terse", "model": "offline:judge", "cases": ["no-such-case"]},
        content_type=JSON,
    )
    assert no_case.status_code == 422 and "No held-out case matches" in no_case.json()["detail"]
    forbidden = rita.post(
        f"{API}/judges/comparisons",
        {"template": "terse", "model": "offline:judge"},
        content_type=JSON,
    )
    assert forbidden.status_code == 403
    assert rita.get(f"{API}/judges/comparisons").status_code == 403
    assert not JudgeComparison.objects.exists() and not OutboxJob.objects.exists()


def test_a_worse_candidate_becomes_the_default_only_with_a_reason_and_the_acknowledgement(
    otto: Client, operator: Any, offline: None
) -> None:
    """Issue 46, item 3: a candidate the comparison found worse is refused without a
    reason of 20 characters and ``acknowledge_not_better``, nothing recorded; with both
    it becomes the judge, recorded with who, why and the comparison."""
    worse = _finished("terse", _outcomes(candidate_only=0, baseline_only=8))
    item = otto.get(f"{API}/judges/comparisons/{worse.pk}").json()
    assert item["can_default"] and item["needs_reason"]
    assert item["figures"]["verdict"] == "worse"
    url = f"{API}/judges/comparisons/{worse.pk}/default"
    for body in (
        {},
        {"reason": "Shorter prompt, cheaper to run at scale."},
        {"reason": "too short", "acknowledge_not_better": True},
    ):
        refused = otto.post(url, body, content_type=JSON)
        assert refused.status_code == 422, (body, refused.content)
        assert "needs a written reason" in refused.json()["detail"]
    assert otto.post(url, {"acknowledge_not_better": "yes"}, content_type=JSON).status_code == 422
    assert not JudgeDefault.objects.exists()

    made = otto.post(
        url,
        {"reason": "Shorter prompt, cheaper to run at scale.", "acknowledge_not_better": True},
        content_type=JSON,
    )
    assert made.status_code == 200, made.content
    body = made.json()
    assert (body["template"], body["model"], body["comparison_id"]) == (
        "terse",
        "offline:judge",
        worse.pk,
    )
    assert body["chosen_by"] == operator.username
    assert body["note"] == "Shorter prompt, cheaper to run at scale."
    assert current_judge() == ("terse", "offline:judge")
    # Made against the judge of its day, which is no longer current: stale now.
    assert otto.get(f"{API}/judges/comparisons/{worse.pk}").json()["stale"] is True
    assert (
        otto.post(f"{API}/judges/comparisons/999999/default", {}, content_type=JSON).status_code
        == 404
    )


def test_unfinished_comparison_is_409_and_changes_nothing(otto: Client, offline: None) -> None:
    """Issue 46, item 3: only a finished comparison makes a default (409 otherwise)."""
    running = JudgeComparison.objects.create(
        template="terse",
        model="offline:judge",
        baseline_template="default",
        baseline_model="offline:judge",
        state="running",
    )
    response = otto.post(f"{API}/judges/comparisons/{running.pk}/default", {}, content_type=JSON)
    assert response.status_code == 409 and "only a finished comparison" in response.json()["detail"]
    assert not JudgeDefault.objects.exists()


def test_shadow_mode_starts_and_stops_through_the_api(
    otto: Client, operator: Any, offline: None
) -> None:
    """Issue 46, item 3: start a candidate in shadow (201), a second one is refused (409)
    until it stops; stopping with none running is 409; its figures stay readable."""
    assert otto.get(f"{API}/judges/shadow").json() == {"shadow": None, "figures": None}
    started = otto.post(
        f"{API}/judges/shadow", {"template": "terse", "model": "offline:judge"}, content_type=JSON
    )
    assert started.status_code == 201, started.content
    shadow = started.json()["shadow"]
    assert shadow["active"] and shadow["template"] == "terse"
    assert shadow["started_by"] == operator.username
    assert started.json()["figures"]["judged"] == 0

    second = otto.post(
        f"{API}/judges/shadow",
        {"template": "default", "model": "offline:judge"},
        content_type=JSON,
    )
    assert second.status_code == 409 and "stop it first" in second.json()["detail"]
    bad = otto.post(
        f"{API}/judges/shadow", {"template": "nosuch", "model": "offline:judge"}, content_type=JSON
    )
    assert bad.status_code == 422
    assert ShadowJudge.objects.count() == 1

    stopped = otto.post(f"{API}/judges/shadow/stop")
    assert stopped.status_code == 200
    assert stopped.json()["shadow"]["active"] is False
    assert stopped.json()["shadow"]["stopped_by"] == operator.username
    assert otto.post(f"{API}/judges/shadow/stop").status_code == 409
    assert otto.get(f"{API}/judges/shadow").json()["shadow"]["id"] == shadow["id"]
