"""Checks another app registers on what a task is created with (``task_create``): each
reads the owner and the creation fields and returns more columns to store with the task
(an operator's recorded exception), or raises a ``DomainError`` that refuses the task.

tasks_app keeps the columns and knows none of the rules: the audit rates' floor, and who
may go below it, are evidence_app's (``evidence_app.trust.audits.audit_rates_checked``,
registered when Django starts)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

CreationCheck = Callable[[Any, Mapping[str, Any]], dict[str, Any]]

_checks: list[CreationCheck] = []


def register_creation_check(check: CreationCheck) -> None:
    """Run ``check`` on every task created from now on (once, however often registered)."""
    if check not in _checks:
        _checks.append(check)


def creation_columns(owner: Any, fields: Mapping[str, Any]) -> dict[str, Any]:
    """The columns the registered checks add for a new task of ``owner``; the first check
    that refuses raises."""
    columns: dict[str, Any] = {}
    for check in _checks:
        columns.update(check(owner, fields))
    return columns
