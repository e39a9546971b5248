"""Issue 47, item 5 (the smaller items), as view tests: the timeline names a shadow or
second judge's verdict; the judge page keeps a refused "make default" reason, offers
another judge than the current one for shadow mode and refuses the current one, and
asks before it stops shadow mode; the Audits list names the tasks of judged audits."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from evidence_app.models import JudgeDefault, ShadowJudge
from evidence_app.validation.current_judge import current_judge
from tests.audit_helpers import drawn_audit
from tests.factories import ValidationSnapshotFactory
from tests.ui.conftest import make_reviewable_task
from tests.ui.test_judge_page import _comparison, _figures
from tests.ui.test_trust_plain_words import text_of

pytestmark = pytest.mark.django_db


def test_the_timeline_names_the_shadow_and_second_judges_verdicts(
    client: Any, reviewer: Any, requester: Any
) -> None:
    """Issue 47, item 5: a shadow verdict is "attempt 1 shadow judge's verdict", not a
    second "attempt 1 validation" line; likewise the second judge's."""
    task = make_reviewable_task(requester)
    first = task.validations.get()
    for kind, model in (("shadow", "offline:shadow"), ("second", "offline:second")):
        ValidationSnapshotFactory(
            task=task,
            attempt_index=1,
            kind=kind,
            status="accepted",
            companion_of=first if kind == "second" else None,
            model_name=model,
        )
    client.force_login(reviewer)
    html = client.get(reverse("task_detail", args=[task.pk])).content.decode()
    timeline = text_of(html.split('id="timeline-panel"')[1].split("</section>")[0])
    assert timeline.count("attempt 1 validation:") == 1
    assert "attempt 1 shadow judge's verdict (offline:shadow; it never moves the task)" in (
        timeline.replace("&#x27;", "'")
    )
    assert "attempt 1 second judge's verdict (offline:second)" in timeline.replace("&#x27;", "'")


def test_a_refused_make_default_keeps_the_typed_reason(
    client: Any, operator: Any, settings: Any
) -> None:
    """Issue 47, item 5: a candidate not found better needs a long enough reason; when it
    is refused, the page comes back with the form open and the reason as typed."""
    settings.VALIDATOR_MODEL = "offline:judge"
    comparison = _comparison("succeeded", figures=_figures(1, 1))
    client.force_login(operator)
    response = client.post(
        reverse("ops_judge_default", args=[comparison.pk]),
        {"confirm": "yes", "override": "yes", "note": "looks fine"},
    )
    assert response.status_code == 422
    html = response.content.decode()
    assert "Nothing changed:" in html
    assert re.search(
        rf'<details class="make-default" id="make-default-{comparison.pk}"[^>]* open>', html
    )
    assert re.search(r'name="note"[^>]*>looks fine</textarea>', html)
    assert not JudgeDefault.objects.exists()


def test_the_shadow_form_offers_another_judge_and_refuses_the_current_one(
    client: Any, operator: Any, settings: Any
) -> None:
    """Issue 47, item 5: the shadow form's template is not the current judge's (it used
    to propose the judge itself); starting the current judge in shadow is refused with a
    clear error and starts nothing."""
    settings.VALIDATOR_MODEL = "offline:judge"
    template, model = current_judge()
    client.force_login(operator)
    html = client.get(reverse("ops_judge")).content.decode()
    form = html.split('id="shadow-start"')[1].split("</form>")[0]
    chosen = re.search(r'<option value="([^"]+)" selected>', form)
    assert chosen is not None and chosen.group(1) != template
    refused = client.post(
        reverse("ops_judge_shadow"),
        {"op": "start", "shadow-template": template, "shadow-model": model},
    )
    assert refused.status_code == 409
    assert f"{template} on {model} is the current judge" in refused.content.decode()
    assert not ShadowJudge.objects.exists()


def test_stopping_shadow_mode_asks_first_and_keeps_the_figures(
    client: Any, operator: Any, settings: Any
) -> None:
    """Issue 47, item 5: the page's stop is a confirmation, not one click; a stop without
    it changes nothing; after the stop the last run's figures stay on the page."""
    settings.VALIDATOR_MODEL = "offline:judge"
    client.force_login(operator)
    shadow_url = reverse("ops_judge_shadow")
    client.post(
        shadow_url, {"op": "start", "shadow-template": "terse", "shadow-model": "offline:judge"}
    )
    html = client.get(reverse("ops_judge")).content.decode()
    stop = html.split('id="shadow-stop"')[1].split("</details>")[0]
    assert "<summary>Stop shadow mode…</summary>" in stop
    assert 'name="confirm" value="yes"' in stop and "the figures so far stay" in stop
    one_click = client.post(shadow_url, {"op": "stop"}, follow=True).content.decode()
    assert "Nothing changed: confirm to stop shadow mode." in one_click
    assert ShadowJudge.objects.get().active
    stopped = client.post(shadow_url, {"op": "stop", "confirm": "yes"}, follow=True)
    page = stopped.content.decode()
    assert not ShadowJudge.objects.get().active
    assert "Last shadow:" in page and 'id="shadow-counts"' in page


def test_the_audits_list_names_judged_audits_tasks_and_hides_open_ones(
    client: Any, reviewer: Any
) -> None:
    """Issue 47, item 5 (and issue 43): an open audit is listed without its task's title
    (the auditor could look the task up); the audits this person judged are listed below
    with the task's title, linked, and their call."""
    judged = drawn_audit("accepted", title="Budget question judged")
    still_open = drawn_audit("accepted", title="Travel question open")
    client.force_login(reviewer)
    client.post(
        reverse("audit_detail", args=[judged.pk]),
        {"correct": "not_correct", "comment": "It is 1,800 EUR."},
    )
    html = client.get(reverse("audit_queue")).content.decode()
    assert f'id="audit-row-{still_open.pk}"' in html
    assert "Travel question open" not in html
    row = html.split(f'id="judged-row-{judged.pk}"')[1].split("</tr>")[0]
    assert "Budget question judged" in row and "not correct" in row
    assert reverse("task_detail", args=[judged.task.pk]) in row
