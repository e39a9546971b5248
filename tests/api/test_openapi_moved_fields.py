"""Issue 45: the moves out of tasks_app hold the API's behaviour. The schemas whose
fields now come from evidence_app (a task's audit rates and second judge, in
``TaskCreateIn`` and ``TaskOut``; the webhook events it registers, in ``WebhookIn``) are
byte for byte what they were before the moves: tests/api/openapi/issue45-moved-fields.json
holds them as the document served them then."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.test import Client

BEFORE = Path(__file__).parent / "openapi" / "issue45-moved-fields.json"


def test_the_schemas_of_the_moved_fields_are_byte_identical(db: Any) -> None:
    response = Client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    schemas = response.json()["components"]["schemas"]
    before = BEFORE.read_text(encoding="utf-8")
    now = {name: schemas[name] for name in json.loads(before)}
    assert json.dumps(now, indent=1, ensure_ascii=False) + "\n" == before
