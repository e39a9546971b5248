"""Clients for API tests: one authenticated with a bearer token per person."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.test import Client

from tasks_app.accounts.auth import api_token_create


def bearer_client(user: Any) -> Client:
    _, raw = api_token_create(user=user, name="test")
    return Client(headers={"Authorization": f"Bearer {raw}"})


@pytest.fixture
def client_for(db: Any) -> Callable[[Any], Client]:
    return bearer_client


@pytest.fixture
def alice(requester: Any) -> Client:
    return bearer_client(requester)


@pytest.fixture
def bob(other_requester: Any) -> Client:
    return bearer_client(other_requester)


@pytest.fixture
def rita(reviewer: Any) -> Client:
    return bearer_client(reviewer)


@pytest.fixture
def otto(operator: Any) -> Client:
    return bearer_client(operator)
