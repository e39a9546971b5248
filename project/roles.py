"""Roles are Django groups created by migration 0002 (roles: docs/ui.md)."""

from __future__ import annotations

from typing import Any

from ninja.errors import AuthorizationError

REVIEWERS = "reviewers"
OPERATORS = "operators"


def _group_names(user: Any) -> set[str]:
    if not getattr(user, "is_authenticated", False):
        return set()
    cached = getattr(user, "_evidentia_groups", None)
    if cached is None:
        cached = set(user.groups.values_list("name", flat=True))
        user._evidentia_groups = cached
    return cached


def is_reviewer(user: Any) -> bool:
    return bool(getattr(user, "is_superuser", False)) or REVIEWERS in _group_names(user)


def is_operator(user: Any) -> bool:
    return bool(getattr(user, "is_superuser", False)) or OPERATORS in _group_names(user)


def is_staff_role(user: Any) -> bool:
    """Reviewers and operators see every task; requesters only their own."""
    return is_reviewer(user) or is_operator(user)


def require_operator(user: Any) -> None:
    if not is_operator(user):
        raise AuthorizationError(message="Only operators may do this.")


def require_reviewer(user: Any) -> None:
    # The UI's rule too: reviewers claim; operators inspect but do not decide.
    if not is_reviewer(user):
        raise AuthorizationError(message="Only reviewers may claim tasks.")
