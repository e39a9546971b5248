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
    BETTER,
    judge_history,
    latest_shadow,
    recent_comparisons,
    shadow_figures,
)
from evidence_app.judges.forms import JudgeCandidateForm
from evidence_app.judges.gate import (
    MIN_COMPARED_CASES,
    MIN_REASON_CHARS,
    ShadowOfCurrentJudge,
    comparison_is_stale,
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


def _comparison_items(
    comparisons: list[JudgeComparison], current: tuple[str, str]
) -> list[dict[str, Any]]:
    """Each comparison with its figure rows and what the page may offer: ``stale`` (made
    against a judge that is no longer current: no action), ``too_few`` (fewer than
    MIN_COMPARED_CASES cases: no action), ``needs_reason`` (not found better: a reason
    and a second confirmation)."""
    items = []
    for c in comparisons:
        finished = c.finished and bool(c.figures)
        stale = comparison_is_stale(c, current)
        too_few = c.done < MIN_COMPARED_CASES
        items.append(
            {
                "c": c,
                "rows": figure_rows(c.figures) if finished else [],
                "stale": stale,
                "too_few": too_few,
                "can_default": finished and not stale and not too_few,
                "needs_reason": finished and c.figures.get("verdict") != BETTER,
            }
        )
    return items


def _context(
    *,
    compare_form: JudgeCandidateForm | None = None,
    shadow_form: JudgeCandidateForm | None = None,
    default_refusal: dict[str, Any] | None = None,
) -> dict[str, Any]:
    names = [t.name for t in list_templates()]
    template, model = current_judge()
    # The shadow form offers another judge than the current one (issue 47): another
    # template with the current model, so it never proposes shadowing the judge itself.
    others = [n for n in names if n != template]
    comparisons = recent_comparisons()
    shadow = latest_shadow()
    return {
        "current_template": template,
        "current_model": model,
        "history": judge_history(),
        "compare_form": compare_form
        or JudgeCandidateForm(template_names=names, initial_model=model),
        "shadow_form": shadow_form
        or JudgeCandidateForm(
            template_names=names,
            initial_model=model,
            initial={"template": others[0] if others else template},
            prefix="shadow",
        ),
        "default_refusal": default_refusal or {},
        "comparisons": _comparison_items(comparisons, (template, model)),
        "min_cases": MIN_COMPARED_CASES,
        "min_reason": MIN_REASON_CHARS,
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
    """Make a finished comparison's candidate the default judge (confirmed on the page;
    a candidate not found better also with a reason and a second confirmation);
    refused, with nothing changed, otherwise. Says what happened to shadow mode."""
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Nothing changed: confirm to make the candidate the default.")
        return redirect("ops_judge")
    note = request.POST.get("note", "").strip()[:2000]
    try:
        change = judge_default_make(
            comparison_id=comparison_id,
            chosen_by=request.user,
            note=note,
            override=request.POST.get("override") == "yes",
        )
    except DomainError as exc:
        # The page again with the form open and the typed reason kept (issue 47).
        messages.error(request, f"Nothing changed: {exc.message}")
        refusal = {"comparison": comparison_id, "note": note}
        return render_page(
            request,
            "evidence_app/ops_judge.html",
            _context(default_refusal=refusal),
            status=exc.http_status,
        )
    chosen = change.default
    messages.success(
        request,
        f"{chosen.template} on {chosen.model} is now the judge of every new verdict "
        f"(from comparison #{comparison_id}).",
    )
    if change.shadow_restarted is not None:
        shadow = change.shadow_restarted
        messages.warning(
            request,
            f"Shadow mode restarted: {shadow.template} on {shadow.model} is now compared "
            "with the new judge; its figures start afresh.",
        )
    elif change.shadow_stopped is not None:
        shadow = change.shadow_stopped
        messages.warning(
            request,
            f"Shadow mode stopped: {shadow.template} on {shadow.model} is now the current "
            "judge, so there is nothing to compare it with. Start another candidate to "
            "compare again.",
        )
    return redirect("ops_judge")


@operator_required
@require_POST
def ops_judge_shadow(request: HttpRequest) -> HttpResponse:
    """Start a candidate in shadow (``op=start`` with the form) or stop it (``op=stop``)."""
    if request.POST.get("op") == "stop":
        if request.POST.get("confirm") != "yes":
            messages.error(request, "Nothing changed: confirm to stop shadow mode.")
            return redirect("ops_judge")
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
    except ShadowOfCurrentJudge as exc:
        # The current judge itself: said beside the form, the choice kept.
        form.add_error(None, exc.message)
        return render_page(
            request,
            "evidence_app/ops_judge.html",
            _context(shadow_form=form),
            status=exc.http_status,
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
