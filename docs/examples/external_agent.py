"""Bring your own agent: a pydantic-ai agent that works an Evidentia task from outside.

It creates an external task, runs, streams each tool result to Evidentia the moment the
tool returns, submits its answer, waits for the signed webhook that says whether the
validator accepted it, and when it is asked for a revision it runs again with the
feedback from the webhook and submits the new attempt in one body.

The model is a scripted pydantic-ai ``FunctionModel`` so the example runs anywhere, with
no API key: on its first run it misreads the figure it looked up (1,570 instead of
1,750), which Evidentia's grounding judge catches against the streamed evidence; given
the feedback, it quotes the evidence. Swap ``scripted_model`` for a real model
(``"openai:gpt-4.1"``) and the rest stays the same.

Run it against a server (make run) with a token from /account/:

    python docs/examples/external_agent.py --base-url http://127.0.0.1:8000 --token evd_...

The server must be allowed to call this script's webhook receiver on 127.0.0.1:
start it with WEBHOOK_ALLOW_PRIVATE=1 (a real receiver has a public URL).
"""

from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

# The agent's own knowledge (in real life: your retrieval, your APIs, the web).
HANDBOOK = {
    "training": "Training Budget. The annual training budget per employee is 1,750 EUR. "
    "Unused budget does not carry over to the next year.",
    "remote work": "Remote Work. Employees may work remotely up to three days per week.",
}
QUESTION = "What is the annual training budget per employee?"


# --- The agent ------------------------------------------------------------------------------


def scripted_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Look the topic up once, then answer from the tool result. Without feedback in the
    prompt it misreads the figure; with feedback it quotes the sentence it read."""
    returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
    if not returns:
        return ModelResponse(parts=[ToolCallPart("lookup_handbook", {"topic": "training"})])
    prompt = " ".join(
        str(p.content) for m in messages for p in m.parts if isinstance(p, UserPromptPart)
    )
    sentence = next(s for s in str(returns[-1].content).split(". ") if "1,750" in s) + "."
    if "Feedback on your previous answer" not in prompt:
        return ModelResponse(parts=[TextPart(sentence.replace("1,750", "1,570"))])
    return ModelResponse(parts=[TextPart(sentence)])


class Attempt:
    """Streams one attempt's evidence to Evidentia while the agent runs."""

    def __init__(self, api: httpx.Client, task_id: int) -> None:
        self.api = api
        self.task_id = task_id
        self.index: int | None = None

    def start(self) -> None:
        response = self.api.post(
            f"/tasks/{self.task_id}/attempts",
            json={"stream": True, "runs": [{"key": "main", "model": "example:scripted"}]},
        )
        response.raise_for_status()
        self.index = response.json()["attempt_index"]

    def send(self, *events: dict[str, Any]) -> None:
        if self.index is None:  # not streaming this attempt
            return
        url = f"/tasks/{self.task_id}/attempts/{self.index}/events"
        self.api.post(url, json={"events": list(events)}).raise_for_status()


agent = Agent(
    FunctionModel(scripted_model, model_name="example:scripted"),
    deps_type=Attempt,
    system_prompt="Answer from the handbook; quote the figure exactly.",
)


@agent.tool
def lookup_handbook(ctx: RunContext[Attempt], topic: str) -> str:
    """Read the handbook section about a topic."""
    content = HANDBOOK.get(topic.lower(), f"No section about '{topic}'.")
    # E2 for external agents: the result is stored in Evidentia as soon as we have it.
    ctx.deps.send(
        {
            "type": "tool_result",
            "run": "main",
            "tool_name": "lookup_handbook",
            "tool_call_id": ctx.tool_call_id or "",
            "arguments": {"topic": topic},
            "content": content,
            "title": f"Handbook: {topic}",
        }
    )
    return content


def transcript(messages: list[ModelMessage]) -> list[dict[str, Any]]:
    """pydantic-ai messages as Evidentia transcript messages (role, text, raw payload)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        raw = ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
        if isinstance(message, ModelResponse):
            text = "\n".join(
                p.content if isinstance(p, TextPart) else f"{p.tool_name}({p.args_as_json_str()})"
                for p in message.parts
                if isinstance(p, TextPart | ToolCallPart)
            )
            out.append({"role": "assistant", "content": text, "payload": raw})
            continue
        assert isinstance(message, ModelRequest)
        for part in message.parts:
            if isinstance(part, SystemPromptPart):
                out.append({"role": "system", "content": part.content})
            elif isinstance(part, UserPromptPart):
                out.append({"role": "user", "content": str(part.content)})
            elif isinstance(part, ToolReturnPart):
                out.append(
                    {
                        "role": "tool",
                        "content": part.model_response_str(),
                        "payload": {"tool_call_id": part.tool_call_id, "tool_name": part.tool_name},
                    }
                )
    return out


# --- Webhooks -------------------------------------------------------------------------------


def start_receiver(events: queue.Queue[dict[str, Any]]) -> tuple[ThreadingHTTPServer, Any]:
    """A local HTTP server that verifies each delivery's signature and queues it."""
    secret: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                payload = Webhook(secret["value"]).verify(body, dict(self.headers))
            except (WebhookVerificationError, KeyError):
                self.send_response(400)
                self.end_headers()
                return
            events.put(payload)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, secret


