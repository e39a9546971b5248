"""Judging one attempt without storing anything: the prompt (the task, its history, the
evidence packet, earlier feedback) and the judge's answer, or a pair of judges' answers on
the same rendered prompt. The model is called outside any transaction."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from evidence_app.models import TaskAuditSettings, ValidationSnapshot
from evidence_app.packets.task_packet import TaskEvidencePacket, build_packet
from evidence_app.validation.current_judge import current_judge
from evidence_app.validation.task_settings import NO_SECOND_JUDGE
from evidence_app.validator.judging import Judgement, judge_prompt
from evidence_app.validator.prompt import (
    HistoryMessage,
    ValidationPrompt,
    build_prompt,
    format_feedback,
)
from evidence_app.validator.schema import ValidationResult
from evidence_app.validator.templates import TemplateVersion, get_template
from project.db import MARKER_ID, MARKER_TIME, Prepared, release_connection
from project.llm.registry import resolve_model
from tasks_app.records import Feedback, FeedbackAction, Run, RunKind, Task

log = logging.getLogger(__name__)


@functools.cache
def _prepared_feedback(*, before: bool) -> Prepared:
    """A task's feedback, oldest first, as plain values with the author's user name by
    a join (no model instances, compiled once); ``before`` adds a time bound."""
    feedback = Feedback.objects.in_effect().filter(task_id=MARKER_ID)
    markers: dict[str, Any] = {"task_id": MARKER_ID}
    if before:
        feedback = feedback.filter(created_at__lt=MARKER_TIME)
        markers["before"] = MARKER_TIME
    username = f"author__{get_user_model().USERNAME_FIELD}"
    return Prepared(
        feedback.order_by("created_at", "id").values_list(
            "created_at", "action", "comment", username
        ),
        **markers,
    )


def _history(task: Task, *, attempt_index: int, before: datetime | None) -> list[HistoryMessage]:
    """The task's conversation before this attempt's verdict: earlier attempts' answers
    and people's feedback and notes, oldest first."""
    messages: list[HistoryMessage] = []
    # Attempt 1 has no earlier answers (skip the query: one statement less per task).
    runs: Iterable[Run] = (
        ()
        if attempt_index <= 1
        else Run.objects.filter(
            task=task, attempt_index__lt=attempt_index, kind__in=[RunKind.MAIN, RunKind.SYNTHESIS]
        ).order_by("attempt_index", "graph_index", "id")
    )
    latest_answer: dict[int, Run] = {}
    for run in runs:
        if run.output_text:
            latest_answer[run.attempt_index] = run
    for index, run in sorted(latest_answer.items()):
        messages.append(
            HistoryMessage(
                at=run.finished_at or run.started_at,
                role=f"agent (answer of attempt {index})",
                text=run.output_text,
            )
        )
    labels = dict(FeedbackAction.choices)
    rows = (
        _prepared_feedback(before=False).rows(task_id=task.pk)
        if before is None
        else _prepared_feedback(before=True).rows(task_id=task.pk, before=before)
    )
    for at, action, comment, who in rows:
        text = comment or str(labels.get(action, action))
        messages.append(HistoryMessage(at=at, role=f"{who or 'someone'} ({action})", text=text))
    messages.sort(key=lambda m: m.at)
    return messages


def _previous_feedback(task: Task, *, attempt_index: int) -> list[str]:
    if attempt_index <= 1:
        return []  # no earlier verdicts
    earlier = (
        ValidationSnapshot.objects.originals()
        .filter(task=task, attempt_index__lt=attempt_index)
        .order_by("attempt_index", "created_at", "id")
        .only("attempt_index", "result", "status")
    )
    return [
        format_feedback(s.attempt_index, {"status": s.status, **(s.result or {})}) for s in earlier
    ]


@dataclass(frozen=True)
class JudgePlan:
    packet: TaskEvidencePacket
    answer: str
    template: TemplateVersion
    model_name: str


def judge_plan(
    packet: TaskEvidencePacket, answer: str, *, template: str | None, model: str | None
) -> JudgePlan:
    """The plan of a judgement by ``template`` and ``model``, each defaulting to the
    team's current judge (read once)."""
    if not template or not model:
        current_template, current_model = current_judge()
        template, model = template or current_template, model or current_model
    return JudgePlan(
        packet=packet, answer=answer, template=get_template(template), model_name=model
    )


def _prompt(plan: JudgePlan, *, task: Task, history_before: datetime | None) -> ValidationPrompt:
    return build_prompt(
        plan.packet,
        template=plan.template,
        answer=plan.answer,
        history=_history(task, attempt_index=plan.packet.attempt_index, before=history_before),
        previous_feedback=_previous_feedback(task, attempt_index=plan.packet.attempt_index),
    )


