"""Model resolution and model requests with timeout and retry.

A model is named by a string:

- ``offline:researcher`` / ``offline:judge``: the deterministic offline stand-ins;
- ``openai:<model>``, ``anthropic:<model>`` (any provider pydantic-ai knows) through
  ``pydantic_ai.models.infer_model``; the provider's API key comes from its usual
  environment variable;
- ``compat:<model>``: an OpenAI-compatible server (Ollama, vLLM, llama.cpp) at
  ``settings.OPENAI_COMPAT_BASE_URL``.

Every request goes through ``model_request_with_retry``, which wraps pydantic-ai's
direct API (``pydantic_ai.direct.model_request``) with a whole-request deadline and
exponential backoff on transient provider errors.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
from django.conf import settings as django_settings
from pydantic_ai import exceptions as ai_exceptions
from pydantic_ai.direct import model_request
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import Model, ModelRequestParameters, infer_model
from pydantic_ai.settings import ModelSettings

from project.errors import DomainError

log = logging.getLogger(__name__)

__all__ = [
    "ModelConfigurationError",
    "display_model_name",
    "is_offline_model",
    "is_transient_error",
    "model_request_with_retry",
    "register_model",
    "register_offline_model",
    "resolve_model",
    "unregister_model",
]

OFFLINE_PREFIX = "offline:"
COMPAT_PREFIX = "compat:"
# A provider asking us to wait longer than this is treated as if it said this.
MAX_BACKOFF_SECONDS = 60.0


class ModelConfigurationError(DomainError):
    """The configured model name cannot be used (unknown provider, missing API key)."""

    code = "model_configuration"
    http_status = 422


_registry: dict[str, Callable[[], Model]] = {}
_registry_lock = threading.Lock()


def register_model(name: str, factory: Callable[[], Model]) -> None:
    """Make ``resolve_model(name)`` return ``factory()`` (tests script models this way)."""
    with _registry_lock:
        _registry[name] = factory


def unregister_model(name: str) -> None:
    with _registry_lock:
        _registry.pop(name, None)


# The offline stand-ins are registered by the apps that own them, in
# ``AppConfig.ready``: the researcher by tasks_app, the judge by evidence_app.
_offline: dict[str, Callable[[], Model]] = {}


def register_offline_model(name: str, factory: Callable[[], Model]) -> None:
    """Register a deterministic offline model under an ``offline:`` name."""
    if not name.startswith(OFFLINE_PREFIX):
        raise ValueError(f"offline model names start with {OFFLINE_PREFIX!r}: {name!r}")
    with _registry_lock:
        _offline[name] = factory


def _offline_model(name: str) -> Model:
    with _registry_lock:
        factory = _offline.get(name)
        known = ", ".join(sorted(_offline)) or "none registered"
    if factory is None:
        raise ModelConfigurationError(f"Unknown offline model '{name}' (known: {known}).")
    return factory()


def _compat_model(name: str) -> Model:
    # The OpenAI SDK (a heavy import) loads only when a compat: model is asked for.
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415
    from pydantic_ai.providers.openai import OpenAIProvider  # noqa: PLC0415

    model_name = name.removeprefix(COMPAT_PREFIX).strip()
    if not model_name:
        raise ModelConfigurationError("compat: needs a model name, e.g. compat:llama3.1")
    provider = OpenAIProvider(
        base_url=django_settings.OPENAI_COMPAT_BASE_URL,
        api_key=django_settings.OPENAI_COMPAT_API_KEY,
    )
    return OpenAIChatModel(model_name, provider=provider)


def resolve_model(name: str) -> Model:
    """Return the pydantic-ai model for ``name``; bad names or missing keys raise
    ``ModelConfigurationError`` (a domain error, not a crash)."""
    name = (name or "").strip()
    if not name:
        raise ModelConfigurationError("No model name configured.")
    with _registry_lock:
        factory = _registry.get(name)
    if factory is not None:
        return factory()
    if name.startswith(OFFLINE_PREFIX):
        return _offline_model(name)
    if name.startswith(COMPAT_PREFIX):
        return _compat_model(name)
    if ":" not in name:
        raise ModelConfigurationError(
            f"Model name '{name}' has no provider prefix (use e.g. openai:gpt-4.1, "
            "anthropic:claude-sonnet-4-5, compat:<model> or offline:researcher)."
        )
    try:
        return infer_model(name)
    except ai_exceptions.UserError as exc:
        raise ModelConfigurationError(f"Model '{name}' cannot be used: {exc.message}") from exc
    except (ImportError, ValueError) as exc:
        raise ModelConfigurationError(f"Model '{name}' cannot be used: {exc}") from exc


def is_offline_model(name: str) -> bool:
    return (name or "").startswith(OFFLINE_PREFIX)


def display_model_name(name: str) -> str:
    """The name to show people; offline stand-ins are never presented as LLMs."""
    if is_offline_model(name):
        return f"{name} (offline stand-in, not an LLM)"
    return name


# --- Requests ------------------------------------------------------------------------------

_TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
_TRANSIENT_TYPES: tuple[type[BaseException], ...] = (
    ai_exceptions.ModelRateLimitError,
    ai_exceptions.ModelUnavailableError,
    ai_exceptions.ModelServerError,
    ai_exceptions.ModelConnectionError,
    ai_exceptions.ModelRequestTimeout,
    httpx.TransportError,
    ConnectionError,
    TimeoutError,
)


def is_transient_error(exc: BaseException) -> bool:
    """Rate limits, 5xx, connection problems and timeouts are worth retrying; a bad
    request, a refused key or a missing model are not."""
    if isinstance(
        exc, ai_exceptions.ModelRequestRejectedError | ai_exceptions.ModelQuotaExceededError
    ):
        return False
    if isinstance(exc, ai_exceptions.ModelHTTPError):
        return exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500
    return isinstance(exc, _TRANSIENT_TYPES)


def _close_loop(loop: asyncio.AbstractEventLoop, client: Any) -> None:
    """Close the model's HTTP client on its loop (so no socket is left open), then the
    loop. Runs when the model is garbage collected, which may happen inside another
    loop's run: then it does the work on a short helper thread."""

    def close() -> None:
        if loop.is_closed() or loop.is_running():
            return
        try:
            closer = getattr(client, "close", None)
            if callable(closer):
                result = closer()
                if inspect.isawaitable(result):
                    loop.run_until_complete(result)
            loop.run_until_complete(loop.shutdown_asyncgens())
        except Exception:
            log.debug("closing a model's event loop failed", exc_info=True)
        finally:
            loop.close()

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        close()
        return
    helper = threading.Thread(target=close, name="model-loop-close")
    helper.start()
    helper.join(timeout=10)


