"""The OpenAPI document keeps its contract (issue 11): compared with the baseline
committed in tests/api/openapi/baseline.json (the document before the Seams round), no
path, operation, parameter, field, status code or type is removed or changed. Additions
by later work are allowed; the test prints them so a reviewer sees what grew."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.api.openapi_contract import compare, unannounced

BASELINE = Path(__file__).parent / "openapi" / "baseline.json"
CHANGELOG = Path(__file__).resolve().parents[2] / "docs" / "api-changelog.md"


@pytest.fixture
def current_document(db: Any) -> dict[str, Any]:
    response = Client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_openapi_document_keeps_every_path_field_and_status_of_the_baseline(
    current_document: dict[str, Any],
) -> None:
    """Issue 11: a client generated from the baseline document still works, but for the
    breaking changes docs/api-changelog.md announces (issue 34)."""
    baseline = json.loads(BASELINE.read_text())
    breaks, additions = compare(baseline, current_document)
    print(f"OpenAPI contract: {len(breaks)} breaking changes, {len(additions)} additions")
    for line in additions:
        print(f"  + {line}")
    left = unannounced(breaks, CHANGELOG.read_text())
    assert not left, "\n".join(left)
    assert len(current_document["paths"]) >= len(baseline["paths"])


def test_the_comparison_catches_a_removed_field_status_parameter_and_type(
    current_document: dict[str, Any],
) -> None:
    """Issue 11: the check above can fail -- each kind of break is reported."""
    baseline = json.loads(BASELINE.read_text())
    broken = copy.deepcopy(current_document)
    schemas = broken["components"]["schemas"]
    del schemas["TaskListItemOut"]["properties"]["owner"]
    schemas["RunOut"]["properties"]["attempt_index"] = {"type": "string"}
    del broken["paths"]["/api/v1/tasks/{task_id}/feedback"]["post"]["responses"]["409"]
    listing = broken["paths"]["/api/v1/tasks"]["get"]
    listing["parameters"] = [p for p in listing["parameters"] if p["name"] != "offset"]
    del broken["paths"]["/api/v1/me"]

    breaks, _ = compare(baseline, broken)
    text = "\n".join(breaks)
    assert "GET /api/v1/tasks 200.items[].owner: field removed" in text
    assert "attempt_index: type ['integer'] became ['string']" in text
    assert "POST /api/v1/tasks/{task_id}/feedback status 409: removed" in text
    assert "GET /api/v1/tasks query parameter offset: removed" in text
    assert "/api/v1/me: path removed" in text
