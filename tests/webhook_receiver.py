"""A real local HTTP server receiving webhooks for tests (issue 14): it verifies every
delivery with the ``standardwebhooks`` library, as a receiver would, records what came,
and answers with scripted status codes (then 200)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass
class Received:
    msg_id: str
    event_type: str
    task_id: int | None
    verified: bool
    status: int
    payload: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


class Receiver:
    def __init__(self) -> None:
        self.secret: str | None = None
        self.script: list[int] = []
        self.requests: list[Received] = []
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/hooks"

    def accepted(self) -> list[Received]:
        """Verified deliveries answered 2xx, in arrival order."""
        with self.lock:
            return [r for r in self.requests if r.verified and 200 <= r.status < 300]

    def handle(self, body: bytes, headers: dict[str, str]) -> int:
        with self.lock:
            verified = False
            payload: dict[str, Any] = {}
            if self.secret is not None:
                try:
                    payload = Webhook(self.secret).verify(body, headers)
                    verified = True
                except WebhookVerificationError:
                    payload = json.loads(body or b"{}")
            status = self.script.pop(0) if self.script else 200
            if not verified:
                status = 400
            task = (payload.get("data") or {}).get("task") or {}
            self.requests.append(
                Received(
                    msg_id=headers.get("webhook-id", ""),
                    event_type=str(payload.get("type", "")),
                    task_id=task.get("id"),
                    verified=verified,
                    status=status,
                    payload=payload,
                )
            )
            return status


@contextmanager
def running_receiver() -> Iterator[Receiver]:
    receiver = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length)
            status = receiver.handle(body, {k.lower(): v for k, v in self.headers.items()})
            self.send_response(status)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(b"ok" if status < 300 else b"try later")

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.server = server
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
