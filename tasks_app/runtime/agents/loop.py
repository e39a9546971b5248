"""AgentLoop: model + tools + a tool budget; our code owns the loop.

Each model request is a pydantic-ai direct request (``model_request_with_retry``).
Every message becomes a ``RunMessage``, every tool result a ``ToolEvidence`` row the
moment the tool returns, every model request a compact ``LLMRequestSnapshot``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import httpx
from django.db import InterfaceError, OperationalError
from pydantic_ai import exceptions as ai_exceptions
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters

from project.db import release_connection
from project.errors import DomainError
from project.llm.registry import model_request_with_retry, resolve_model
from project.untrusted import wrap_external
from tasks_app.runtime.agents.recorder import ModelCall, RunRecorder, RunTally
from tasks_app.runtime.agents.tools import ToolOutput, run_tool, tool_definitions
from tasks_app.runtime.models import RunKind, RunStatus
from tasks_app.workflow.fence import Fence, LeaseLost
from tasks_app.workflow.models import NO_USABLE_ANSWER

log = logging.getLogger(__name__)

FINISH_STOP = "stop"
FINISH_FINALIZED = "max_tool_iterations_finalized"
FINISH_BUDGET = "max_tool_iterations"
FINISH_ERROR = "error"
# A provider's finish reason (pydantic-ai's ModelResponse.finish_reason) that is kept as
# the run's own: the answer was cut, or the provider refused it.
PROVIDER_STOPS = ("length", "content_filter")

# Failures that come from outside our code and are expected in operation: a model that
# cannot be configured (e.g. no API key), a provider that still fails after the retries
# or answers with something unusable. One warning line and the reason stored on the run;
# any other exception is a bug and is logged with its traceback.
EXPECTED_RUN_ERRORS: tuple[type[BaseException], ...] = (
    DomainError,
    ai_exceptions.ModelAPIError,
    ai_exceptions.UnexpectedModelBehavior,
    httpx.TransportError,
    TimeoutError,
)

BUDGET_EXHAUSTED_PROMPT = (
    "The tool budget is exhausted; answer from the evidence you have. Do not ask for more "
    "tools. Say clearly what the evidence does not cover."
)


@dataclass
class AgentResult:
    run_id: int
    output_text: str
    finish_reason: str
    success: bool
    error: str = ""
    tool_iterations: int = 0

    @property
    def usable(self) -> bool:
        return bool(self.output_text.strip()) and self.output_text != NO_USABLE_ANSWER


def _text_of(response: ModelResponse) -> str:
    return "\n".join(p.content for p in response.parts if isinstance(p, TextPart)).strip()


def _final_answer(
    response: ModelResponse, text: str, warnings: list[str]
) -> tuple[str, str, bool, list[str]]:
    """The run's end on a turn without tool calls. A ``length`` or ``content_filter``
    finish of the provider is the run's finish reason (an empty answer fails with it)."""
    stop = response.finish_reason if response.finish_reason in PROVIDER_STOPS else None
    if not text:
        if stop:
            return "", stop, False, [*warnings, f"the model stopped: {stop}"]
        return "", "empty", False, ["the model returned an empty answer"]
    if stop:
        return (
            text,
            stop,
            True,
            [*warnings, f"the answer may be incomplete: the model stopped: {stop}"],
        )
    return text, FINISH_STOP, True, warnings


