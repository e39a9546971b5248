"""Issue 18: cost in money, priced with genai-prices at write time and stored."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from genai_prices import Usage, calc_price
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from evidence_app.validation.replay import replay_estimate, replay_validation
from evidence_app.validation.selectors import cost_per_accepted_answer, daily_costs, task_cost
from evidence_app.validation.services import validation_run
from project.costs import CostTotal, format_cost, price_tokens
from project.llm.registry import register_model, unregister_model
from tasks_app.models import LLMRequestSnapshot, Run
from tasks_app.runtime.agents.loop import AgentLoop
from tests.api.conftest import bearer_client
from tests.evidence_app.validation_helpers import validating_task, verdict
from tests.factories import KnowledgeDocumentFactory, TaskFactory

pytestmark = pytest.mark.django_db

PRICED_JUDGE = "openai:gpt-4.1"
PRICED_AGENT = "anthropic:claude-sonnet-4-5"


def genai_price(provider: str, model: str, input_tokens: int, output_tokens: int) -> Decimal:
    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    return calc_price(usage, model, provider_id=provider).total_price


class UsageJudge:
    """A scripted judge that reports a fixed usage per request; replies in order."""

    def __init__(self, replies: list[str], usage: list[tuple[int, int]]) -> None:
        self.replies = replies
        self.usage = usage
        self.calls = 0

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        reply = self.replies[min(self.calls, len(self.replies) - 1)]
        input_tokens, output_tokens = self.usage[min(self.calls, len(self.usage) - 1)]
        self.calls += 1
        return ModelResponse(
            parts=[TextPart(reply)],
            usage=RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens),
        )


@pytest.fixture
def priced_judge(settings: Any) -> Iterator[UsageJudge]:
    judge = UsageJudge(replies=[verdict("accepted")], usage=[(1200, 300)])
    register_model(PRICED_JUDGE, lambda: FunctionModel(judge.respond, model_name="scripted"))
    settings.VALIDATOR_MODEL = PRICED_JUDGE
    settings.MODEL_MAX_RETRIES = 0
    yield judge
    unregister_model(PRICED_JUDGE)


def test_validation_cost_with_a_schema_retry_equals_genai_prices_figure(
    priced_judge: UsageJudge,
) -> None:
    """Issue 18: a scripted validation on a priced model name, with known usage and one
    schema retry, stores exactly genai-prices' figure for each request, summed."""
    priced_judge.replies = ["not json", verdict("accepted")]
    priced_judge.usage = [(1200, 300), (1500, 120)]
    task = validating_task()
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None and snapshot.status == "accepted"
    assert snapshot.schema_retry_count == 1
    first = genai_price("openai", "gpt-4.1", 1200, 300)
    second = genai_price("openai", "gpt-4.1", 1500, 120)
    snapshot.refresh_from_db()
    assert snapshot.cost == first + second
    assert snapshot.cost_currency == "USD"
    assert [Decimal(r["cost"]) for r in snapshot.raw_responses] == [first, second]
    # The attempt and the task carry it too.
    summary = task_cost(task)
    assert summary.attempts[0].validation.value == first + second
    assert summary.as_dict()["total"]["currency"] == "USD"


def test_chunked_validation_prices_every_part(priced_judge: UsageJudge, settings: Any) -> None:
    """Issue 18 + V11: each part's request is priced, kept on its chunk verdict, and the
    snapshot's cost is their sum."""
    settings.VALIDATOR_CONTEXT_CHARS = {PRICED_JUDGE: 12_000}
    priced_judge.replies = [verdict("accepted")]
    priced_judge.usage = [(2500, 90)]
    task = validating_task(evidence=["x " * 6000, "The annual training budget is 1,750 EUR."])
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None
    parts = len(snapshot.chunk_verdicts)
    assert parts >= 2
    each = genai_price("openai", "gpt-4.1", 2500, 90)
    assert [Decimal(v["cost"]) for v in snapshot.chunk_verdicts] == [each] * parts
    assert snapshot.cost == each * parts


def test_unknown_model_cost_is_unknown_never_zero(scripted_judge: Any) -> None:
    """Issue 18: a model genai-prices does not know yields "cost unknown", not $0."""
    scripted_judge.replies = [verdict("accepted")]
    task = validating_task()
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None and snapshot.request_count == 1
    snapshot.refresh_from_db()
    assert snapshot.cost is None and snapshot.cost_currency == ""
    assert snapshot.raw_responses[0]["cost"] is None
    total = task_cost(task).attempts[0].validation
    assert total.value is None and str(total) == "cost unknown"
    assert total.as_dict()["amount"] is None
    for name in ("offline:judge", "compat:llama3.1", "test:judge", "openai:no-such-model-x"):
        assert price_tokens(name, input_tokens=1000, output_tokens=10) is None


