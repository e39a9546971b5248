"""Model resolution, display names and request retry/timeout (X6, X7)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic_ai.exceptions import ModelHTTPError, ModelRequestTimeout
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel

from project.llm.registry import (
    ModelConfigurationError,
    display_model_name,
    is_transient_error,
    model_request_with_retry,
    register_model,
    resolve_model,
    unregister_model,
)

MESSAGES = [ModelRequest(parts=[UserPromptPart("hello")])]


@pytest.fixture
def fast_retries(settings: Any) -> None:
    settings.MODEL_RETRY_BASE_DELAY_SECONDS = 0
    settings.MODEL_MAX_RETRIES = 3


def failing_then_ok(failures: list[Exception]) -> tuple[FunctionModel, list[int]]:
    calls: list[int] = []

    def fn(messages: list[Any], info: AgentInfo) -> ModelResponse:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(fn, model_name="scripted"), calls


def test_registered_model_is_resolved_and_unregistered() -> None:
    """X6: tests register scripted models by name."""
    model = FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("x")]), model_name="s")
    register_model("test:scripted", lambda: model)
    try:
        assert resolve_model("test:scripted") is model
    finally:
        unregister_model("test:scripted")
    with pytest.raises(ModelConfigurationError):
        resolve_model("test:scripted")


def test_missing_api_key_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """X6: a provider without its API key is a clear configuration error, not a crash."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelConfigurationError, match="OPENAI_API_KEY"):
        resolve_model("openai:gpt-4.1")


@pytest.mark.parametrize("name", ["nosuchprovider:model", "gpt-4.1", "", "offline:nobody"])
def test_unknown_model_names_are_configuration_errors(name: str) -> None:
    """X6: unknown providers and names are refused with a message."""
    with pytest.raises(ModelConfigurationError):
        resolve_model(name)


def test_compat_model_points_at_the_configured_base_url(settings: Any) -> None:
    """X6: compat:<m> is an OpenAI-compatible server (Ollama, vLLM, llama.cpp)."""
    settings.OPENAI_COMPAT_BASE_URL = "http://127.0.0.1:11434/v1"
    model = resolve_model("compat:llama3.1")
    assert isinstance(model, OpenAIChatModel)
    assert model.model_name == "llama3.1"
    assert "127.0.0.1:11434" in model.base_url


def test_offline_models_are_labelled_as_stand_ins() -> None:
    """X7: offline models are never presented as LLMs."""
    assert display_model_name("offline:judge") == "offline:judge (offline stand-in, not an LLM)"
    assert "offline stand-in" in display_model_name("offline:researcher")
    assert display_model_name("openai:gpt-4.1") == "openai:gpt-4.1"


def test_transient_errors_are_retried_then_succeed(fast_retries: None) -> None:
    """X6: 429 and 5xx are retried with backoff."""
    model, calls = failing_then_ok(
        [ModelHTTPError(429, "scripted"), ModelHTTPError(503, "scripted")]
    )
    response = model_request_with_retry(model, MESSAGES)
    assert response.parts == [TextPart("done")]
    assert len(calls) == 3


def test_permanent_error_is_raised_at_once(fast_retries: None) -> None:
    """X6: a 400 (bad request) is not retried."""
    model, calls = failing_then_ok([ModelHTTPError(400, "scripted")])
    with pytest.raises(ModelHTTPError):
        model_request_with_retry(model, MESSAGES)
    assert len(calls) == 1


def test_retries_are_bounded(settings: Any) -> None:
    """X6: after MODEL_MAX_RETRIES the transient error is raised."""
    settings.MODEL_RETRY_BASE_DELAY_SECONDS = 0
    settings.MODEL_MAX_RETRIES = 2
    model, calls = failing_then_ok([ModelHTTPError(500, "scripted") for _ in range(5)])
    with pytest.raises(ModelHTTPError):
        model_request_with_retry(model, MESSAGES)
    assert len(calls) == 3


def test_backoff_grows_exponentially(settings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """X6: the waits between retries double."""
    settings.MODEL_RETRY_BASE_DELAY_SECONDS = 0.01
    settings.MODEL_MAX_RETRIES = 3
    sleeps: list[float] = []
    monkeypatch.setattr("project.llm.registry.time.sleep", sleeps.append)
    model, _ = failing_then_ok([ModelHTTPError(502, "scripted") for _ in range(3)])
    model_request_with_retry(model, MESSAGES)
    assert sleeps == pytest.approx([0.01, 0.02, 0.04])


def test_slow_model_times_out(settings: Any) -> None:
    """X6: a request longer than MODEL_TIMEOUT_SECONDS is cut off (and retried as transient)."""
    settings.MODEL_TIMEOUT_SECONDS = 0.2
    settings.MODEL_MAX_RETRIES = 0

    async def slow(messages: list[Any], info: AgentInfo) -> ModelResponse:
        import asyncio

        await asyncio.sleep(2)
        return ModelResponse(parts=[TextPart("late")])

    started = time.monotonic()
    with pytest.raises(ModelRequestTimeout):
        model_request_with_retry(FunctionModel(slow, model_name="slow"), MESSAGES)
    assert time.monotonic() - started < 1.5
    assert is_transient_error(ModelRequestTimeout("slow", 0.2))


def test_offline_models_resolve_without_network() -> None:
    """X7: the embedded defaults resolve to local FunctionModels."""
    researcher = resolve_model("offline:researcher")
    judge = resolve_model("offline:judge")
    assert isinstance(researcher, FunctionModel) and researcher.model_name == "offline:researcher"
    assert isinstance(judge, FunctionModel)


def test_request_works_from_a_thread_that_runs_an_event_loop() -> None:
    """X6: a caller inside a running event loop (async code, Playwright) still gets its
    blocking request, run on a helper thread."""
    import asyncio

    model = FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("ok")]), model_name="s")

    async def caller() -> ModelResponse:
        return model_request_with_retry(model, MESSAGES)

    assert asyncio.run(caller()).parts == [TextPart("ok")]
