"""Fixtures of the validator tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from project.llm.registry import register_model, unregister_model
from tests.evidence_app.validation_helpers import JUDGE, ScriptedJudge


@pytest.fixture
def scripted_judge(settings: Any) -> Iterator[ScriptedJudge]:
    """The validator model is a scripted FunctionModel registered as ``test:judge``."""
    judge = ScriptedJudge()
    register_model(JUDGE, judge.factory())
    settings.VALIDATOR_MODEL = JUDGE
    settings.MODEL_MAX_RETRIES = 0
    settings.MODEL_RETRY_BASE_DELAY_SECONDS = 0
    yield judge
    unregister_model(JUDGE)