def test_agent_run_and_request_snapshots_carry_their_cost(settings: Any) -> None:
    """Issue 18: every LLM request snapshot is priced at write time; the run's cost is
    their sum."""
    KnowledgeDocumentFactory(title="Budget", body="The training budget is 1,750 EUR.")
    usages = iter([(800, 40), (2100, 160)])

    def agent(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        input_tokens, output_tokens = next(usages)
        usage = RequestUsage(input_tokens=input_tokens, output_tokens=output_tokens)
        if info.function_tools and len(messages) == 1:
            call = ToolCallPart("search_knowledge", {"query": "budget"}, tool_call_id="c1")
            return ModelResponse(parts=[call], usage=usage)
        return ModelResponse(parts=[TextPart("The budget is 1,750 EUR.")], usage=usage)

    register_model(PRICED_AGENT, lambda: FunctionModel(agent, model_name="scripted"))
    try:
        task = TaskFactory()
        result = AgentLoop(
            model_name=PRICED_AGENT,
            system_prompt="You research.",
            tools=["search_knowledge"],
            max_tool_iterations=2,
        ).run(task_id=task.pk, attempt_index=1, user_prompt="What is the budget?")
    finally:
        unregister_model(PRICED_AGENT)
    assert result.success
    costs = list(
        LLMRequestSnapshot.objects.filter(run_id=result.run_id)
        .order_by("iteration")
        .values_list("cost", "cost_currency")
    )
    expected = [
        genai_price("anthropic", "claude-sonnet-4-5", 800, 40),
        genai_price("anthropic", "claude-sonnet-4-5", 2100, 160),
    ]
    assert costs == [(expected[0], "USD"), (expected[1], "USD")]
    run = Run.objects.get(pk=result.run_id)
    assert run.cost == sum(expected) and run.cost_currency == "USD"
    assert task_cost(task).total.value == sum(expected)


def test_replay_estimate_prices_estimated_input_tokens_on_the_chosen_model(
    scripted_judge: Any,
) -> None:
    """Issue 18 + V9: bulk replay's estimate shows estimated input tokens x the chosen
    model's input price before it runs; unknown model => unknown."""
    scripted_judge.replies = [verdict("accepted")]
    task = validating_task()
    snapshot = validation_run(task_id=task.pk, attempt_index=1)
    assert snapshot is not None
    estimate = replay_estimate([snapshot], model=PRICED_JUDGE)
    expected = genai_price("openai", "gpt-4.1", estimate.input_tokens, 0)
    assert estimate.cost.value == expected and estimate.cost.complete
    unknown = replay_estimate([snapshot])  # the original's model: test:judge
    assert unknown.cost.value is None


def test_replays_count_toward_the_task_separately(
    scripted_judge: Any, priced_judge: UsageJudge
) -> None:
    """Issue 18: a replay's cost is the task's, shown apart from the attempts."""
    scripted_judge.replies = [verdict("rejected")]
    task = validating_task()
    original = validation_run(task_id=task.pk, attempt_index=1)
    assert original is not None
    replay_validation(snapshot=original, model="test:judge")
    summary = task_cost(task)
    assert summary.replays.unknown == 1 and summary.replays.value is None
    first = summary.attempts[0].validation.value
    assert first == genai_price("openai", "gpt-4.1", 1200, 300)
    # The factory's agent run has no recorded cost either: two unpriced parts.
    assert summary.total.value == first and summary.total.unknown == 2
    assert str(summary.total) == f"{format_cost(first)} + 2 unpriced"


def test_daily_costs_and_cost_per_accepted_answer(priced_judge: UsageJudge) -> None:
    """Issue 18: the operator overview's cost per day by validator model and cost per
    accepted answer are sums of stored figures."""
    for _ in range(2):
        task = validating_task()
        validation_run(task_id=task.pk, attempt_index=1)
    each = genai_price("openai", "gpt-4.1", 1200, 300)
    rows = [r for r in daily_costs() if r.role == "validator" and r.model_name == PRICED_JUDGE]
    assert len(rows) == 1 and rows[0].cost.value == 2 * each and rows[0].input_tokens == 2400
    total, accepted, per = cost_per_accepted_answer()
    # The factory runs have no cost recorded (null): the total says it is partial.
    assert accepted == 2 and total.amount == 2 * each and total.unknown == 2
    assert per is not None and per.amount == each


def test_cost_total_formatting() -> None:
    assert str(CostTotal()) == "$0.00"
    assert str(CostTotal.of([None])) == "cost unknown"
    assert format_cost(Decimal("0.0123456")) == "$0.01235"
    assert format_cost(Decimal("12.5")) == "$12.50"


def test_task_page_shows_costs_to_staff_and_not_to_the_requester(
    client: Any, operator: Any, requester: Any, priced_judge: UsageJudge
) -> None:
    """Issue 18: the task page shows each attempt's cost and the total (an unpriced
    agent run is said, not counted as zero); requesters do not see costs."""
    task = validating_task(owner=requester)
    validation_run(task_id=task.pk, attempt_index=1)
    validation = format_cost(genai_price("openai", "gpt-4.1", 1200, 300))
    client.force_login(operator)
    page = client.get(f"/tasks/{task.pk}/").content.decode()
    assert 'id="cost-panel"' in page
    assert f"validation {validation}" in page and "agent cost unknown" in page
    assert f"{validation} + 1 unpriced" in page
    client.force_login(requester)
    page = client.get(f"/tasks/{task.pk}/").content.decode()
    assert 'id="cost-panel"' not in page and validation not in page


def test_task_api_carries_cost_for_staff_and_null_for_the_requester(
    operator: Any, requester: Any, priced_judge: UsageJudge
) -> None:
    """Issue 18: GET /api/v1/tasks/{id} carries the task's cost (total, per attempt,
    replays; decimal strings in USD, unknown parts counted) for reviewers and operators;
    a requester's view of the same task has ``cost: null``."""
    task = validating_task(owner=requester)
    validation_run(task_id=task.pk, attempt_index=1)
    each = genai_price("openai", "gpt-4.1", 1200, 300)
    body = bearer_client(operator).get(f"/api/v1/tasks/{task.pk}").json()
    cost = body["cost"]
    assert Decimal(cost["total"]["amount"]) == each and cost["total"]["currency"] == "USD"
    # The factory's agent run has no recorded cost: the total says it is a lower bound.
    assert cost["total"]["complete"] is False and cost["total"]["unknown_parts"] == 1
    assert [a["attempt_index"] for a in cost["attempts"]] == [1]
    assert Decimal(cost["attempts"][0]["validation"]["amount"]) == each
    assert cost["attempts"][0]["agent"]["amount"] is None
    assert bearer_client(requester).get(f"/api/v1/tasks/{task.pk}").json()["cost"] is None


def test_operator_overview_shows_health_cost_per_day_and_per_accepted_answer(
    client: Any, operator: Any, priced_judge: UsageJudge, settings: Any
) -> None:
    """Issue 18: the operator overview runs the /ready checks (a failing one named with
    its reason) and shows cost per day by validator model and per accepted answer."""
    settings.OPS_REQUIRE_BEAT = True
    for _ in range(2):
        task = validating_task()
        validation_run(task_id=task.pk, attempt_index=1)
    each = genai_price("openai", "gpt-4.1", 1200, 300)
    client.force_login(operator)
    page = client.get("/ops/").content.decode()
    health = page[page.index('id="ops-health"') : page.index('id="ops-cost"')]
    assert 'data-check="database"' in health
    assert f"{connection.vendor} reachable" in health
    beat = health[health.index('data-check="beat"') :]
    assert "Failing" in beat[:300] and "beat has never run" in beat[:600]
    costs = page[page.index('id="ops-cost"') :]
    assert format_cost(2 * each) in costs  # the day's validator total for gpt-4.1
    assert "Per accepted answer" in costs and format_cost(each) in costs


def test_bulk_replay_preview_states_the_estimated_cost_on_the_chosen_model(
    client: Any, operator: Any, priced_judge: UsageJudge
) -> None:
    """Issue 18: bulk replay's preview gives the estimated input cost in money for the
    model chosen in the form, before anything is queued; an unpriced model says so."""
    task = validating_task()
    validation_run(task_id=task.pk, attempt_index=1)
    client.force_login(operator)
    page = client.get(
        "/ops/replay/", {"task_ids": str(task.pk), "model": "openai:gpt-4.1"}
    ).content.decode()
    figure = page[page.index('id="replay-cost"') :].split(">", 1)[1].split("<", 1)[0]
    assert figure.startswith("$") and figure != "$0.00"
    page = client.get(
        "/ops/replay/", {"task_ids": str(task.pk), "model": "offline:judge"}
    ).content.decode()
    assert 'id="replay-cost">cost unknown<' in page