_loops_lock = threading.Lock()


def _loop_for(model: Model) -> tuple[asyncio.AbstractEventLoop, threading.Lock]:
    """The event loop of ``model``: one per model object, closed when the model is
    garbage collected (or at exit). A provider's HTTP client binds to the loop of its
    first request, so every request made with one model object (a retry, a validator
    schema retry) must run on that same loop; a loop per request broke the second one
    with "Event loop is closed". The lock keeps two threads off one loop."""
    with _loops_lock:
        entry = getattr(model, "_evidentia_loop", None)
        if entry is None or entry[0].is_closed():
            loop = asyncio.new_event_loop()
            entry = (loop, threading.Lock())
            model._evidentia_loop = entry  # type: ignore[attr-defined]
            weakref.finalize(model, _close_loop, loop, getattr(model, "client", None))
        return entry


def _run_coroutine(model: Model, coro: Any) -> Any:
    """Run one request on the model's own loop. Called from a thread that already runs a
    loop (e.g. an async caller), the request runs on a helper thread instead of failing."""
    loop, lock = _loop_for(model)

    def run() -> Any:
        with lock:
            return loop.run_until_complete(coro)

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return run()
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="model-request") as pool:
        return pool.submit(run).result()


def _request_settings(settings: ModelSettings | None) -> ModelSettings:
    merged: dict[str, Any] = {
        # Enforced by pydantic-ai for every model, covering the SDK's own attempts.
        "request_timeout": float(django_settings.MODEL_TIMEOUT_SECONDS),
        # We own retrying (below); the SDK's retries would multiply ours.
        "max_retries": 0,
    }
    merged.update(settings or {})
    return ModelSettings(**merged)  # type: ignore[typeddict-item]


def _backoff_seconds(exc: BaseException, retry: int) -> float:
    base = float(django_settings.MODEL_RETRY_BASE_DELAY_SECONDS)
    delay = base * (2**retry)
    retry_after = getattr(exc, "retry_after", None)
    if isinstance(retry_after, int | float) and retry_after > delay:
        delay = float(retry_after)
    return min(delay, MAX_BACKOFF_SECONDS)


def model_request_with_retry(
    model: Model,
    messages: Sequence[ModelMessage],
    parameters: ModelRequestParameters | None = None,
    *,
    settings: ModelSettings | None = None,
) -> ModelResponse:
    """One model request (blocking) through pydantic-ai's direct API, with a deadline of
    ``MODEL_TIMEOUT_SECONDS`` and up to ``MODEL_MAX_RETRIES`` retries with exponential
    backoff on transient errors. Permanent errors are raised at once."""
    request_settings = _request_settings(settings)
    params = parameters or ModelRequestParameters()
    max_retries = int(django_settings.MODEL_MAX_RETRIES)
    retry = 0
    while True:
        try:
            return _run_coroutine(
                model,
                model_request(
                    model,
                    list(messages),
                    model_settings=request_settings,
                    model_request_parameters=params,
                ),
            )
        except Exception as exc:
            if retry >= max_retries or not is_transient_error(exc):
                raise
            delay = _backoff_seconds(exc, retry)
            retry += 1
            log.warning(
                "model %s: transient error (%s), retry %d/%d in %.1fs",
                getattr(model, "model_name", model),
                exc,
                retry,
                max_retries,
                delay,
            )
            time.sleep(delay)