def wait_for_event(events: queue.Queue[dict[str, Any]], task_id: int, types: set[str]) -> dict:
    while True:
        event = events.get(timeout=120)
        print(f"webhook  {event['type']:<24} task {event['data']['task']['id']}", flush=True)
        if event["data"]["task"]["id"] == task_id and event["type"] in types:
            return event


# --- The whole round trip -------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--token", required=True)
    args = parser.parse_args(argv)
    api = httpx.Client(
        base_url=args.base_url.rstrip("/") + "/api/v1",
        headers={"Authorization": f"Bearer {args.token}"},
        timeout=30,
    )
    events: queue.Queue[dict[str, Any]] = queue.Queue()
    server, secret = start_receiver(events)
    host, port = server.server_address[:2]
    hook = api.post("/webhooks", json={"url": f"http://{host}:{port}/", "description": "example"})
    hook.raise_for_status()
    secret["value"] = hook.json()["secret"]  # shown once: keep it
    print(f"webhook  registered {hook.json()['url']}")

    task = api.post("/tasks", json={"request": QUESTION, "agent": "external"}).json()
    print(f"task     {task['id']} created ({task['status']}, agent {task['agent']})")

    # Attempt 1: streamed while the agent runs.
    attempt = Attempt(api, task["id"])
    attempt.start()
    result = agent.run_sync(QUESTION, deps=attempt)
    attempt.send(
        *({"type": "message", "run": "main", **m} for m in transcript(result.all_messages()))
    )
    finished = api.post(
        f"/tasks/{task['id']}/attempts/{attempt.index}/finish",
        json={"final_answer": result.output, "runs": [{"run": "main", "finish_reason": "stop"}]},
    )
    finished.raise_for_status()
    print(f"attempt  {attempt.index} streamed and finished: {result.output!r}")

    event = wait_for_event(events, task["id"], {"task.needs_revision", "task.awaiting_feedback"})
    if event["type"] == "task.needs_revision":
        revision = event["data"]["revision"]
        verdict = revision["validator"] or {}
        print(
            f"revision asked by the {revision['requested_by']}: {verdict.get('status')} "
            f"({verdict.get('failure_category')}): {'; '.join(verdict.get('issues', []))}"
        )
        feedback = "\n".join(
            [
                *verdict.get("issues", []),
                revision.get("comment") or "",
                verdict.get("recommended_revision_prompt") or "",
            ]
        ).strip()
        prompt = f"{QUESTION}\n\nFeedback on your previous answer:\n{feedback}"
        # Attempt 2: run again with the feedback and submit the whole attempt in one body.
        second = agent.run_sync(prompt, deps=Attempt(api, task["id"]))  # not started: no stream
        tool_results = [
            {
                "tool_name": p.tool_name,
                "tool_call_id": p.tool_call_id,
                "content": p.model_response_str(),
                "title": "Handbook: training",
            }
            for m in second.all_messages()
            for p in m.parts
            if isinstance(p, ToolReturnPart)
        ]
        body = {
            "final_answer": second.output,
            "runs": [
                {
                    "key": "main",
                    "model": "example:scripted",
                    "finish_reason": "stop",
                    "messages": transcript(second.all_messages()),
                    "tool_results": tool_results,
                }
            ],
        }
        submitted = api.post(
            f"/tasks/{task['id']}/attempts",
            json=body,
            headers={"Idempotency-Key": str(uuid.uuid4())},
        )
        submitted.raise_for_status()
        print(f"attempt  {submitted.json()['attempt_index']} submitted: {second.output!r}")
        event = wait_for_event(events, task["id"], {"task.awaiting_feedback", "task.needs_review"})

    final = api.get(f"/tasks/{task['id']}").json()
    verdict = final["latest_validation"] or {}
    print(
        f"result   task {final['id']} {final['status']}, validator {verdict.get('status')}, "
        f"{final['attempt_count']} attempts"
    )
    print(json.dumps({"task": final["id"], "status": final["status"]}))
    server.shutdown()
    return 0 if final["status"] == "awaiting_feedback" else 1


if __name__ == "__main__":
    sys.exit(main())
