"""A scriptable OpenAI-compatible chat-completions server for provider-fault drills.

``FakeOpenAI`` is a small threaded ``http.server`` bound to 127.0.0.1 on a random port
(loopback only). Each POST to ``/v1/chat/completions`` takes the next step of its
script (the last step repeats):

- ``answer(text)`` / ``tool_call(name, args)``: a valid completion;
- ``status(code)``: an error response (429 with ``Retry-After: 0``, 500, ...);
- ``hang(seconds)``: wait, then answer (past the client's timeout);
- ``invalid_json()``: 200 with a body that is not JSON;
- ``truncated()``: 200 whose body stops half-way (Content-Length larger than sent);
- ``reply(text, cut=...)``: a text answer in the protocol the request's path speaks
  (OpenAI Chat Completions ``/chat/completions``, OpenAI Responses ``/responses``,
  Anthropic Messages ``/messages``), stopped at the output limit when ``cut``
  (``finish_reason: length``, ``incomplete_details.reason: max_output_tokens``,
  ``stop_reason: max_tokens``).

``output_allowances`` lists the output-token allowance each request asked for.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Step:
    kind: str
    payload: Any = None


def completion(message: dict[str, Any], finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-drill",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "drill",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def answer(text: str) -> Step:
    return Step("json", completion({"role": "assistant", "content": text}))


def tool_call(name: str, args: dict[str, Any], call_id: str = "call_1") -> Step:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }
    return Step(
        "json",
        completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"),
    )


def status(code: int) -> Step:
    return Step("status", code)


def hang(seconds: float, then: Step | None = None) -> Step:
    return Step("hang", (seconds, then or answer("late answer")))


def reply(text: str, *, cut: bool = False) -> Step:
    return Step("reply", (text, cut))


def reply_body(path: str, text: str, cut: bool) -> dict[str, Any]:
    """``text`` as the protocol of ``path`` answers it."""
    if path.endswith("/responses"):
        return {
            "id": "resp_drill",
            "object": "response",
            "created_at": 1_700_000_000,
            "model": "drill",
            "status": "incomplete" if cut else "completed",
            "incomplete_details": {"reason": "max_output_tokens"} if cut else None,
            "output": [
                {
                    "type": "message",
                    "id": "msg_drill",
                    "status": "incomplete" if cut else "completed",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 10,
                "output_tokens": 5,
                "total_tokens": 15,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }
    if path.endswith("/messages"):
        return {
            "id": "msg_drill",
            "type": "message",
            "role": "assistant",
            "model": "drill",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "max_tokens" if cut else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    return completion({"role": "assistant", "content": text}, "length" if cut else "stop")


def invalid_json() -> Step:
    return Step("invalid_json")


def truncated() -> Step:
    return Step("truncated")


class FakeOpenAI:
    def __init__(self) -> None:
        self.script: list[Step] = [answer("ok")]
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = {"raw": raw.decode("utf-8", "replace")}
                step = fake._next(body)
                fake._respond(self, step)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def root_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def set_script(self, *steps: Step) -> None:
        with self._lock:
            self.script = list(steps)
            self.requests = []

    def _next(self, body: dict[str, Any]) -> Step:
        with self._lock:
            self.requests.append(body)
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]

    @property
    def output_allowances(self) -> list[int | None]:
        keys = ("max_tokens", "max_completion_tokens", "max_output_tokens")
        return [next((r[k] for k in keys if k in r), None) for r in self.requests]

    def _respond(self, handler: BaseHTTPRequestHandler, step: Step) -> None:
        if step.kind == "reply":
            text, cut = step.payload
            body = reply_body(handler.path.split("?")[0], text, cut)
            self._send(handler, 200, json.dumps(body).encode())
            return
        if step.kind == "hang":
            seconds, then = step.payload
            time.sleep(seconds)
            step = then
        if step.kind == "json":
            self._send(handler, 200, json.dumps(step.payload).encode())
        elif step.kind == "status":
            code = step.payload
            error = {"error": {"message": f"drill error {code}", "type": "drill", "code": code}}
            extra = {"Retry-After": "0"} if code == 429 else {}
            self._send(handler, code, json.dumps(error).encode(), extra)
        elif step.kind == "invalid_json":
            self._send(handler, 200, b'{"id": "chatcmpl-drill", "choices": [ this is not json')
        elif step.kind == "truncated":
            full = json.dumps(completion({"role": "assistant", "content": "x" * 400})).encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(full)))
            handler.end_headers()
            handler.wfile.write(full[: len(full) // 2])
            handler.wfile.flush()
            handler.close_connection = True
            try:
                handler.connection.shutdown(2)
            except OSError:
                pass

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        code: int,
        body: bytes,
        headers: dict[str, str] | None = None,
    ) -> None:
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)

    def start(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def fake_openai() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    try:
        yield server
    finally:
        server.stop()
