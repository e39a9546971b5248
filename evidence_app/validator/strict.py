"""Strict structured output (O1–O5), reusable by the validator and by agents.

``strict_request`` sends messages to a pydantic-ai ``Model``, parses the terminal text
turn as JSON into a pydantic type and, on a JSON-parse or schema error, re-prompts the
same model within the same step with the error, up to ``retries`` times.

- O2: the feedback message of a retry is ephemeral. It is sent, never returned in
  ``StrictOutcome.messages`` (the accepted exchange: the caller's messages plus the
  accepted response), so nothing that stores that transcript can store it.
- O3: two identical consecutive errors (same stage, path and message) stop at once.
- O4: every failure is a ``SchemaFailure`` (stage, path, message, attempt, cumulative
  retries), kept even when a later retry succeeds. Every request's raw response, token
  usage and latency is counted, retries included.
- O5: a turn that calls tools is not a terminal turn and is never validated; an error
  while building feedback falls back to a generic message.
- A response the provider cut (finish reason ``length``) or refused (``content_filter``)
  is never parsed: the outcome's ``stop_reason`` is ``finish_reason`` and its error
  names the reason. A cut response gets one more request with the larger output
  allowance ``OutputAllowance.retry`` when there is one (counted like any request); a
  refused one none.

Prompt-level JSON: we parse the response text ourselves instead of relying on
provider-native structured output, so this works on every provider, the
OpenAI-compatible local servers and the offline models alike. Real models wrap the JSON
in a ```json fence or in prose ("Here is my verdict: {...}"): when the whole text is not
the object, the last complete JSON object inside it that validates is taken, before a
retry is spent.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

from pydantic import BaseModel, ValidationError
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.settings import ModelSettings

from project.llm.registry import model_request_with_retry

STAGE_JSON = "json-parse"
STAGE_SCHEMA = "schema-validate"

GENERIC_FEEDBACK = (
    "Your previous response could not be used: it was not a valid JSON object of the "
    "required shape. Reply again with only the JSON object, no other text."
)

# How a failed response is marked when its copy in a retry is cut to ``retry_room``.
ECHO_CUT_NOTE = "\n[... cut here: this response had {count} characters]"

RequestFn = Callable[[Model, list[ModelMessage], ModelRequestParameters], ModelResponse]


@dataclass(frozen=True)
class SchemaFailure:
    """One failed parse."""

    stage: str
    path: str
    message: str
    attempt: int
    cumulative_retries: int

    def signature(self) -> tuple[str, str, str]:
        return (self.stage, self.path, self.message)

    def as_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "path": self.path,
            "message": self.message,
            "attempt": self.attempt,
            "cumulative_retries": self.cumulative_retries,
        }


@dataclass
class RawResponse:
    """What one request returned, kept verbatim for the snapshot."""

    attempt: int
    text: str
    tool_calls: list[dict[str, Any]]
    model_name: str
    input_tokens: int
    output_tokens: int
    latency_ms: int
    # Priced by the caller, who knows the configured model name.
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # The provider's finish reason (pydantic-ai's ModelResponse.finish_reason), if given.
    finish_reason: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "attempt": self.attempt,
            "text": self.text,
            "tool_calls": self.tool_calls,
            "model_name": self.model_name,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "latency_ms": self.latency_ms,
            "finish_reason": self.finish_reason,
        }


@dataclass
class StrictOutcome[T: BaseModel]:
    """The result of a strict request. ``value`` is None unless ``ok``."""

    value: T | None = None
    # "ok" | "retries_exhausted" | "stuck_loop" | "model_error" | "tool_call"
    # | "finish_reason" (the provider's length or content_filter)
    stop_reason: str = ""
    error: str = ""
    failures: list[SchemaFailure] = field(default_factory=list)
    responses: list[RawResponse] = field(default_factory=list)
    # The accepted exchange only: the caller's messages and the accepted response.
    messages: list[ModelMessage] = field(default_factory=list)
    latency_ms: int = 0

    @property
    def ok(self) -> bool:
        return self.value is not None

    @property
    def request_count(self) -> int:
        return len(self.responses)

    @property
    def retry_count(self) -> int:
        """Re-prompts sent after a failure (each one a billed request)."""
        return max(0, len(self.responses) - 1)

    @property
    def input_tokens(self) -> int:
        return sum(r.input_tokens for r in self.responses)

    @property
    def output_tokens(self) -> int:
        return sum(r.output_tokens for r in self.responses)


class OutputParseError(Exception):
    def __init__(self, stage: str, path: str, message: str) -> None:
        super().__init__(f"{stage} at {path}: {message}")
        self.stage = stage
        self.path = path
        self.message = message


_FENCE_RE = re.compile(r"^```[a-zA-Z0-9_-]*[ \t]*\n(?P<body>.*)\n```$", re.DOTALL)


def response_text(response: ModelResponse) -> str:
    return "".join(part.content for part in response.parts if isinstance(part, TextPart))


def is_terminal(response: ModelResponse) -> bool:
    """A turn that calls tools is intermediate, never validated."""
    return not any(isinstance(part, ToolCallPart) for part in response.parts)


def parse_output[T: BaseModel](text: str, output_type: type[T]) -> T:
    """Parse ``text`` into ``output_type``: the whole text as JSON (optionally in a
    ```json fence), else the last complete JSON object inside it (in prose or a fence,
    as real models answer) that validates.

    Raises ``OutputParseError`` with stage ``json-parse`` or ``schema-validate`` (the
    error of the whole text) when no object in it validates.
    """
    try:
        return _parse_whole(text, output_type)
    except OutputParseError as whole_error:
        for data in reversed(embedded_objects(text)):
            try:
                return output_type.model_validate(data)
            except ValidationError:
                continue
        raise whole_error from None


def embedded_objects(text: str) -> list[dict[str, Any]]:
    """The complete top-level JSON objects in ``text``, in order (objects nested in an
    object found are part of it, not found again)."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    at = text.find("{")
    while at != -1:
        try:
            data, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            at = text.find("{", at + 1)
            continue
        if isinstance(data, dict):
            found.append(data)
        at = text.find("{", end)
    return found


def _parse_whole[T: BaseModel](text: str, output_type: type[T]) -> T:
    body = text.strip()
    fenced = _FENCE_RE.match(body)
    if fenced:
        body = fenced.group("body").strip()
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise OutputParseError(
            STAGE_JSON, f"line {exc.lineno} column {exc.colno}", exc.msg
        ) from None
    try:
        return output_type.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_input=False)
        paths = [".".join(str(p) for p in err["loc"]) or "$" for err in errors]
        message = "; ".join(
            f"{path}: {err['msg']}" for path, err in zip(paths, errors, strict=True)
        )
        return _raise_schema(paths[0] if paths else "$", message)


def _raise_schema(path: str, message: str) -> Any:
    raise OutputParseError(STAGE_SCHEMA, path, message)


def build_feedback(failure: SchemaFailure, schema_hint: str) -> str:
    """The retry message. Only parser-produced text is quoted, never model or tool text."""
    hint = f"\nThe required shape is:\n{schema_hint}" if schema_hint else ""
    return (
        f"Your previous response could not be used ({failure.stage} error at "
        f"'{failure.path}': {failure.message}). Reply again with only the corrected JSON "
        f"object, no other text.{hint}"
    )


def default_request(
    model: Model, messages: list[ModelMessage], parameters: ModelRequestParameters
) -> ModelResponse:
    """The model layer's request helper: timeouts, backoff on transient errors."""
    return model_request_with_retry(model, messages, parameters)


def _raw_response(response: ModelResponse, *, attempt: int, elapsed: int) -> RawResponse:
    return RawResponse(
        attempt=attempt,
        text=response_text(response),
        tool_calls=[
            {"tool_name": p.tool_name, "args": p.args_as_dict()}
            for p in response.parts
            if isinstance(p, ToolCallPart)
        ],
        model_name=response.model_name or "",
        input_tokens=response.usage.input_tokens or 0,
        output_tokens=response.usage.output_tokens or 0,
        latency_ms=elapsed,
        cache_read_tokens=response.usage.cache_read_tokens or 0,
        cache_write_tokens=response.usage.cache_write_tokens or 0,
        finish_reason=response.finish_reason or "",
    )


@dataclass(frozen=True)
class OutputAllowance:
    """Output tokens a request may use (``max_tokens``), and a larger allowance for one
    more request when the provider cuts the answer at the first (0: no such retry)."""

    first: int
    retry: int = 0

    def after_cut(self, current: int) -> int | None:
        """The allowance of the one retry after a cut at ``current``, if any."""
        return self.retry if current == self.first and self.retry > self.first else None


def _unfinished_error(response: ModelResponse, allowances: Sequence[int] = ()) -> str:
    """The error of a response the provider cut or refused, else ""."""
    if response.finish_reason == "length":
        at = " and then at ".join(f"{n} output tokens" for n in allowances)
        limit = f" ({at})" if at else ""
        again = " twice" if len(allowances) > 1 else ""
        return f"The model stopped: length{again} (its answer was cut at its output limit{limit})."
    if response.finish_reason == "content_filter":
        return "The model stopped: content_filter (the provider refused the answer)."
    return ""


class StrictOptions(TypedDict, total=False):
    """How ``strict_request`` asks and retries, besides the retry count.

    ``schema_hint`` describes the expected shape to ``feedback_fn``, which writes a
    retry's correction (``build_feedback`` by default); ``parameters`` are the request's
    and ``request_fn`` replaces the default request. ``output`` sets each request's output
    allowance (``max_tokens``) and the larger one of the one retry a cut answer gets (the
    default request only; a ``request_fn`` chooses its own). ``retry_room`` (characters)
    bounds what a retry adds to the messages: the copy of the failed response plus the
    correction (``fit_retry``)."""

    schema_hint: str
    parameters: ModelRequestParameters | None
    request_fn: RequestFn | None
    feedback_fn: Callable[[SchemaFailure, str], str]
    retry_room: int | None
    output: OutputAllowance | None


def strict_request[T: BaseModel](
    model: Model,
    messages: Sequence[ModelMessage],
    output_type: type[T],
    *,
    retries: int,
    **options: Unpack[StrictOptions],
) -> StrictOutcome[T]:
    """Request a terminal answer and parse it into ``output_type`` (O1–O5), retrying a
    schema failure up to ``retries`` times (``StrictOptions``: how).

    A correction longer than ``retry_room`` becomes the generic one, and the failed
    response's copy is cut to what is left, so a caller that keeps ``retry_room`` free of
    its context budget never exceeds it.

    Never raises for model or parse errors: they end in an outcome with ``stop_reason``
    and ``error`` set, so the caller can record them.
    """
    return _StrictLoop(model, list(messages), output_type, retries, options).run()


class _StrictLoop[T: BaseModel]:
    """One strict request's requests: the base messages, then (on a retry) the failed
    response and the ephemeral feedback, rebuilt each time so feedback never
    accumulates."""

    def __init__(
        self,
        model: Model,
        base: list[ModelMessage],
        output_type: type[T],
        retries: int,
        options: StrictOptions,
    ) -> None:
        self.model = model
        self.base = base
        self.output_type = output_type
        self.retries = retries
        self.options = options
        self.params = options.get("parameters") or ModelRequestParameters()
        self.output = options.get("output")
        self.allowances: list[int] = [self.output.first] if self.output else []
        self.outcome: StrictOutcome[T] = StrictOutcome()
        self.pending = list(base)
        self.attempt = 0

    def run(self) -> StrictOutcome[T]:
        while True:
            self.attempt += 1
            response = self._request()
            if response is None:
                return self.outcome
            if self._cut_with_room_left(response):
                continue
            if self._unfinished(response):
                return self.outcome
            try:
                value = parse_output(response_text(response), self.output_type)
            except OutputParseError as exc:
                if self._retry_after(exc, response):
                    continue
                return self.outcome
            self.outcome.value = value
            self.outcome.stop_reason = "ok"
            self.outcome.messages = [*self.base, response]
            return self.outcome

    def _stop(self, reason: str, error: str) -> None:
        self.outcome.stop_reason = reason
        self.outcome.error = error

    def _request(self) -> ModelResponse | None:
        """The next response, counted; None (the outcome says why) on a model error."""
        started = time.monotonic()
        try:
            request_fn = self.options.get("request_fn")
            response = _send(request_fn, self.model, self.pending, self.params, self.allowances)
        except Exception as exc:  # provider error, timeout, configuration error
            self.outcome.latency_ms += int((time.monotonic() - started) * 1000)
            self._stop("model_error", f"{type(exc).__name__}: {exc}")
            return None
        elapsed = int((time.monotonic() - started) * 1000)
        self.outcome.latency_ms += elapsed
        self.outcome.responses.append(
            _raw_response(response, attempt=self.attempt, elapsed=elapsed)
        )
        return response

    def _cut_with_room_left(self, response: ModelResponse) -> bool:
        """Cut at its output limit with a larger allowance left: the same request once
        more, with room for the whole verdict (the cut response is counted and priced
        like any other)."""
        output, allowances = self.output, self.allowances
        larger = output.after_cut(allowances[-1]) if output and allowances else None
        if response.finish_reason == "length" and larger is not None:
            allowances.append(larger)
            return True
        return False

    def _unfinished(self, response: ModelResponse) -> bool:
        unfinished = _unfinished_error(response, self.allowances)
        if unfinished:
            # Cut or refused: whatever JSON it holds is not the model's whole verdict.
            self._stop("finish_reason", unfinished)
            return True
        if not is_terminal(response):
            self._stop(
                "tool_call", "The model asked to call tools instead of giving its final answer."
            )
            return True
        return False

    def _retry_after(self, exc: OutputParseError, response: ModelResponse) -> bool:
        """Record the failure; set up the retry (True) or stop (False: stuck, or out of
        retries)."""
        outcome = self.outcome
        failure = SchemaFailure(
            stage=exc.stage,
            path=exc.path,
            message=exc.message,
            attempt=self.attempt,
            cumulative_retries=len(outcome.failures) + 1,
        )
        previous = outcome.failures[-1] if outcome.failures else None
        outcome.failures.append(failure)
        if previous is not None and previous.signature() == failure.signature():
            self._stop(
                "stuck_loop",
                f"Stopped retrying: the same {failure.stage} error twice in a row "
                f"({failure.path}: {failure.message}).",
            )
            return False
        retries = self.retries
        # A cut's retry is no schema retry.
        if self.attempt - max(0, len(self.allowances) - 1) > retries:
            self._stop(
                "retries_exhausted",
                f"Output still invalid after {retries} retr{'y' if retries == 1 else 'ies'}: "
                f"{failure.stage} at {failure.path}: {failure.message}",
            )
            return False
        feedback_fn = self.options.get("feedback_fn", build_feedback)
        try:
            feedback = feedback_fn(failure, self.options.get("schema_hint", ""))
        except Exception:  # O5: never abort the step over a feedback message
            feedback = GENERIC_FEEDBACK
        feedback, echo = fit_retry(response, feedback, self.options.get("retry_room"))
        self.pending = [*self.base, echo, ModelRequest(parts=[UserPromptPart(content=feedback)])]
        return True


def _send(
    request_fn: RequestFn | None,
    model: Model,
    messages: list[ModelMessage],
    params: ModelRequestParameters,
    allowances: list[int],
) -> ModelResponse:
    if request_fn is not None:
        return request_fn(model, messages, params)
    if not allowances:
        return default_request(model, messages, params)
    allowance = ModelSettings(max_tokens=allowances[-1])
    return model_request_with_retry(model, messages, params, settings=allowance)


def fit_retry(
    response: ModelResponse, feedback: str, retry_room: int | None
) -> tuple[str, ModelResponse]:
    """The correction and the failed response's copy for a retry, together within
    ``retry_room`` characters (unbounded when it is None)."""
    if retry_room is None:
        return feedback, response
    if len(feedback) > retry_room:
        feedback = GENERIC_FEEDBACK[:retry_room]
    room = retry_room - len(feedback)
    text = response_text(response)
    if len(text) <= room and len(response.parts) == 1:
        return feedback, response
    note = ECHO_CUT_NOTE.format(count=len(text))
    kept = max(0, room - len(note))
    cut = (text[:kept] + note)[:room] if len(text) > room else text
    return feedback, ModelResponse(
        parts=[TextPart(cut)], model_name=response.model_name, usage=response.usage
    )
