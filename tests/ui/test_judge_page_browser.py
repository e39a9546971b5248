"""The judge page in the browser (issue 27, item 5): on a phone and on a laptop it does
not scroll sideways and has no serious axe violation; a running comparison's progress
updates without a reload; "Make this the default…" asks before it records the change.
System Chromium via Playwright."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from evidence_app.judges.figures import comparison_figures
from evidence_app.models import JudgeComparison, JudgeDefault, ShadowJudge, ShadowVerdict
from tests.factories import ValidationSnapshotFactory
from tests.ui.conftest import make_reviewable_task
from tests.ui.test_browser import CHROMIUM, login
from tests.ui.test_review_flow_browser import AXE, axe_violations, browser, page, page_overflow

__all__ = ["browser", "page"]  # the fixtures, shared with the review-flow tests

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists(), reason=f"needs the system Chromium at {CHROMIUM}"
    ),
]


def _outcome(candidate: bool, baseline: bool, kind: str) -> dict[str, Any]:
    def said(right: bool) -> str:
        return (
            ("accepted" if right else "rejected")
            if kind == "correct"
            else ("rejected" if right else "accepted")
        )

    return {
        "kind": kind,
        "candidate": said(candidate),
        "baseline": said(baseline),
        "candidate_correct": candidate,
        "baseline_correct": baseline,
    }


def _comparison(state: str, **fields: Any) -> JudgeComparison:
    values: dict[str, Any] = {
        "template": "terse",
        "model": "offline:judge",
        "baseline_template": "default",
        "baseline_model": "offline:judge",
        "state": state,
        **fields,
    }
    return JudgeComparison.objects.create(**values)


def test_the_judge_page_on_a_phone_polls_progress_and_confirms_a_new_default(
    page: Any, live_server: Any, operator: Any, requester: Any
) -> None:
    """Issue 27, item 5: figures side by side and the verdict fit a 390 px screen; the
    progress of a running comparison moves without a reload; the default changes only
    after "Make this the default…" is opened and confirmed."""
    from playwright.sync_api import expect

    outcomes = (
        [_outcome(True, True, "correct")] * 30
        + [_outcome(True, False, "wrong")] * 12
        + [_outcome(False, True, "correct")] * 2
    )
    finished = _comparison("succeeded", done=44, total=44, figures=comparison_figures(outcomes))
    running = _comparison("running", done=3, total=44)
    # A candidate in shadow with a verdict beside an original, so its figures show too.
    shadow = ShadowJudge.objects.create(
        template="terse", model="offline:judge", started_by=operator
    )
    original = make_reviewable_task(requester).validations.get()
    ShadowVerdict.objects.create(
        shadow=shadow,
        original=original,
        state="done",
        snapshot=ValidationSnapshotFactory(
            task=original.task,
            attempt_index=1,
            kind="shadow",
            status="accepted",
            companion_of=original,
        ),
    )
    page.set_viewport_size({"width": 390, "height": 860})
    path = reverse("ops_judge")
    login(page, live_server, "otto", path)

    expect(page.locator(f"#comparison-{finished.pk} .gate-verdict")).to_contain_text("better")
    expect(page.locator(f"#comparison-{running.pk}")).to_contain_text("Cases judged: 3 of 44")
    expect(page.locator("#shadow-counts")).to_contain_text("Attempts judged: 1")
    for width in (390, 1280):
        page.set_viewport_size({"width": width, "height": 860})
        assert page_overflow(page) == "", width
        if AXE.exists():  # npm ci puts axe-core there
            serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
            assert serious == [], (width, serious)
    page.set_viewport_size({"width": 390, "height": 860})

    confirm = page.locator(f"#comparison-{finished.pk} button[name=confirm]")
    expect(confirm).to_be_hidden()
    page.locator(f"#make-default-{finished.pk} summary").click()
    expect(confirm).to_be_visible()
    page.fill(f"#default-note-{finished.pk}", "12 against 2 on the held-out cases")

    # The worker moves on: the list polls and shows it without a reload, and the open
    # confirmation keeps its note through the poll.
    JudgeComparison.objects.filter(pk=running.pk).update(done=20)
    expect(page.locator(f"#comparison-{running.pk}")).to_contain_text(
        "Cases judged: 20 of 44", timeout=6000
    )
    expect(confirm).to_be_visible()
    expect(page.locator(f"#default-note-{finished.pk}")).to_have_value(
        "12 against 2 on the held-out cases"
    )
    assert not JudgeDefault.objects.exists()
    confirm.click()
    expect(page.locator("#judge-current")).to_contain_text("terse")
    chosen = JudgeDefault.objects.get()
    assert (chosen.comparison_id, chosen.note) == (
        finished.pk,
        "12 against 2 on the held-out cases",
    )
    assert page_overflow(page) == ""
    assert page.errors == []


@pytest.mark.parametrize("width", [390, 1280])
def test_a_worse_candidate_needs_a_reason_and_a_second_confirmation_and_the_rest_goes_stale(
    page: Any, live_server: Any, operator: Any, width: int
) -> None:
    """Issue 39 item 4: a candidate the comparison found worse (p = 0.0078) is made the
    default only with a written reason and the second box ticked (the browser refuses
    the form without them, nothing changes); the change restarts shadow mode with a
    notice; the other comparison, made against the previous judge, is then marked stale
    and offers no action; the wording names the verdict in a sentence."""
    from playwright.sync_api import expect

    worse = [_outcome(True, True, "correct")] * 30 + [_outcome(False, True, "wrong")] * 8
    even = (
        [_outcome(True, True, "correct")] * 30
        + [_outcome(True, False, "wrong")] * 4
        + [_outcome(False, True, "wrong")] * 3
    )
    bad = _comparison("succeeded", done=38, total=38, figures=comparison_figures(worse))
    other = _comparison(
        "succeeded", model="offline:judge-b", done=37, total=37, figures=comparison_figures(even)
    )
    ShadowJudge.objects.create(template="default", model="offline:judge-b", started_by=operator)
    page.set_viewport_size({"width": width, "height": 900})
    login(page, live_server, "otto", reverse("ops_judge"))
    expect(page.locator(f"#comparison-{bad.pk} .gate-verdict")).to_have_text(
        "The candidate is worse than the current judge (p < 0.05)."
    )
    expect(page.locator(f"#comparison-{other.pk} .gate-verdict")).to_have_text(
        "The comparison found no significant difference between the candidate and the "
        "current judge (p ≥ 0.05)."
    )
    page.locator(f"#make-default-{bad.pk} summary").click()
    form = page.locator(f"#make-default-{bad.pk} form")
    expect(form).to_contain_text("The comparison found it worse than the current judge.")
    expect(form).to_contain_text("Shadow mode restarts against the new judge")
    confirm = form.locator("button[name=confirm]")
    confirm.click()  # no reason, no second box: the browser keeps the form
    page.wait_for_timeout(300)
    assert not JudgeDefault.objects.exists()
    form.locator("textarea[name=note]").fill("Cheaper; its misses are all injection cases.")
    confirm.click()  # the reason alone is not enough
    page.wait_for_timeout(300)
    assert not JudgeDefault.objects.exists()
    form.locator("input[name=override]").check()
    confirm.click()
    expect(page.locator("#messages")).to_contain_text("is now the judge of every new verdict")
    expect(page.locator("#messages")).to_contain_text("Shadow mode restarted")
    chosen = JudgeDefault.objects.get()
    assert chosen.note == "Cheaper; its misses are all injection cases."
    assert ShadowJudge.objects.filter(active=True).count() == 1

    stale = page.locator(f"#comparison-{other.pk}")
    expect(stale.locator(".comparison-stale")).to_contain_text("Stale:")
    expect(stale.locator(".make-default")).to_have_count(0)
    expect(stale.locator("thead").first).to_contain_text("Judge compared with (no longer current)")
    expect(page.locator(f"#comparison-{bad.pk} .make-default")).to_have_count(0)
    assert page_overflow(page) == ""
    if AXE.exists():
        serious = [v for v in axe_violations(page) if v["impact"] in ("serious", "critical")]
        assert serious == [], serious
    page.screenshot(path=f"test-artifacts/judge-stale-{width}.png", full_page=True)
    assert page.errors == []
