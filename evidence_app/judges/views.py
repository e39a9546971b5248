"""The judge page (operators): the current judge and its history, comparisons of a
candidate with the current judge on the labelled cases (the gate), making a finished
comparison's candidate the default, and shadow mode."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from evidence_app.judges.figures import (
    judge_history,
    latest_shadow,
    recent_comparisons,
    shadow_figures,
)
from evidence_app.judges.forms import JudgeCandidateForm
from evidence_app.judges.gate import (
    comparison_request,
    judge_default_make,
    shadow_start,
    shadow_stop,
)
from evidence_app.models import JudgeComparison
from evidence_app.validation.current_judge import current_judge
from evidence_app.validator.templates import list_templates
from project.errors import DomainError
from project.views import operator_required, render_fragment, render_page, wants_fragment

# The figures of a comparison, in the order of the table: (key, label).
FIGURE_ROWS = (
    ("accuracy", "Accuracy (verdict as labelled)"),
    ("false_accept", "False-accept rate (wrong or irrelevant answer accepted)"),
    ("false_reject", "False-reject rate (correct answer rejected)"),
    ("to_person", "Sent to a person"),
)


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f} %"


def share_text(share: dict[str, Any]) -> str:
    """'12.5 % (3/24; 95 % CI 2.7–32.4 %)', or '– (0 cases)'."""
    if not share["n"]:
        return "– (no case)"
    return (
        f"{_percent(share['estimate'])} ({share['k']}/{share['n']}; 95 % CI "
        f"{_percent(share['low'])[:-2]}–{_percent(share['high'])})"
    )


def figure_rows(figures: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(label, current judge, candidate) for each figure of a finished comparison."""
    return [
        (label, share_text(figures["baseline"][key]), share_text(figures["candidate"][key]))
        for key, label in FIGURE_ROWS
    ]


def _comparison_items(comparisons: list[JudgeComparison]) -> list[dict[str, Any]]:
    return [
        {"c": c, "rows": figure_rows(c.figures) if c.finished and c.figures else []}
        for c in comparisons
    ]


def _context(
    *, compare_form: JudgeCandidateForm | None = None, shadow_form: JudgeCandidateForm | None = None
) -> dict[str, Any]:
    names = [t.name for t in list_templates()]
    template, model = current_judge()
    comparisons = recent_comparisons()
    shadow = latest_shadow()
    return {
        "current_template": template,
        "current_model": model,
        "history": judge_history(),
        "compare_form": compare_form
        or JudgeCandidateForm(template_names=names, initial_model=model),
        "shadow_form": shadow_form
        or JudgeCandidateForm(template_names=names, initial_model=model, prefix="shadow"),
        "comparisons": _comparison_items(comparisons),
        "comparisons_pending": any(c.pending for c in comparisons),
        "shadow": shadow,
        "shadow_figures": shadow_figures(shadow) if shadow is not None else None,
    }


@operator_required
def ops_judge(request: HttpRequest) -> HttpResponse:
    """GET: the page (or, polled, its comparisons). POST: compare a candidate with the
    current judge; the comparison runs in a worker and its progress shows here."""
    if request.method == "POST":
        return _compare(request)
    context = _context()
    if wants_fragment(request, "judge-comparisons"):
        return render_fragment(request, "evidence_app/ops_judge.html#comparisons", context)
    return render_page(request, "evidence_app/ops_judge.html", context)


def _compare(request: HttpRequest) -> HttpResponse:
    names = [t.name for t in list_templates()]
    form = JudgeCandidateForm(request.POST, template_names=names)
    if not form.is_valid():
        return render_page(
            request, "evidence_app/ops_judge.html", _context(compare_form=form), status=422
        )
    data = form.cleaned_data
    try:
        with transaction.atomic():
            comparison = comparison_request(
                template=data["template"],
                model=data["model"],
                requested_by=request.user,
                case_filter=data["cases"],
            )
    except DomainError as exc:
        form.add_error("cases", exc.message)
        return render_page(
            request, "evidence_app/ops_judge.html", _context(compare_form=form), status=422
        )
    messages.success(
        request,
        f"Comparison #{comparison.pk} queued: {comparison.template} on {comparison.model} "
        f"against {comparison.baseline_template} on {comparison.baseline_model}, "
        f"{comparison.total} cases. Its progress shows below.",
    )
    return redirect("ops_judge")


@operator_required
@require_POST
def ops_judge_default(request: HttpRequest, comparison_id: int) -> HttpResponse:
    """Make a finished comparison's candidate the default judge (confirmed on the page);
    refused, with nothing changed, for any other comparison."""
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Nothing changed: confirm to make the candidate the default.")
        return redirect("ops_judge")
    try:
        chosen = judge_default_make(
            comparison_id=comparison_id,
            chosen_by=request.user,
            note=request.POST.get("note", "").strip()[:2000],
        )
    except DomainError as exc:
        messages.error(request, f"Nothing changed: {exc.message}")
        return redirect("ops_judge")
    messages.success(
        request,
        f"{chosen.template} on {chosen.model} is now the judge of every new verdict "
        f"(from comparison #{comparison_id}).",
    )
    return redirect("ops_judge")


@operator_required
@require_POST
def ops_judge_shadow(request: HttpRequest) -> HttpResponse:
    """Start a candidate in shadow (``op=start`` with the form) or stop it (``op=stop``)."""
    if request.POST.get("op") == "stop":
        try:
            stopped = shadow_stop(stopped_by=request.user)
        except DomainError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(
                request, f"Shadow mode stopped: {stopped.template} on {stopped.model}."
            )
        return redirect("ops_judge")
    names = [t.name for t in list_templates()]
    form = JudgeCandidateForm(request.POST, template_names=names, prefix="shadow")
    if not form.is_valid():
        return render_page(
            request, "evidence_app/ops_judge.html", _context(shadow_form=form), status=422
        )
    try:
        started = shadow_start(
            template=form.cleaned_data["template"],
            model=form.cleaned_data["model"],
            started_by=request.user,
        )
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"{started.template} on {started.model} now judges every new attempt in "
            "shadow; it moves no task.",
        )
    return redirect("ops_judge")
