"""The model requests operators inspect: the agent's, one ``LLMRequestSnapshot``
per request, and the validator's, whose requests (schema retries and parts included)
are recorded on their ``ValidationSnapshot``. One list, newest first, in two queries for
the page's rows whatever the number of rows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.paginator import Page, Paginator
from django.db.models import CharField, F, QuerySet, Value
from django.shortcuts import get_object_or_404

from evidence_app.models import ValidationSnapshot
from tasks_app.records import LLMRequestSnapshot

AGENT = "agent"
VALIDATOR = "validator"
# Both sides of the union select these annotations, in this order.
_KEYS = ("r_source", "r_id", "r_at")


@dataclass(frozen=True)
class RequestRow:
    """One row of the list: an agent request or a validation's requests."""

    source: str  # AGENT or VALIDATOR
    item: Any  # the LLMRequestSnapshot (with its run) or the ValidationSnapshot

    @property
    def is_validator(self) -> bool:
        return self.source == VALIDATOR

    @property
    def task_id(self) -> int:
        return int(self.item.task_id if self.is_validator else self.item.run.task_id)


def _agent_keys(task_id: int | None, model: str) -> QuerySet[Any]:
    rows = LLMRequestSnapshot.objects.all()
    if task_id is not None:
        rows = rows.filter(run__task_id=task_id)
    if model:
        rows = rows.filter(model_name=model)
    return (
        rows.order_by()
        .annotate(r_source=Value(AGENT, CharField()), r_id=F("id"), r_at=F("created_at"))
        .values_list(*_KEYS)
    )


def _validator_keys(task_id: int | None, model: str) -> QuerySet[Any]:
    rows = ValidationSnapshot.objects.all()
    if task_id is not None:
        rows = rows.filter(task_id=task_id)
    if model:
        rows = rows.filter(model_name=model)
    return (
        rows.order_by()
        .annotate(r_source=Value(VALIDATOR, CharField()), r_id=F("id"), r_at=F("created_at"))
        .values_list(*_KEYS)
    )


def request_page(
    *, task_id: int | None = None, model: str = "", number: Any = 1, per_page: int = 25
) -> tuple[Page[Any], list[RequestRow]]:
    """One page of the agent's and the validator's requests, newest first, filtered by
    task and by exact model name; and the page's rows with their records."""
    keys = (
        _agent_keys(task_id, model)
        .union(_validator_keys(task_id, model), all=True)
        .order_by("-r_at", "-r_id")
    )
    page = Paginator(keys, per_page).get_page(number)
    wanted = list(page.object_list)
    agent_ids = [pk for source, pk, _ in wanted if source == AGENT]
    validator_ids = [pk for source, pk, _ in wanted if source == VALIDATOR]
    agents = (
        LLMRequestSnapshot.objects.defer("full_request").select_related("run").in_bulk(agent_ids)
    )
    validations = ValidationSnapshot.objects.without_bodies().in_bulk(validator_ids)
    rows = []
    for source, pk, _ in wanted:
        item = agents.get(pk) if source == AGENT else validations.get(pk)
        if item is not None:  # deleted between the two queries
            rows.append(RequestRow(source=source, item=item))
    return page, rows


def agent_request(request_id: int) -> LLMRequestSnapshot:
    """One agent request with its run and task, full request included (404 if none)."""
    return get_object_or_404(
        LLMRequestSnapshot.objects.select_related("run", "run__task"), pk=request_id
    )


def validator_requests(snapshot_id: int) -> ValidationSnapshot:
    """One validation with its raw responses and schema errors, without the rendered
    input and system prompt (their own pages show them) (404 if none)."""
    return get_object_or_404(
        ValidationSnapshot.objects.defer("rendered_input", "system_prompt").select_related(
            "task", "requested_by"
        ),
        pk=snapshot_id,
    )
