"""O1–O5 and V1: the strict structured-output module and the result schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from evidence_app.validator.schema import STATUSES, ValidationResult
from evidence_app.validator.strict import (
    GENERIC_FEEDBACK,
    STAGE_JSON,
    STAGE_SCHEMA,
    parse_output,
    strict_request,
)

VALID = json.dumps({"status": "accepted", "score": 0.9, "reasoning": "supported"})
BASE = [ModelRequest(parts=[SystemPromptPart("judge"), UserPromptPart("the material")])]


def scripted(replies: list[Any]) -> tuple[FunctionModel, list[list[ModelMessage]]]:
    """A model answering with the scripted replies in order; records what it was sent."""
    seen: list[list[ModelMessage]] = []

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        reply = replies[len(seen) - 1]
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, ModelResponse):
            return reply
        return ModelResponse(parts=[TextPart(reply)])

    return FunctionModel(fn, model_name="scripted"), seen


def _texts(messages: list[ModelMessage]) -> str:
    out = []
    for message in messages:
        for part in message.parts:
            content = getattr(part, "content", "")
            out.append(content if isinstance(content, str) else str(content))
    return "\n".join(out)


def test_typo_status_then_valid_json_is_accepted_with_one_recorded_failure() -> None:
    """O1, O2, O4: one schema-validate failure recorded; the feedback is sent but not kept."""
    model, seen = scripted([json.dumps({"status": "acepted"}), VALID])
    outcome = strict_request(model, BASE, ValidationResult, retries=2)
    assert outcome.ok and outcome.value is not None
    assert outcome.value.status == "accepted" and outcome.value.passed
    assert [f.stage for f in outcome.failures] == [STAGE_SCHEMA]
    failure = outcome.failures[0]
    assert failure.path == "status" and failure.attempt == 1 and failure.cumulative_retries == 1
    # The retry request carried the failed response and the feedback...
    assert len(seen) == 2
    assert "schema-validate error at 'status'" in _texts(seen[1])
    # ...but the accepted exchange (what a caller stores) does not.
    assert "schema-validate" not in _texts(outcome.messages)
    assert len(outcome.messages) == len(BASE) + 1
    # Both requests are counted (no invisible retries).
    assert outcome.request_count == 2 and outcome.retry_count == 1
    assert [r.text for r in outcome.responses] == [json.dumps({"status": "acepted"}), VALID]
    assert outcome.input_tokens > 0 and outcome.output_tokens > 0


def test_same_schema_error_twice_stops_after_second_attempt() -> None:
    """O3: stuck-loop guard."""
    bad = json.dumps({"status": "maybe"})
    model, seen = scripted([bad, bad, VALID, VALID])
    outcome = strict_request(model, BASE, ValidationResult, retries=5)
    assert not outcome.ok
    assert outcome.stop_reason == "stuck_loop"
    assert len(seen) == 2
    assert [f.attempt for f in outcome.failures] == [1, 2]
    assert [f.cumulative_retries for f in outcome.failures] == [1, 2]


def test_different_errors_retry_until_budget_then_stop() -> None:
    """O1, O4: N retries then exhausted; each failure recorded with its stage."""
    model, seen = scripted(["not json", '{"status": 3}', "{broken", VALID])
    outcome = strict_request(model, BASE, ValidationResult, retries=2)
    assert outcome.stop_reason == "retries_exhausted"
    assert len(seen) == 3
    assert [f.stage for f in outcome.failures] == [STAGE_JSON, STAGE_SCHEMA, STAGE_JSON]
    assert outcome.request_count == 3


def test_json_fence_is_stripped_and_prose_without_json_is_a_parse_error() -> None:
    """O1: prompt-level JSON, a ```json fence tolerated, text with no object is a parse
    error."""
    assert parse_output(f"```json\n{VALID}\n```", ValidationResult).status == "accepted"
    assert parse_output(f"  {VALID}\n", ValidationResult).status == "accepted"
    model, _ = scripted(["Here you go: no verdict today", "Still thinking {not json}"])
    outcome = strict_request(model, BASE, ValidationResult, retries=1)
    assert not outcome.ok and outcome.failures[0].stage == STAGE_JSON


def test_the_verdict_is_found_in_prose_without_spending_a_retry() -> None:
    """Issue "An honest judge" (3): real models answer with prose around the JSON, or a
    fence after an explanation; the last complete object that validates is taken."""
    other = json.dumps({"status": "rejected", "score": 0.1, "reasoning": "draft"})
    texts = [
        f"Here you go: {VALID} Hope this helps.",
        f"Let me think.\n```json\n{VALID}\n```\nDone.",
        f"First draft: {other}\nOn reflection, the final verdict: {VALID}",
        f'Final: {VALID}\nExample of the format: {{"note": "not a verdict"}}',
        'Verdict {"claims": [{"id": "1"}], "status": "accepted", "score": 1, "reasoning": "x"}',
    ]
    for text in texts:
        model, seen = scripted([text])
        outcome = strict_request(model, BASE, ValidationResult, retries=2)
        assert outcome.ok and outcome.value is not None, text
        assert outcome.value.status == "accepted"
        assert outcome.failures == [] and len(seen) == 1


def test_an_object_that_does_not_validate_still_costs_a_retry() -> None:
    bad = json.dumps({"status": "acepted", "score": 0.9})
    model, seen = scripted([f"My verdict: {bad} (final)", VALID])
    outcome = strict_request(model, BASE, ValidationResult, retries=2)
    assert outcome.ok and len(seen) == 2
    assert outcome.failures[0].stage == STAGE_JSON  # the whole text is not JSON


def test_tool_call_turn_is_not_validated() -> None:
    """O5: a tool-call turn is not terminal; no schema failure is recorded for it."""
    model, seen = scripted(
        [ModelResponse(parts=[ToolCallPart("search_knowledge", {"query": "x"})])]
    )
    outcome = strict_request(model, BASE, ValidationResult, retries=2)
    assert outcome.stop_reason == "tool_call"
    assert outcome.failures == []
    assert len(seen) == 1


def test_feedback_builder_error_falls_back_to_generic_message() -> None:
    """O5: an error while building feedback never aborts the step."""
    model, seen = scripted(["nope", VALID])

    def broken_feedback(*args: Any) -> str:
        raise RuntimeError("boom")

    outcome = strict_request(model, BASE, ValidationResult, retries=2, feedback_fn=broken_feedback)
    assert outcome.ok
    assert GENERIC_FEEDBACK in _texts(seen[1])


def test_model_exception_is_returned_as_model_error(settings: Any) -> None:
    """V8: a provider error ends the step with the error kept, not an exception."""
    settings.MODEL_MAX_RETRIES = 0
    model, _ = scripted([ConnectionError("provider down")])
    outcome = strict_request(model, BASE, ValidationResult, retries=2)
    assert outcome.stop_reason == "model_error"
    assert "provider down" in outcome.error


def test_model_sent_passed_is_ignored() -> None:
    """V1: passed is derived, never taken from the model."""
    result = ValidationResult.model_validate({"status": "rejected", "passed": True})
    assert result.passed is False
    assert result.model_dump()["passed"] is False


@given(
    status=st.sampled_from(STATUSES),
    claimed=st.one_of(st.none(), st.booleans()),
    score=st.one_of(st.none(), st.floats(min_value=0, max_value=1)),
)
def test_passed_never_disagrees_with_status(
    status: str, claimed: bool | None, score: float | None
) -> None:
    """V1: property over every status and any model-sent `passed`."""
    data: dict[str, Any] = {"status": status, "score": score}
    if claimed is not None:
        data["passed"] = claimed
    result = ValidationResult.model_validate(data)
    assert result.passed == (status == "accepted")
    dumped = result.model_dump()
    assert dumped["passed"] == (dumped["status"] == "accepted")
    again = ValidationResult.model_validate(dumped)
    assert again.passed == (status == "accepted")


def test_status_outside_schema_is_a_schema_error() -> None:
    """V1: only the four statuses exist."""
    with pytest.raises(Exception, match="status"):
        parse_output(json.dumps({"status": "approved"}), ValidationResult)