def judge(plan: JudgePlan, *, task: Task, history_before: datetime | None) -> Judgement:
    return _judge_prompt(_prompt(plan, task=task, history_before=history_before), plan, task=task)


def _judge_prompt(prompt: ValidationPrompt, plan: JudgePlan, *, task: Task) -> Judgement:
    """Judge an already rendered prompt with ``plan``'s model: both judges of a pair see
    the same system prompt and input."""
    try:
        model = resolve_model(plan.model_name)
    except Exception as exc:  # ModelConfigurationError or an import problem: V8
        reason = f"The validator model '{plan.model_name}' cannot be used: {exc}"
        return Judgement(
            result=ValidationResult.validator_error(reason),
            system_prompt=prompt.system,
            rendered_input=prompt.user,
            error=reason,
        )
    release_connection()  # pooled: nobody holds a connection while the validator thinks
    try:
        return judge_prompt(
            prompt,
            model=model,
            model_name=plan.model_name,
            retries=settings.VALIDATOR_SCHEMA_RETRIES,
        )
    except Exception as exc:  # never lose the attempt over a validator bug
        log.exception("validator %s crashed on task %s", plan.model_name, task.pk)
        reason = f"The validator failed: {type(exc).__name__}: {exc}"
        return Judgement(
            result=ValidationResult.validator_error(reason),
            system_prompt=prompt.system,
            rendered_input=prompt.user,
            error=reason,
        )


def second_model_name(own: TaskAuditSettings) -> str:
    """The second judge's model for a task of settings ``own``
    (``task_settings.settings_of``): its own ``second_model``, else
    VALIDATOR_SECOND_MODEL; "" for none (a task's "none" turns the setting off)."""
    name = (own.second_model or "").strip()
    if name.lower() == NO_SECOND_JUDGE:
        return ""
    return name or settings.VALIDATOR_SECOND_MODEL.strip()


@dataclass(frozen=True)
class JudgePair:
    """The first judge's verdict and, when a second judge is configured, its own on the
    same prompt (None: no second judge)."""

    first: Judgement
    second: Judgement | None = None
    second_plan: JudgePlan | None = None


def judge_pair(plan: JudgePlan, *, task: Task, second_model: str) -> JudgePair:
    """Judge once per configured model on one rendered prompt. The calls run one after
    the other, outside any transaction: each releases the database connection first."""
    prompt = _prompt(plan, task=task, history_before=None)
    first = _judge_prompt(prompt, plan, task=task)
    if not second_model:
        return JudgePair(first)
    second_plan = replace(plan, model_name=second_model)
    return JudgePair(first, _judge_prompt(prompt, second_plan, task=task), second_plan)


def attempt_judge(
    *, task: Task, attempt_index: int, template: str | None = None, model: str | None = None
) -> Judgement:
    """Judge an attempt exactly as ``validation_run`` would (prompt, model, citation
    check, reconciliation) but store nothing and move nothing: for ``judge_bench`` and
    the judge gate. ``template`` and ``model`` default to the current judge."""
    packet = build_packet(task, attempt_index)
    plan = judge_plan(
        packet, packet.final_output or task.final_answer, template=template, model=model
    )
    return judge(plan, task=task, history_before=None)


def attempt_judge_pair(
    *,
    task: Task,
    attempt_index: int,
    second_model: str,
    template: str | None = None,
    model: str | None = None,
) -> tuple[Judgement, Judgement]:
    """``attempt_judge`` with a second judge on the same rendered prompt, as
    ``validation_run`` would judge it; stores nothing: for ``judge_bench``."""
    if not second_model.strip():
        raise ValueError("attempt_judge_pair needs a second model")
    packet = build_packet(task, attempt_index)
    plan = judge_plan(
        packet, packet.final_output or task.final_answer, template=template, model=model
    )
    pair = judge_pair(plan, task=task, second_model=second_model)
    assert pair.second is not None  # a second model was named
    return pair.first, pair.second


def judge_again(
    original: ValidationSnapshot, *, template: str, model: str
) -> tuple[JudgePlan, Judgement]:
    """Judge the stored attempt of ``original`` again with ``template`` and ``model``, on
    the history the original saw (nothing said after it was made)."""
    task = original.task
    packet = build_packet(task, original.attempt_index)
    answer = packet.final_output or (
        task.final_answer if original.attempt_index == task.attempt_count else ""
    )
    plan = JudgePlan(
        packet=packet, answer=answer, template=get_template(template), model_name=model
    )
    if not answer.strip():
        reason = "The stored attempt has no answer to validate."
        judgement = Judgement(
            result=ValidationResult.validator_error(reason),
            system_prompt="",
            rendered_input="",
            error=reason,
        )
        return plan, judgement
    return plan, judge(plan, task=task, history_before=original.created_at)