class AgentLoop:
    """Run one agent: ``run()`` creates a ``Run`` and records everything as it happens."""

    def __init__(
        self,
        *,
        model_name: str,
        system_prompt: str,
        tools: list[str] | tuple[str, ...],
        max_tool_iterations: int,
        fence: Fence | None = None,
        model_settings: dict[str, Any] | None = None,
    ) -> None:
        self.model_name = model_name
        self.system_prompt = system_prompt
        self.tools = list(tools)
        self.max_tool_iterations = max(0, int(max_tool_iterations))
        self.fence = fence
        self.model_settings = model_settings or {}

    def run(
        self,
        *,
        task_id: int,
        attempt_index: int,
        user_prompt: str,
        kind: str = RunKind.MAIN,
        node_id: str = "",
        node_role: str = "",
        graph_index: int = 0,
    ) -> AgentResult:
        """Run to an answer. Model and tool errors end the run as failed (evidence kept);
        ``LeaseLost`` is raised after marking the run, so the caller stops."""
        first = ModelRequest(
            parts=[SystemPromptPart(self.system_prompt), UserPromptPart(user_prompt)]
        )
        # The run and its first request's messages in one write.
        recorder = RunRecorder(
            first_request=first,
            task_id=task_id,
            attempt_index=attempt_index,
            kind=kind,
            model_name=self.model_name,
            fence=self.fence,
            node_id=node_id,
            node_role=node_role,
            graph_index=graph_index,
        )
        self._recorder = recorder
        self._model: Model | None = None
        self._tally = RunTally()
        try:
            output, reason, success, warnings = self._loop(recorder, user_prompt, first)
        except LeaseLost as exc:
            # Not a result: only the run's own bookkeeping, so the UI does not show it running.
            recorder.finish(
                status=RunStatus.FAILED,
                finish_reason="lease_lost",
                output_text="",
                tally=self._tally,
                error=f"Stopped: {exc}",
                fenced=False,
            )
            raise
        except (OperationalError, InterfaceError):
            # The database went away: not the run's fault and nothing can be recorded on
            # this connection; the attempt is recovered as a whole (attempt_run).
            raise
        except Exception as exc:
            return self._failed(recorder, exc)
        # The provider's refusal or cut, where the task's failure reason shows it.
        error = f"the model stopped: {reason}" if reason in PROVIDER_STOPS and not success else ""
        recorder.finish(
            status=RunStatus.COMPLETED if success else RunStatus.FAILED,
            finish_reason=reason,
            output_text=output,
            tally=self._tally,
            warnings=warnings,
            error=error,
        )
        return self._result(recorder, output, reason, success=success, error=error)

    def _failed(self, recorder: RunRecorder, exc: Exception) -> AgentResult:
        """A model or tool error ends the run as failed, its evidence kept."""
        run = recorder.run
        if isinstance(exc, EXPECTED_RUN_ERRORS):
            log.warning(
                "task %s attempt %s: run %s failed: %s",
                run.task_id,
                run.attempt_index,
                run.pk,
                exc,
            )
        else:
            log.exception(
                "task %s attempt %s: run %s crashed", run.task_id, run.attempt_index, run.pk
            )
        error = f"{type(exc).__name__}: {exc}"
        recorder.finish(
            status=RunStatus.FAILED,
            finish_reason=FINISH_ERROR,
            output_text="",
            tally=self._tally,
            error=error,
        )
        return self._result(recorder, "", FINISH_ERROR, success=False, error=error)

    def _result(
        self, recorder: RunRecorder, output: str, reason: str, *, success: bool, error: str
    ) -> AgentResult:
        return AgentResult(
            run_id=recorder.run.pk,
            output_text=output,
            finish_reason=reason,
            success=success,
            error=error,
            tool_iterations=self._tally.tool_iterations,
        )

    # --- internals ------------------------------------------------------------------

    def _request(self, messages: list[ModelMessage], *, offer_tools: bool) -> ModelResponse:
        recorder = self._recorder
        recorder.check()
        # One model object (and so one event loop and HTTP client) per run, not per call.
        if self._model is None:
            self._model = resolve_model(self.model_name)
        model = self._model
        parameters = ModelRequestParameters(
            function_tools=tool_definitions(self.tools) if offer_tools else []
        )
        started = time.monotonic()
        response: ModelResponse | None = None
        release_connection()  # pooled: nobody holds a connection while a model thinks
        try:
            response = model_request_with_retry(
                model,
                messages,
                parameters,
                settings=self.model_settings or None,  # type: ignore[arg-type]
            )
        finally:
            call = ModelCall(
                model=model,
                model_name=self.model_name,
                messages=messages,
                parameters=parameters,
                model_settings=self.model_settings,
                latency_ms=int((time.monotonic() - started) * 1000),
                response=response,
            )
            recorder.add_snapshot(call, with_response=True)
        self._tally.input_tokens += response.usage.input_tokens
        self._tally.output_tokens += response.usage.output_tokens
        return response

    def _loop(
        self, recorder: RunRecorder, user_prompt: str, first: ModelRequest
    ) -> tuple[str, str, bool, list[str]]:
        messages: list[ModelMessage] = [first]
        gathered: list[tuple[ToolCallPart, ToolOutput]] = []
        warnings: list[str] = []
        has_tools = bool(self.tools) and self.max_tool_iterations > 0
        while True:
            offer_tools = has_tools and self._tally.tool_iterations < self.max_tool_iterations
            response = self._request(messages, offer_tools=offer_tools)
            messages.append(response)
            calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
            text = _text_of(response)
            if not calls:
                return _final_answer(response, text, warnings)
            if not offer_tools:
                # Asked for tools that were not offered (budget 0): keep any text it gave.
                warnings.append("the model asked for tools that were not offered")
                if text:
                    return text, FINISH_STOP, True, warnings
                return "", "empty", False, warnings
            returns: list[ToolReturnPart] = []
            for call in calls:
                recorder.check()
                output = run_tool(call.tool_name, call.args)
                recorder.add_tool_result(call, output)
                gathered.append((call, output))
                returns.append(
                    ToolReturnPart(
                        tool_name=call.tool_name,
                        content=output.content,
                        tool_call_id=call.tool_call_id,
                    )
                )
            self._tally.tool_iterations += 1
            messages.append(ModelRequest(parts=list(returns)))
            if self._tally.tool_iterations >= self.max_tool_iterations:
                return self._finalize(recorder, user_prompt, gathered, warnings)

    def _finalize(
        self,
        recorder: RunRecorder,
        user_prompt: str,
        gathered: list[tuple[ToolCallPart, ToolOutput]],
        warnings: list[str],
    ) -> tuple[str, str, bool, list[str]]:
        """X3: the budget is spent. One no-tools call from the gathered evidence; the
        history is given as text so no provider sees tool calls without tool definitions."""
        evidence = "\n\n".join(
            f"Tool result {i} — {call.tool_name}({call.args_as_json_str()}):\n"
            + wrap_external(output.content, label=f"tool result {i} {call.tool_name}")
            for i, (call, output) in enumerate(gathered, start=1)
        )
        prompt = (
            f"{user_prompt}\n\n## Evidence gathered so far\n\n{evidence}\n\n"
            f"## Instruction\n\n{BUDGET_EXHAUSTED_PROMPT}"
        )
        final_request = ModelRequest(
            parts=[SystemPromptPart(self.system_prompt), UserPromptPart(prompt)]
        )
        recorder.add_message("user", prompt, {"part_kind": "user-prompt", "finalization": True})
        try:
            response = self._request([final_request], offer_tools=False)
        except (LeaseLost, OperationalError, InterfaceError):
            raise
        except Exception as exc:
            log.warning("finalization call failed: %s", exc)
            warnings.append(f"finalization call failed: {type(exc).__name__}: {exc}")
            return NO_USABLE_ANSWER, FINISH_BUDGET, False, warnings
        text = _text_of(response)
        if not text:
            warnings.append("finalization call returned no text")
            return NO_USABLE_ANSWER, FINISH_BUDGET, False, warnings
        return text, FINISH_FINALIZED, True, warnings
