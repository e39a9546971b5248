"""Fixtures for the agent runtime tests: scripted models registered by name."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pydantic_ai.models.function import FunctionModel

from project.llm.registry import register_model, unregister_model


@pytest.fixture
def scripted_model() -> Iterator[Callable[..., str]]:
    """``scripted_model(fn, name="test:x")`` registers a FunctionModel under a name
    and returns the name; unregistered after the test."""
    names: list[str] = []

    def register(fn: Callable[..., Any], name: str = "test:scripted") -> str:
        register_model(name, lambda: FunctionModel(fn, model_name=name))
        names.append(name)
        return name

    yield register
    for name in names:
        unregister_model(name)
