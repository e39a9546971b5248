"""Run the validator model over one attempt's prompt (single request or V11 parts).

No database writes here: ``judge_prompt`` returns a ``Judgement`` that
``evidence_app.validation.services`` stores as a ``ValidationSnapshot``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from django.conf import settings
from django.utils import timezone
from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart
from pydantic_ai.models import Model

from evidence_app.validator.chunking import (
    CHUNK_ADDENDUM,
    MIN_EVIDENCE_CHARS,
    PART_OVERHEAD_CHARS,
    combine_verified,
    context_budget,
    split_evidence,
)
from evidence_app.validator.citations import verify_result
from evidence_app.validator.prompt import ValidationPrompt
from evidence_app.validator.reconcile import reconcile
from evidence_app.validator.schema import SCHEMA_DESCRIPTION, ValidationResult
from evidence_app.validator.strict import OutputAllowance, StrictOutcome, strict_request
from project.costs import CostTotal, price_tokens

# Room kept free of the budget for a schema retry's copy of the failed verdict and its
# correction (the schema hint included), so a retry never exceeds the budget either.
RETRY_ROOM_CHARS = len(SCHEMA_DESCRIPTION) + 8_000
# A budget keeps at most a tenth for it, and a retry needs at least this much.
MIN_RETRY_ROOM_CHARS = 1_000

# The verdict's output allowance: a base for its fields and reasoning, and so much per
# claim and per requirement it lists (its claims and quotes); doubled once when the
# provider cuts the verdict, within the model's limit (VALIDATOR_MAX_OUTPUT_TOKENS).
VERDICT_BASE_TOKENS = 1_024
VERDICT_TOKENS_PER_CLAIM = 384

PART_SEPARATOR = "\n\n===== VALIDATOR REQUEST {index} OF {count} =====\n\n"


@dataclass
class Judgement:
    """Everything one validation produced, ready to be stored."""

    result: ValidationResult
    system_prompt: str
    rendered_input: str
    raw_responses: list[dict[str, Any]] = field(default_factory=list)
    schema_errors: list[dict[str, Any]] = field(default_factory=list)
    schema_retry_count: int = 0
    request_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: int = 0
    error: str = ""
    chunk_verdicts: list[dict[str, Any]] = field(default_factory=list)
    # Every request priced when it was made, retries and parts included.
    cost: CostTotal = field(default_factory=CostTotal)

    def add(
        self, outcome: StrictOutcome[ValidationResult], *, part: int | None, model_name: str
    ) -> CostTotal:
        """Count every request of an outcome, retries included (nothing unbilled);
        returns the outcome's own cost (a part's cost, for its chunk verdict)."""
        outcome_cost = CostTotal()
        for response in outcome.responses:
            cost = price_tokens(
                model_name,
                input_tokens=response.input_tokens,
                output_tokens=response.output_tokens,
                cache_read_tokens=response.cache_read_tokens,
                cache_write_tokens=response.cache_write_tokens,
                at=timezone.now(),
            )
            outcome_cost.add(cost)
            self.raw_responses.append(
                {**response.as_dict(), "part": part, "cost": None if cost is None else str(cost)}
            )
        for failure in outcome.failures:
            self.schema_errors.append({**failure.as_dict(), "part": part})
        self.schema_retry_count += outcome.retry_count
        self.request_count += outcome.request_count
        self.input_tokens += outcome.input_tokens
        self.output_tokens += outcome.output_tokens
        self.latency_ms += outcome.latency_ms
        self.cost.merge(outcome_cost)
        return outcome_cost


def _messages(system: str, user: str) -> list[ModelRequest]:
    return [ModelRequest(parts=[SystemPromptPart(content=system), UserPromptPart(content=user)])]


def _result_of(outcome: StrictOutcome[ValidationResult]) -> ValidationResult:
    if outcome.value is not None:
        return outcome.value
    return ValidationResult.validator_error(
        f"The validator gave no usable verdict ({outcome.stop_reason}): {outcome.error}"
    )


def output_allowance(prompt: ValidationPrompt) -> OutputAllowance:
    """What the verdict on ``prompt`` needs: claims (the answer's sentences) and
    requirements times a per-claim allowance, within the model's output limit; a cut
    verdict is asked once more with twice that (or the limit)."""
    limit = int(settings.VALIDATOR_MAX_OUTPUT_TOKENS)
    items = _statements(prompt.answer) + _questions(prompt.head)
    first = min(limit, VERDICT_BASE_TOKENS + VERDICT_TOKENS_PER_CLAIM * max(1, items))
    return OutputAllowance(first=first, retry=min(limit, 2 * first))


# Where one statement of an answer ends: a full stop, ! or ? before a space and a capital
# or a digit, or the end of a line.
_STATEMENT_END_RE = re.compile(r"[.!?](?=\s+[A-Z0-9])|\n")


def _statements(answer: str) -> int:
    """About how many claims an answer makes: its sentences and lines."""
    return sum(1 for part in _STATEMENT_END_RE.split(answer) if re.search(r"\w{2}", part))


def _questions(request: str) -> int:
    """About how many things a request asks: its questions and lines, at least one."""
    parts = re.split(r"\?|;|\n", request)
    return max(1, sum(1 for part in parts if re.search(r"\w{3}", part)))


def retry_room(budget: int, retries: int) -> int:
    """What a schema retry may add to a request of a ``budget``-character model."""
    if retries < 1:
        return 0
    return max(MIN_RETRY_ROOM_CHARS, min(RETRY_ROOM_CHARS, budget // 10))


class _Request(NamedTuple):
    """How each request of one validation is made: the model, its name (for the price)
    and the schema retries with the room they may add."""

    model: Model
    model_name: str
    retries: int
    retry_room: int


class _Asked(NamedTuple):
    verdict: ValidationResult
    outcome: StrictOutcome[ValidationResult]
    cost: CostTotal


def _ask(
    judgement: Judgement,
    prompt: ValidationPrompt,
    request: _Request,
    *,
    system: str,
    user: str,
    output: OutputAllowance,
    part: int | None,
) -> _Asked:
    """One request to the model (with its schema retries), the whole prompt's or one
    part's: counted in ``judgement``, its verdict's citations checked against the
    prompt's tool results."""
    messages = _messages(system, user)
    outcome = strict_request(
        request.model,
        messages,
        ValidationResult,
        retries=request.retries,
        schema_hint=SCHEMA_DESCRIPTION,
        retry_room=request.retry_room,
        output=output,
    )
    result = _result_of(outcome)
    cost = judgement.add(outcome, part=part, model_name=request.model_name)
    return _Asked(verify_result(result, prompt.citable), outcome, cost)


def judge_prompt(
    prompt: ValidationPrompt, *, model: Model, model_name: str, retries: int
) -> Judgement:
    """Judge in one request when the prompt (and room for a retry) fits the model's
    budget, else in parts."""
    budget = context_budget(model_name)
    room = retry_room(budget, retries)
    if prompt.total_chars + min(room, MIN_RETRY_ROOM_CHARS) <= budget:
        judgement = Judgement(
            result=ValidationResult.validator_error("not judged"),
            system_prompt=prompt.system,
            rendered_input=prompt.user,
        )
        asked = _ask(
            judgement,
            prompt,
            _Request(model, model_name, retries, min(room, budget - prompt.total_chars)),
            system=prompt.system,
            user=prompt.user,
            output=output_allowance(prompt),
            part=None,
        )
        judgement.result = reconcile(asked.verdict)
        judgement.error = asked.outcome.error
        return judgement
    return _judge_in_parts(
        prompt, model=model, model_name=model_name, budget=budget, retries=retries
    )


def _overflow(prompt: ValidationPrompt, *, system: str, fixed: int, budget: int) -> Judgement:
    reason = (
        f"Context overflow: the request, rules, history and answer (and room for a "
        f"retry) alone take {fixed} "
        f"characters of the validator's {budget}-character budget, leaving no room to "
        "judge the evidence even in parts. A person must review this answer."
    )
    return Judgement(
        result=reconcile(ValidationResult.validator_error(reason)),
        system_prompt=system,
        rendered_input=prompt.user,
        error=reason,
    )


def _judge_in_parts(
    prompt: ValidationPrompt, *, model: Model, model_name: str, budget: int, retries: int
) -> Judgement:
    system = prompt.system + CHUNK_ADDENDUM
    room = retry_room(budget, retries)
    fixed = len(system) + len(prompt.user_with("")) + PART_OVERHEAD_CHARS + room
    capacity = budget - fixed
    if capacity < MIN_EVIDENCE_CHARS:
        return _overflow(prompt, system=system, fixed=fixed, budget=budget)
    allowance = output_allowance(prompt)
    request = _Request(model, model_name, retries, room)
    parts = split_evidence(prompt.evidence, capacity)
    judgement = Judgement(
        result=ValidationResult.validator_error("not judged"),
        system_prompt=system,
        rendered_input="",
    )
    inputs: list[str] = []
    verdicts: list[ValidationResult] = []
    for part in parts:
        user = prompt.user_with(part.text, evidence_note=part.note)
        inputs.append(PART_SEPARATOR.format(index=part.index, count=part.count) + user)
        verdict, outcome, part_cost = _ask(
            judgement, prompt, request, system=system, user=user, output=allowance, part=part.index
        )
        verdicts.append(verdict)
        judgement.chunk_verdicts.append(
            {
                "part": part.index,
                "of": part.count,
                "evidence_start": part.start,
                "evidence_end": part.end,
                "input_chars": len(system) + len(user),
                "status": verdict.status,
                "result": verdict.model_dump(mode="json"),
                "stop_reason": outcome.stop_reason,
                "error": outcome.error,
                "cost": None if part_cost.value is None else str(part_cost.value),
            }
        )
        if outcome.error:
            judgement.error = (judgement.error + f"\npart {part.index}: {outcome.error}").strip()
    judgement.rendered_input = "".join(inputs)
    judgement.result = reconcile(combine_verified(verdicts, answer=prompt.answer))
    return judgement
