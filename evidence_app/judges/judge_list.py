"""Every judge the team has, as the API lists it: the current default judge, the
candidate in shadow, and each judge (template version × model) with a
certified threshold or an accepted verdict in the last 30 days, with its certification,
approved threshold and drift state. Stored figures only, as the Trust page reads them
(``evidence_app.autoaccept.overview``); nothing here writes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings

from evidence_app.autoaccept.overview import JudgeAutoAccept, autoaccept_overview
from evidence_app.autoaccept.selectors import JudgeKey, ShadowReport, shadow_report
from evidence_app.models import AutoAcceptThreshold, ThresholdState
from evidence_app.validation.current_judge import active_shadow, current_judge
from evidence_app.validator.templates import get_template
from project.errors import DomainError

__all__ = [
    "JudgeEntry",
    "judges_list",
    "shadow_ready_at",
    "template_version_of",
    "threshold_shadow",
]


@dataclass(frozen=True)
class JudgeEntry:
    """One judge: whether it is the default or the candidate in shadow (``role``), and
    what the Trust page shows of its auto-accept (``overview``; None for a judge with
    no threshold row and no accepted verdict in the window)."""

    key: JudgeKey
    role: str  # "default", "shadow" or "" (neither)
    overview: JudgeAutoAccept | None


def template_version_of(name: str) -> str:
    """The version string of template ``name`` (its name when the file is gone)."""
    try:
        return get_template(name).version
    except DomainError:
        return name


def shadow_ready_at(row: AutoAcceptThreshold) -> datetime | None:
    """When a threshold in shadow may be approved (AUTOACCEPT_SHADOW_HOURS after its
    shadow started); None before its shadow starts."""
    if row.shadow_started_at is None:
        return None
    return row.shadow_started_at + timedelta(hours=settings.AUTOACCEPT_SHADOW_HOURS)


def _roles() -> dict[JudgeKey, str]:
    template, model = current_judge()
    roles = {JudgeKey(template_version_of(template), model): "default"}
    shadow = active_shadow()
    if shadow is not None:
        key = JudgeKey(template_version_of(shadow.template), shadow.model)
        roles.setdefault(key, "shadow")
    return roles


def judges_list() -> list[JudgeEntry]:
    """The default judge first, then the candidate in shadow, then every other judge by
    template version and model."""
    roles = _roles()
    overview = {judge.key: judge for judge in autoaccept_overview()}
    order = {"default": 0, "shadow": 1, "": 2}
    keys = sorted(set(roles) | set(overview), key=lambda k: (order[roles.get(k, "")], k))
    return [JudgeEntry(key=k, role=roles.get(k, ""), overview=overview.get(k)) for k in keys]


def threshold_shadow(row: AutoAcceptThreshold) -> ShadowReport | None:
    """What a threshold in shadow would have done so far (None outside its shadow)."""
    return shadow_report(row) if row.state == ThresholdState.SHADOW else None
