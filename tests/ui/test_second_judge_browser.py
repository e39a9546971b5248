"""The two judges' verdicts on the task page: side by side on a wide screen, stacked on
a phone (issue 27, item 3). System Chromium via Playwright."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from evidence_app.validation.services import validation_run
from project.llm.registry import register_model, unregister_model
from tests.evidence_app.validation_helpers import ScriptedJudge, validating_task, verdict
from tests.ui.test_browser import CHROMIUM, browser, login  # noqa: F401
from tests.ui.test_responsive import box, serious_axe, shot, wide_page  # noqa: F401
from tests.ui.test_review_flow_browser import page_overflow

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"browser tests need the system Chromium at {CHROMIUM}"
    ),
]

FIRST, SECOND = "test:first-browser", "test:second-browser"


@pytest.fixture
def disagreeing_task(settings: Any, requester: Any) -> Iterator[Any]:
    first, second = ScriptedJudge([verdict("accepted")]), ScriptedJudge([verdict("rejected")])
    register_model(FIRST, first.factory())
    register_model(SECOND, second.factory())
    settings.VALIDATOR_MODEL, settings.VALIDATOR_SECOND_MODEL = FIRST, SECOND
    settings.MODEL_MAX_RETRIES = 0
    task = validating_task(owner=requester)
    validation_run(task_id=task.pk, attempt_index=1)
    yield task
    unregister_model(FIRST)
    unregister_model(SECOND)


def test_both_verdicts_sit_side_by_side_and_stack_on_a_phone(
    wide_page: Any,  # noqa: F811
    live_server: Any,
    reviewer: Any,
    disagreeing_task: Any,
) -> None:
    """Issue 27, item 3: at 1280 px the two verdicts share a row; at 390 px the second
    is under the first, the page does not scroll sideways, axe finds nothing serious."""
    page = wide_page
    login(page, live_server, "rita", f"/tasks/{disagreeing_task.pk}/")
    page.wait_for_load_state("networkidle")
    first, second = box(page, '[data-judge="first"]'), box(page, '[data-judge="second"]')
    assert abs(first["y"] - second["y"]) < 2 and second["x"] >= first["x"] + first["width"]
    assert "judges disagree" in page.locator("#verdict-reason").inner_text().lower()
    page.set_viewport_size({"width": 390, "height": 844})
    page.wait_for_timeout(100)
    first, second = box(page, '[data-judge="first"]'), box(page, '[data-judge="second"]')
    assert second["y"] >= first["y"] + first["height"]
    assert abs(first["x"] - second["x"]) < 2
    assert page_overflow(page) == ""
    assert serious_axe(page, "#verdict-panel") == []
    shot(page, "judge-pair-390.png")
    assert page.errors == []
