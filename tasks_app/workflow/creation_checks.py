"""Checks another app registers on what a task is created with (``task_create``), and the
settings it keeps beside the new task. A check reads the owner and the creation fields
and raises a ``DomainError`` that refuses the task, or returns what to store for the new
task (a function called with it in the transaction that creates it), or None when there
is nothing to store.

tasks_app passes the fields through and stores none of them: a task's audit rates, who
may set one below the floor, and its second judge are evidence_app's, kept in its own
table beside the task (``evidence_app.validation.task_settings.task_settings_checked``,
registered when Django starts; the tasks API shows them through ``task_settings``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tasks_app.workflow.models import Task

CreationStore = Callable[["Task"], object]
CreationCheck = Callable[[Any, Mapping[str, Any]], CreationStore | None]

_checks: list[CreationCheck] = []


def register_creation_check(check: CreationCheck) -> None:
    """Run ``check`` on every task created from now on (once, however often registered)."""
    if check not in _checks:
        _checks.append(check)


def creation_stores(owner: Any, fields: Mapping[str, Any]) -> list[CreationStore]:
    """What the registered checks store with a new task of ``owner``; the first check
    that refuses raises, before anything is written."""
    stores = []
    for check in _checks:
        store = check(owner, fields)
        if store is not None:
            stores.append(store)
    return stores
