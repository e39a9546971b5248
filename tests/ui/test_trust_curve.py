"""Issue 47, item 2: the coverage–risk curve reads: axes titled, the target and the
approved threshold labelled, round ticks, every point's values reachable by keyboard and
touch (a focusable point with its figures as a title and label), scaled to the screen,
and its data as a table."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from evidence_app.autoaccept.overview import curve_chart
from tests.ui.test_trust_plain_words import CURVE, threshold

pytestmark = pytest.mark.django_db


def test_the_curve_has_titled_axes_labelled_lines_and_values_at_its_points(
    client: Any, operator: Any
) -> None:
    """Issue 47, item 2: "Share of the labelled answers automated", "False accepts
    among the automated answers", "target 2 %", "approved threshold 0.950"; each point is
    a focusable element whose title and label say its score, share automated, rate and
    bound, the same figures as the table row of that score; the chart has no fixed pixel
    width (the stylesheet scales it to the screen)."""
    threshold()
    client.force_login(operator)
    html = client.get(reverse("ops_trust")).content.decode()
    figure = re.search(r'<figure class="autoaccept-curve".*?</figure>', html, re.S).group(0)
    assert "Share of the labelled answers automated" in figure
    assert "False accepts among the automated answers" in figure
    assert ">target 2 %</text>" in figure and ">approved threshold 0.950</text>" in figure
    svg = re.search(r"<svg[^>]*>", figure).group(0)
    assert "width=" not in svg.replace("stroke-width", "")
    points = re.findall(
        r'<g class="curve-point[^"]*" tabindex="0" role="img" aria-label="([^"]+)">'
        r"<title>([^<]+)</title>",
        figure,
    )
    assert len(points) == len(CURVE)
    label, title = points[1]
    assert (
        label
        == title
        == (
            "Score 0.950 or more: 80.95 % automated (170 labelled answers), 0 % false accepts "
            "among them, 95 % upper bound 1.75 %"
        )
    )
    row = re.search(r"<tr[^>]*>\s*<td[^>]*>0\.950</td>(.*?)</tr>", html, re.S).group(1)
    assert re.findall(r">([^<]+)</td>", row) == ["170", "80.95 %", "0.00 %", "1.75 %"]


def test_the_curve_ticks_are_round_and_a_single_score_is_said_to_be_one_point() -> None:
    """Issue 47, item 2: ticks at 0 / 2 / 4 … % (not 0.0 / 5.1 / 10.2 %); a judge whose
    labelled answers all have one score draws one point and says so."""
    chart = curve_chart(CURVE, target=0.02, tau=0.95)
    assert chart is not None
    assert [text for _, text in chart.y_ticks] == ["0 %", "2 %", "4 %", "6 %", "8 %"]
    assert [text for _, text in chart.x_ticks] == ["0 %", "25 %", "50 %", "75 %", "100 %"]
    single = curve_chart(
        [{"threshold": 0.5, "accepted": 170, "coverage": 1.0, "risk": 0.0588, "upper": 0.0977}],
        target=0.02,
        tau=None,
    )
    assert single is not None and len(single.points) == 1
    assert [text for _, text in single.y_ticks] == ["0 %", "5 %", "10 %"]
