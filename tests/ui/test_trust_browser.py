"""Issue 27, item 2: the trust page on a phone (390 px) and a laptop, in the system
Chromium via Playwright: no sideways scrolling of the page (the wide tables scroll in
their own focusable region), no serious axe-core violation, the period selector works.
Screenshots go to ``test-artifacts/`` (git-ignored)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.evidence_app.trust_helpers import verdicts
from tests.ui.test_browser import ARTIFACTS, CHROMIUM, browser, login  # noqa: F401
from tests.ui.test_review_flow_browser import AXE, axe_violations, page_overflow

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"browser tests need the system Chromium at {CHROMIUM}"
    ),
]


@pytest.fixture
def page(browser: Any, live_server: Any, monkeypatch: Any) -> Iterator[Any]:  # noqa: F811
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    # bypass_csp: axe-core is injected as an inline script, which the app's policy refuses.
    context = browser.new_context(viewport={"width": 1280, "height": 900}, bypass_csp=True)
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.errors = errors
    yield page
    page.wait_for_timeout(200)
    context.close()


def test_trust_page_works_on_a_phone_and_switches_period(
    page: Any, live_server: Any, operator: Any
) -> None:
    """Issue 27, item 2: at 390 px and 1280 px the page does not scroll sideways and has
    no serious or critical axe-core violation; choosing "Day" shows the rows per day."""
    from playwright.sync_api import expect

    verdicts(800, probability=0.1, audits=[False] + [True] * 79 + [None] * 2)
    verdicts(30, probability=1.0, route="auto_rejected", audits=[True] + [False] * 29)
    login(page, live_server, "otto", "/ops/trust/")
    expect(page.locator(".trust-group")).to_have_count(1)
    expect(page.locator(".trust-group")).to_contain_text("more audits")
    for width in (390, 1280):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(100)
        assert page_overflow(page) == "", f"{width} px: {page_overflow(page)}"
        page.screenshot(path=str(ARTIFACTS / f"trust-{width}.png"), full_page=True)
        if AXE.exists():
            serious = [
                v
                for v in axe_violations(page, inject=width == 390)
                if v["impact"] in ("serious", "critical")
            ]
            assert serious == [], serious
    page.select_option("#id_period", "day")
    page.click("#trust-filters button[type=submit]")
    page.wait_for_url("**/ops/trust/?period=day*")
    expect(page.locator(".trust-group h4").nth(1)).to_have_text("Per day")
    assert page.errors == []


def test_the_auto_accept_section_fits_a_phone(
    page: Any, live_server: Any, operator: Any, settings: Any
) -> None:
    """Issue 38, item 4: with the demo's certified thresholds (one approved, one judge
    stopped by drift) Trust shows each judge's curve, the approved τ and its guarantee;
    at 390 and 1280 px the page does not scroll sideways (the curve scales down to the
    screen) and the figures read as label and value."""
    import io

    from django.core.management import call_command
    from playwright.sync_api import expect

    settings.VALIDATOR_MODEL = "offline:judge"
    call_command("seed_demo", no_tasks=True, stdout=io.StringIO())
    call_command("demo_autoaccept", stdout=io.StringIO())
    login(page, live_server, "otto", "/ops/trust/")
    # Issue 47: each judge's guarantee (or why none) first, in the summary.
    section = page.locator("#trust-summary")
    expect(section).to_contain_text("Certified since")
    expect(section).to_contain_text("threshold 0.950")
    expect(section).to_contain_text("At most 2 % of the answers this judge accepts on its own")
    expect(section).to_contain_text("Auto-accept stopped")
    expect(section.locator("figure.autoaccept-curve svg").first).to_be_visible()
    for width in (390, 1280):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(100)
        assert page_overflow(page) == "", f"{width} px: {page_overflow(page)}"
        curve = section.locator("figure.autoaccept-curve svg").first.bounding_box()
        assert curve is not None and curve["x"] >= 0 and curve["x"] + curve["width"] <= width
        label = section.locator("dl.kv dt").first.bounding_box()
        value = section.locator("dl.kv dd").first.bounding_box()
        assert label is not None and value is not None
        assert abs(label["y"] - value["y"]) < 4, "the value sits beside its label"
        page.screenshot(path=str(ARTIFACTS / f"trust-autoaccept-{width}.png"), full_page=True)
    assert page.errors == []
