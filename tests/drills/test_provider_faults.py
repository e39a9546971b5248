"""Drill 3: provider faults against a local OpenAI-compatible server (X6, V8, X8).

The agent and the validator talk to ``tests.drills.fake_openai`` (127.0.0.1, random
port) as ``compat:drill`` through ``OPENAI_COMPAT_BASE_URL``, with a 1 s timeout, 2
retries and 50 ms backoff. The attempt runs through ``attempt_run``, the service the
Celery job calls: it must never raise (a raise would be a crashed job), and each fault
ends either in a finished attempt (transient fault, retried) or a failed one with the
error recorded on the run and in the task's event. Validator faults end in
``validator_error`` and ``needs_review``, the error kept in the snapshot.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import Celery

from evidence_app.models import ValidationSnapshot
from evidence_app.validation.replay import replay_validation
from evidence_app.validation.services import validation_run
from project.celery import app as celery_app
from tasks_app.models import Run, Task, TaskEvent, ToolEvidence
from tasks_app.runtime.attempts import attempt_run
from tasks_app.workflow.states import TaskStatus as S
from tests.drills import fake_openai as fo
from tests.drills.support import Worker, database_url, redis_url, report, wait_for
from tests.evidence_app.validation_helpers import validating_task, verdict
from tests.factories import KnowledgeDocumentFactory, TaskFactory

pytestmark = [pytest.mark.drill, pytest.mark.django_db, pytest.mark.timeout(120)]

MAX_RETRIES = 2
RESULTS: dict[str, str] = {}


@pytest.fixture(scope="module", autouse=True)
def summary() -> Iterator[None]:
    """One summary line once every scenario of the module ran (pytest-django runs the
    transactional real-worker test last, so no single test can report it)."""
    yield
    if not RESULTS:
        return
    finished = sum(
        1
        for k, v in RESULTS.items()
        if ("-> validating" in v or "answered" in v) and k != "real worker"
    )
    failed = sum(1 for v in RESULTS.values() if "-> failed" in v)
    review = sum(1 for k, v in RESULTS.items() if "needs_review" in v and k != "real worker")
    worker = (
        "; a real worker survived A (500s -> failed) and B (timeout, then validator 500s -> "
        "needs_review)"
        if "real worker" in RESULTS
        else ""
    )
    report(
        "provider faults",
        f"{len(RESULTS)} scenarios: {finished} agent runs retried to an answer, {failed} "
        f"failed with the error recorded, {review} validator faults -> needs_review, "
        f"1 validator retry accepted; 0 crashes{worker}",
    )


@pytest.fixture(scope="module")
def server() -> Iterator[fo.FakeOpenAI]:
    with fo.fake_openai() as fake:
        yield fake


@pytest.fixture(autouse=True)
def provider_settings(settings: Any, server: fo.FakeOpenAI, monkeypatch: Any) -> None:
    settings.OPENAI_COMPAT_BASE_URL = server.base_url
    settings.OPENAI_COMPAT_API_KEY = "drill"
    settings.AGENT_MODEL = "compat:drill"
    settings.VALIDATOR_MODEL = "compat:drill"
    settings.MODEL_TIMEOUT_SECONDS = 1.0
    settings.MODEL_MAX_RETRIES = MAX_RETRIES
    settings.MODEL_RETRY_BASE_DELAY_SECONDS = 0.05
    settings.VALIDATOR_SCHEMA_RETRIES = 1
    # The hand-off to the validation job is recorded, not sent to a broker.
    monkeypatch.setattr(celery_app, "send_task", lambda *a, **kw: None)


def run_attempt(task: Task) -> tuple[Task, Run, float]:
    started = time.monotonic()
    attempt_run(task_id=task.pk, worker="drill")  # must not raise: the job would crash
    elapsed = time.monotonic() - started
    task.refresh_from_db()
    return task, Run.objects.get(task=task), elapsed


def last_reason(task: Task) -> str:
    return TaskEvent.objects.filter(task=task).order_by("-at", "-id").first().reason


# Cites the default evidence of validating_task, so the accept survives reconciliation.
VERDICT = verdict("accepted", score=0.9, reasoning="supported")


@pytest.mark.parametrize(
    ("name", "script", "outcome"),
    [
        (
            "429 twice",
            [fo.status(429), fo.status(429), fo.answer("Answer after 429s.")],
            S.VALIDATING,
        ),
        ("500 once", [fo.status(500), fo.answer("Answer after a 500.")], S.VALIDATING),
        ("truncated body", [fo.truncated(), fo.answer("Answer after a cut body.")], S.VALIDATING),
        ("500 always", [fo.status(500)], S.FAILED),
        ("hang past timeout", [fo.hang(2.5)], S.FAILED),
        ("invalid JSON", [fo.invalid_json()], S.FAILED),
        ("400 bad request", [fo.status(400)], S.FAILED),
    ],
)
def test_agent_survives_provider_faults(
    server: fo.FakeOpenAI, name: str, script: list[fo.Step], outcome: str
) -> None:
    """X6: transient faults (429, 5xx, cut bodies, timeouts) are retried with backoff up to
    MODEL_MAX_RETRIES; the attempt then finishes, or fails with the provider error on the
    run and in the event; permanent faults (400) fail at once; nothing raises."""
    server.set_script(*script)
    task, run, elapsed = run_attempt(TaskFactory(request="What is the training budget?"))
    assert task.status == outcome, (task.status, run.error, last_reason(task))
    requests = len(server.requests)
    if outcome == S.VALIDATING:
        assert run.status == "completed" and task.final_answer.startswith("Answer after")
        assert requests == len(script)
    else:
        assert run.status == "failed" and run.error, run.error
        assert run.error.split(":")[0] in last_reason(task) or run.error[:40] in last_reason(task)
        if name == "400 bad request":
            assert requests == 1  # permanent: not retried
        elif name != "invalid JSON":
            assert requests == MAX_RETRIES + 1  # transient: retried, then given up
    RESULTS[name] = f"{name} -> {task.status} after {requests} request(s) in {elapsed:.1f}s"


def test_agent_tool_call_for_an_unknown_tool_becomes_an_error_result(
    server: fo.FakeOpenAI,
) -> None:
    """X8: a tool call for a tool that does not exist is answered with an error tool
    result the model sees (stored as evidence), and the attempt goes on to an answer."""
    KnowledgeDocumentFactory(title="Budget", body="The budget is 1,750 EUR.")
    server.set_script(
        fo.tool_call("delete_everything", {"really": True}),
        fo.answer("I could not use that tool; the budget is 1,750 EUR."),
    )
    task, run, _ = run_attempt(TaskFactory(request="What is the training budget?"))
    assert task.status == S.VALIDATING
    evidence = ToolEvidence.objects.get(run=run)
    assert evidence.tool_name == "delete_everything" and evidence.is_error
    # The model was told: the second request carries the error tool result.
    tool_messages = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 1 and "delete_everything" in tool_messages[0]["content"]
    RESULTS["unknown tool"] = "unknown tool -> error result, then answered"


@pytest.mark.parametrize(
    ("name", "script"),
    [
        ("validator 500", [fo.status(500)]),
        ("validator hang", [fo.hang(2.5)]),
        ("validator invalid JSON body", [fo.invalid_json()]),
        ("validator prose instead of JSON", [fo.answer("Looks fine to me!")]),
        ("validator unknown tool call", [fo.tool_call("approve_task", {})]),
    ],
)
def test_validator_faults_go_to_needs_review(
    server: fo.FakeOpenAI, name: str, script: list[fo.Step]
) -> None:
    """V8/V2: a validator that errors, hangs, returns garbage or calls tools ends in
    validator_error with the error recorded, and the task goes to needs_review (never
    silently passed, never lost)."""
    server.set_script(*script)
    task = validating_task()
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    assert snapshot is not None and snapshot.status == "validator_error", snapshot.result
    assert snapshot.error
    assert task.status == S.NEEDS_REVIEW and task.validation_outcome in (None, "")
    assert ValidationSnapshot.objects.filter(task=task).count() == 1
    RESULTS[name] = f"{name} -> validator_error, needs_review"


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_survives_provider_faults(server: fo.FakeOpenAI, tmp_path: Path) -> None:
    """X1/X6/V8 through a real Celery worker on Redis: task A meets only 500s and fails
    with the error recorded; the same worker process then runs task B through a hang (a
    timeout, retried) to an answer, whose validator meets 500s and goes to needs_review.
    The worker process is alive at the end."""
    redis = redis_url()
    db_url = database_url()
    if redis is None or db_url is None:
        pytest.skip("needs REDIS_URL (a Redis broker) and a test database a worker can share")
    queue = f"drill-faults-{uuid.uuid4().hex[:10]}"
    env = {
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": db_url,
        "CELERY_BROKER_URL": redis,
        "EVIDENTIA_VAR_DIR": str(tmp_path),
        "AGENT_MODEL": "compat:drill",
        "VALIDATOR_MODEL": "compat:drill",
        "OPENAI_COMPAT_BASE_URL": server.base_url,
        "OPENAI_COMPAT_API_KEY": "drill",
        "MODEL_TIMEOUT_SECONDS": "1",
        "MODEL_MAX_RETRIES": str(MAX_RETRIES),
        "MODEL_RETRY_BASE_DELAY_SECONDS": "0.05",
        "PYTHONUNBUFFERED": "1",
    }
    # A: three 500s (fails). B: a hang, then an answer; its validator: 500s.
    server.set_script(
        fo.status(500),
        fo.status(500),
        fo.status(500),
        fo.hang(2.5),
        fo.answer("Answer for B after a timeout."),
        fo.status(500),
    )
    task_a = TaskFactory(request="Task A")
    task_b = TaskFactory(request="Task B")
    sender = Celery("drill-sender", broker=redis, set_as_current=False)
    worker = Worker(env=env, queue=queue, log_path=tmp_path / "worker.log")
    try:
        sender.send_task("tasks_app.run_attempt", args=[task_a.pk], queue=queue)
        failed = wait_for(lambda: Task.objects.get(pk=task_a.pk).status == S.FAILED, timeout=40)
        assert failed, worker.output()[-3000:]
        sender.send_task("tasks_app.run_attempt", args=[task_b.pk], queue=queue)
        reviewed = wait_for(
            lambda: Task.objects.get(pk=task_b.pk).status == S.NEEDS_REVIEW, timeout=40
        )
        assert reviewed, worker.output()[-3000:]
        alive = worker.process.poll() is None
    finally:
        worker.stop()
        sender.close()
    assert alive, "the worker process died"
    run_a = Run.objects.get(task=task_a)
    assert "500" in run_a.error and "500" in last_reason(Task.objects.get(pk=task_a.pk))
    snapshot = ValidationSnapshot.objects.get(task=task_b)
    assert snapshot.status == "validator_error" and snapshot.error
    RESULTS["real worker"] = (
        "real worker: A failed (500s), B answered after a timeout -> needs_review"
    )


def test_validator_recovers_from_one_transient_fault(server: fo.FakeOpenAI) -> None:
    """V8/X6: one 503 then a good verdict: the retry gets the verdict through."""
    server.set_script(fo.status(503), fo.answer(VERDICT))
    task = validating_task()
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    assert snapshot.status == "accepted" and task.status == S.AWAITING_FEEDBACK
    RESULTS["validator retry"] = "validator 503 then a verdict -> accepted"


# --- Issue 37: a verdict the provider cut gets one more chance ------------------------------

PROTOCOLS = {
    # name: (VALIDATOR_MODEL, environment for the client library)
    "chat completions": ("compat:drill", {}),
    "responses": ("openai:drill", {"OPENAI_BASE_URL": "{v1}", "OPENAI_API_KEY": "drill"}),
    "anthropic messages": (
        "anthropic:drill",
        {"ANTHROPIC_BASE_URL": "{root}", "ANTHROPIC_API_KEY": "drill"},
    ),
}


def _speak(protocol: str, server: fo.FakeOpenAI, settings: Any, monkeypatch: Any) -> None:
    model, env = PROTOCOLS[protocol]
    settings.VALIDATOR_MODEL = model
    for name, value in env.items():
        monkeypatch.setenv(name, value.format(v1=server.base_url, root=server.root_url))


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_cut_verdict_is_asked_again_with_a_larger_allowance(
    server: fo.FakeOpenAI, settings: Any, monkeypatch: Any, protocol: str
) -> None:
    """Issue 37 item 3: the real OpenAI and Anthropic client libraries against a server
    that cuts the first verdict at its output limit: the validator asks once more with a
    larger allowance and the second, whole verdict is used; both requests are counted."""
    _speak(protocol, server, settings, monkeypatch)
    server.set_script(fo.reply(VERDICT, cut=True), fo.reply(VERDICT))
    task = validating_task()
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    assert snapshot.status == "accepted", snapshot.result
    assert task.status == S.AWAITING_FEEDBACK
    assert snapshot.request_count == 2
    assert [r["finish_reason"] for r in snapshot.raw_responses] == ["length", "stop"]
    first, second = server.output_allowances
    assert first is not None and second is not None and second > first
    RESULTS[f"cut once ({protocol})"] = "cut, retried -> accepted"


@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_verdict_cut_twice_is_a_validator_error_naming_the_reason(
    server: fo.FakeOpenAI, settings: Any, monkeypatch: Any, protocol: str
) -> None:
    """Issue 37 item 3: cut again at the larger allowance: validator_error naming the
    reason, the task to a person, no third request."""
    _speak(protocol, server, settings, monkeypatch)
    server.set_script(fo.reply(VERDICT, cut=True), fo.reply(VERDICT, cut=True), fo.reply(VERDICT))
    task = validating_task()
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    task.refresh_from_db()
    assert snapshot.status == "validator_error", snapshot.result
    assert "The model stopped: length twice" in snapshot.error
    assert task.status == S.NEEDS_REVIEW
    assert len(server.requests) == 2
    RESULTS[f"cut twice ({protocol})"] = "cut twice -> validator_error, needs_review"


def test_each_part_of_a_chunked_validation_gets_its_retry(
    server: fo.FakeOpenAI, settings: Any
) -> None:
    """Issue 37 item 3 (V11 parts): the first part's verdict is cut, retried with a larger
    allowance and used; the second part answers at once; every request is counted on its
    part."""
    settings.VALIDATOR_CONTEXT_CHARS = {"compat:drill": 12_000}
    server.set_script(fo.reply(VERDICT, cut=True), fo.reply(VERDICT))
    task = validating_task(
        evidence=["x " * 6000, "The annual training budget per employee is 1,750 EUR."]
    )
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    parts = len(snapshot.chunk_verdicts)
    assert parts >= 2
    assert snapshot.request_count == parts + 1
    assert [r["part"] for r in snapshot.raw_responses][:2] == [1, 1]
    assert [v["stop_reason"] for v in snapshot.chunk_verdicts] == ["ok"] * parts
    RESULTS["cut part"] = "part 1 cut, retried; every part judged"


def test_a_replay_gets_its_retry(server: fo.FakeOpenAI) -> None:
    """Issue 37 item 3: a replay whose verdict is cut is asked once more too."""
    server.set_script(fo.reply(VERDICT))
    task = validating_task()
    original = validation_run(task_id=task.pk, attempt_index=1)
    server.set_script(fo.reply(VERDICT, cut=True), fo.reply(VERDICT))
    replay = replay_validation(snapshot=original)
    assert replay.status == "accepted", replay.result
    assert replay.request_count == 2
    RESULTS["cut replay"] = "replay cut, retried -> accepted"
