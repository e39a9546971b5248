"""What a real model's limits need: a schema retry within the context budget, the
answer under review sent once, and a provider's finish reason kept."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart

from evidence_app.packets.packet_text import ANSWER_POINTER
from evidence_app.validation.services import validation_run
from tests.evidence_app.validation_helpers import ScriptedJudge, validating_task, verdict
from tests.factories import RunMessageFactory

pytestmark = pytest.mark.django_db

BUDGET = 60_000


def _request_chars(messages: list[ModelMessage]) -> int:
    """The characters of one request: every part's text content, replies included."""
    total = 0
    for message in messages:
        for part in message.parts:
            content = getattr(part, "content", "")
            total += len(content) if isinstance(content, str) else len(str(content))
    return total


def _filler(n: int) -> str:
    chunk = "Routine paragraph about office procedures and general matters.\n"
    return (chunk * (n // len(chunk) + 1))[:n]


def test_a_schema_retry_of_a_part_cut_to_fit_stays_within_the_budget(
    scripted_judge: ScriptedJudge, settings: Any
) -> None:
    """The first reply of every part is long prose without a verdict, so every part is
    retried with the failed reply and the correction: no request exceeds the budget."""
    settings.VALIDATOR_CONTEXT_CHARS = {scripted_judge.model().model_name: BUDGET}
    settings.VALIDATOR_SCHEMA_RETRIES = 2
    long_prose = "I think the answer is probably fine, because " * 200  # ~9,000 chars

    def reply(messages: list[ModelMessage]) -> str:
        retrying = isinstance(messages[-2], ModelResponse) if len(messages) > 1 else False
        return verdict("accepted") if retrying else long_prose

    scripted_judge.replies = [reply]
    task = validating_task(
        evidence=["The annual training budget per employee is 1,750 EUR.\n" + _filler(150_000)]
    )
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None
    assert len(snapshot.chunk_verdicts) >= 3
    assert snapshot.schema_retry_count == len(snapshot.chunk_verdicts)
    largest = max(_request_chars(call) for call in scripted_judge.calls)
    assert largest <= BUDGET
    retry = next(c for c in scripted_judge.calls if len(c) > 1)
    assert "this response had" in retry[1].parts[0].content  # the failed reply was cut


def test_the_answer_under_review_is_in_the_validator_input_once(
    scripted_judge: ScriptedJudge,
) -> None:
    """The trajectory's last message and the run's output point to the answer section;
    every tool result and every other message stays, in full."""
    answer = (
        "The annual training budget per employee is 1,750 EUR, and it may be spent on "
        "courses, conferences and certification fees approved by a manager."
    )
    results = [
        "The annual training budget per employee is 1,750 EUR.",
        "Courses, conferences and certification fees count; a manager approves them.",
    ]
    task = validating_task(answer=answer, evidence=results)
    run = task.runs.get()
    RunMessageFactory(run=run, index=0, role="user", content=task.request)
    RunMessageFactory(run=run, index=1, role="assistant", content="Let me read the policy.")
    RunMessageFactory(
        run=run, index=2, role="tool", content=results[0], payload={"tool_call_id": "c1"}
    )
    RunMessageFactory(run=run, index=3, role="assistant", content=answer)
    scripted_judge.replies = [verdict("accepted")]
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None
    sent = scripted_judge.calls[0][0].parts[1].content
    assert sent == snapshot.rendered_input
    assert sent.count(answer) == 1
    assert sent.index(answer) > sent.index("== ANSWER UNDER REVIEW")
    assert sent.count(ANSWER_POINTER) == 2  # the run's output and its last message
    assert "Let me read the policy." in sent
    for result in results:
        assert result in sent


@pytest.mark.parametrize("finish_reason", ["length", "content_filter"])
def test_a_validator_answer_cut_or_refused_is_a_validator_error_naming_why(
    scripted_judge: ScriptedJudge, finish_reason: str
) -> None:
    """A verdict the provider cut (``length``) or refused (``content_filter``) is never
    parsed, even when it holds a valid object: validator_error, the reason named. A cut
    one is asked once more with a larger output allowance (issue 37), a refused one
    not."""
    cut = ModelResponse(parts=[TextPart(verdict("accepted"))], finish_reason=finish_reason)
    scripted_judge.replies = [cut, cut]
    task = validating_task()
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None
    assert snapshot.status == "validator_error"
    assert f"The model stopped: {finish_reason}" in snapshot.error
    expected = 2 if finish_reason == "length" else 1
    assert snapshot.request_count == expected
    assert [r["finish_reason"] for r in snapshot.raw_responses] == [finish_reason] * expected
    task.refresh_from_db()
    assert task.status == "needs_review"
