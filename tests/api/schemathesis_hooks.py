"""Schemathesis hooks for runs against this API (SCHEMATHESIS_HOOKS=tests.api.schemathesis_hooks).

Two rules the code enforces are beyond JSON Schema, and the OpenAPI document says so in
words; these hooks keep generated *schema-valid* requests inside them, so the
positive_data_acceptance check tests the rest:
- a team plan's graph: depends_on must name other nodes of the plan, node ids are
  unique, a dag has no cycle (POST /tasks; 422 otherwise, covered by
  tests/api/test_tasks_api.py);
- which validator models this deployment can use (replay, a task's second_model, a
  candidate judge's model; it depends on the API keys set): a well-formed model name is
  replaced by an offline judge; which held-out cases a comparison may be limited to (the
  case files' ids and categories): a comparison runs on every held-out case;
- which claims a validation has (a decision's ``claims`` label them by their index, once
  each, citing this task's evidence; issue 45): a decision's generated labels are
  dropped, so the decision itself is tested, and generated labels on their own (POST
  /tasks/{id}/claim-labels) go to a task no one has (tests/api/test_decision_claim_labels_api.py
  covers the labels).
For the external agents' endpoints (issue 14):
- an attempt's ``final_answer`` is required unless it streams (``stream: true``), and
  then it must be absent (the description says so; 422 otherwise); its runs need
  distinct names (key, else node_id, else kind); a whole attempt has no running run, and
  a running run has no output_text or error yet;
- a webhook URL must reach a public address: whether it does depends on DNS, so a
  well-formed URL becomes a public address literal;
- free-form objects of attempts and streamed events (payload, arguments) refuse NUL
  anywhere, keys included (PostgreSQL cannot store it), which the schema cannot state
  for arbitrary keys.
- a task's audit rates below the deployment's floor (AUDIT_RATE, AUDIT_REJECT_RATE,
  settings the document cannot know) need ``audit_rate_reason`` from an operator: a
  generated rate gets a reason (issue 36).
(A list's ``cursor`` needs no hook any more: the document states its form, and a
well-formed one the list never gave answers the documented 404; issue 34.)
An ``Idempotency-Key`` (issue 17) names one request: a client sends a fresh key with each
new request, and the API refuses (422) a key reused with another body. The generator
reuses values, so a schema-valid case gets a key of its own.
And one for reach: with ``EVIDENTIA_ST_IDS`` (JSON: parameter name -> existing ids), half
the path ids become ids of real objects, so happy paths run, not only 404s.
"""

from __future__ import annotations

import graphlib
import json
import os
import random
import re
import uuid
from collections.abc import MutableMapping
from typing import Any

import schemathesis
from jsonschema_rs import Draft202012Validator
from schemathesis.core import NOT_SET
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.modes import GenerationMode

from project.schemas import MODEL_NAME

REAL_IDS: dict[str, list[int]] = json.loads(os.environ.get("EVIDENTIA_ST_IDS", "{}"))
_random = random.Random(11)


# A task id within the schema's bounds that no run creates.
NO_SUCH_TASK = 1_999_999_999


def _is(context: Any, method: str, suffix: str) -> bool:
    operation = context.operation
    return (
        operation is not None
        and operation.method.upper() == method
        and operation.path.endswith(suffix)
    )


def graph_is_consistent(plan: Any) -> bool:
    """False for a plan whose graph the API refuses (only string ids are judged: other
    shapes are schema violations anyway)."""
    if not isinstance(plan, dict) or not isinstance(plan.get("nodes"), list):
        return True
    nodes = [n for n in plan["nodes"] if isinstance(n, dict) and isinstance(n.get("id"), str)]
    ids = [n["id"] for n in nodes]
    if len(ids) != len(set(ids)):
        return False
    graph: dict[str, list[str]] = {}
    for node in nodes:
        depends_on = node.get("depends_on", [])
        if not isinstance(depends_on, list):
            continue
        names = [d for d in depends_on if isinstance(d, str)]
        if any(d not in ids or d == node["id"] for d in names):
            return False
        graph[node["id"]] = names
    if plan.get("mode") == "dag":
        try:
            graphlib.TopologicalSorter(graph).prepare()
        except graphlib.CycleError:
            return False
    return True


def runs_have_unique_keys(runs: Any) -> bool:
    """Each run of an attempt is named by its key, else its node_id, else its kind."""
    if not isinstance(runs, list):
        return True
    keys = [
        run.get("key") or run.get("node_id") or run.get("kind", "main")
        for run in runs
        if isinstance(run, dict)
    ]
    return len(keys) == len(set(keys))


def runs_are_consistent(runs: Any, *, stream: bool) -> bool:
    """A whole attempt has no running run; a running run (explicitly, or by default when
    streaming) has no output_text or error yet."""
    for run in runs if isinstance(runs, list) else []:
        if not isinstance(run, dict):
            continue
        status = run.get("status") or ("running" if stream else "completed")
        if status == "running" and (not stream or run.get("output_text") or run.get("error")):
            return False
    return True


def attempt_is_consistent(body: dict[str, Any]) -> bool:
    if not runs_have_unique_keys(body.get("runs")):
        return False
    if not runs_are_consistent(body.get("runs"), stream=body.get("stream") is True):
        return False
    if body.get("stream") is True:
        return body.get("final_answer") is None and "final_answer" not in body
    return isinstance(body.get("final_answer"), str)


def _body_dict(case: Any) -> dict[str, Any] | None:
    """The body of a schema-valid case, to keep within the rules above; None for any other
    case (a negative case must stay as broken as it was generated)."""
    meta = case.meta
    if meta is not None and meta.generation.mode != GenerationMode.POSITIVE:
        return None
    return case.body if isinstance(case.body, dict) else None


