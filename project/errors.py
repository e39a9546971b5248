"""Domain errors. ``project.api`` maps each to an HTTP status; views show the message."""

from __future__ import annotations


class DomainError(Exception):
    """Base class: a request that the domain refuses, with a message for people."""

    code = "domain_error"
    http_status = 400

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class IllegalTransition(DomainError):
    code = "illegal_transition"
    http_status = 409

    def __init__(self, *, task_id: int, from_status: str, to_status: str) -> None:
        super().__init__(f"Task {task_id} cannot move from '{from_status}' to '{to_status}'.")
        self.task_id = task_id
        self.from_status = from_status
        self.to_status = to_status


class StaleAction(DomainError):
    """The task changed since the actor looked at it."""

    code = "stale_action"
    http_status = 409


class ClaimConflict(DomainError):
    """Another reviewer holds the claim on this task."""

    code = "claimed_by_other"
    http_status = 409


class Forbidden(DomainError):
    """The actor may not do this to this object (e.g. undo someone else's decision)."""

    code = "permission_denied"
    http_status = 403


class InvalidInput(DomainError):
    code = "invalid_input"
    http_status = 422


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (its class name when it has none): what
    a one-line WARNING about an expected failure says, instead of a traceback."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