def conforms(context: Any, body: Any) -> bool:
    """Whether a body meant to be schema-valid is: the coverage phase has been seen to send
    a "valid_object" body that carries a property another (negative) scenario added, which
    the schema forbids (additionalProperties: false)."""
    operation = context.operation
    document = operation.schema.raw_schema
    try:
        request_body = document["paths"][operation.path][operation.method.lower()]["requestBody"]
        schema = request_body["content"]["application/json"]["schema"]
    except (KeyError, TypeError):
        return True
    validator = Draft202012Validator({**schema, "components": document.get("components", {})})
    return validator.is_valid(body)


def _body_positive(case: Any) -> bool:
    """Whether the case's body is meant to be schema-valid (the case as a whole may be
    negative in another part, e.g. an extra header)."""
    meta = case.meta
    if meta is None:
        return True
    component = meta.components.get(ParameterLocation.BODY)
    mode = component.mode if component is not None else meta.generation.mode
    return bool(mode == GenerationMode.POSITIVE)


# Case-level hooks: schemathesis applies them in every phase, the coverage phase included
# (body-level hooks are skipped there).
@schemathesis.hook
def filter_case(context: Any, case: Any) -> bool:
    has_body = case.body is not NOT_SET and case.body is not None
    if has_body and _body_positive(case) and not conforms(context, case.body):
        # Generated as schema-valid but is not (seen in the coverage phase: the body 0
        # beside a header scenario; a negative scenario's extra property left in a body
        # marked positive): a rejection would be right, so the case is dropped.
        return False
    body = _body_dict(case)
    if body is None:
        return True
    if _is(context, "POST", "/tasks"):
        return graph_is_consistent(body.get("plan"))
    if _is(context, "POST", "/attempts") and not attempt_is_consistent(body):
        return False
    if _is(context, "POST", "/attempts") or _is(context, "POST", "/events"):
        return "\\u0000" not in json.dumps(body)
    return True


def _names_a_model(value: Any) -> bool:
    """A schema-valid provider:name (MODEL_NAME without its blank; a second_model's
    'none' is no such name either)."""
    return (
        isinstance(value, str)
        and bool(value.strip())
        and len(value) <= 200
        and re.search(MODEL_NAME, value) is not None
    )


def _any_case_ids(value: Any) -> bool:
    """A schema-valid list of case ids or categories (strings without NUL, at most 200)."""
    return (
        isinstance(value, list)
        and len(value) <= 200
        and all(isinstance(item, str) and "\x00" not in item for item in value)
    )


@schemathesis.hook
def map_case(context: Any, case: Any) -> Any:
    _keep_to_the_data(context, case)
    return case


def _keep_to_the_data(context: Any, case: Any) -> None:
    """The rules above applied to a schema-valid body. Called for every generated case
    (``map_case``) and again before every call (``before_call``): the stateful phase
    sends bodies derived along the document's links, which have been seen to carry a
    decision's generated claim labels (citing evidence of another task: 422)."""
    body = _body_dict(case)
    if body is None:
        return
    if _is(context, "POST", "/replay") and _names_a_model(body.get("model")):
        body["model"] = "offline:judge"
    candidate = _is(context, "POST", "/judges/comparisons") or _is(
        context, "POST", "/judges/shadow"
    )
    if candidate and _names_a_model(body.get("model")):
        body["model"] = "offline:judge"
    if _is(context, "POST", "/feedback") and isinstance(body.get("claims"), list):
        # Which claims the task's validation has is data, not schema: no labels.
        body["claims"] = []
    if _is(context, "POST", "/claim-labels") and isinstance(case.path_parameters, dict):
        # The labels are the whole request and need at least one: which claims and
        # evidence the decided validation has is data, so a generated label is refused
        # (422) wherever a decision exists. The request goes to a task no one has (the
        # documented 404); tests/api/test_decision_claim_labels_api.py covers the labels.
        case.path_parameters["task_id"] = NO_SUCH_TASK
    if _is(context, "POST", "/judges/comparisons") and _any_case_ids(body.get("cases")):
        # Which held-out cases exist is data, not schema: every held-out case.
        body["cases"] = []
    if _is(context, "POST", "/tasks") and _names_a_model(body.get("second_model")):
        body["second_model"] = "offline:judge-corroborating"
    if _is(context, "POST", "/tasks") and ("audit_rate" in body or "audit_reject_rate" in body):
        body["audit_rate_reason"] = "A rate chosen by the schemathesis run."
    if _is(context, "POST", "/webhooks") and isinstance(body.get("url"), str):
        body["url"] = "http://93.184.216.34/hook"


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: Any) -> None:
    """A fresh Idempotency-Key for every request sent (the phases derive several bodies
    from one generated case, keeping its headers). A broken key (empty, over 255
    characters) stays broken, whatever the case's mode. And the body kept to the data
    (``_keep_to_the_data``), whichever phase made it."""
    _keep_to_the_data(context, case)
    headers = case.headers  # a case-insensitive mapping, or None
    if not isinstance(headers, MutableMapping):
        return
    for name, value in list(headers.items()):
        well_formed = isinstance(value, str) and 0 < len(value.strip()) <= 255
        if name.lower() == "idempotency-key" and well_formed:
            headers[name] = f"st-{uuid.uuid4().hex}"


@schemathesis.hook
def map_path_parameters(context: Any, path_parameters: Any) -> Any:
    if not isinstance(path_parameters, dict):
        return path_parameters
    for name, choices in REAL_IDS.items():
        value = path_parameters.get(name)
        # Only a well-formed id is swapped: a negative case's broken id stays broken.
        well_formed = isinstance(value, int) and not isinstance(value, bool)
        if well_formed and choices and _random.random() < 0.5:
            path_parameters[name] = _random.choice(choices)
    return path_parameters
