"""S1–S3, S5: statuses, flags, the transition table and feedback actions."""

from __future__ import annotations

import itertools

import pytest

from project.errors import IllegalTransition, InvalidInput, StaleAction
from tasks_app.models import Feedback, Task, TaskEvent
from tasks_app.workflow import services, states, transitions
from tasks_app.workflow.states import TaskStatus as S
from tests.factories import TaskFactory, ValidationSnapshotFactory

EXPECTED_FLAGS = {
    # status: (is_open, is_execution_active, requires_user_action)
    S.OPEN: (True, False, False),
    S.RUNNING: (True, True, False),
    S.VALIDATING: (True, True, False),
    S.AWAITING_FEEDBACK: (True, False, True),
    S.NEEDS_REVIEW: (True, False, True),
    S.NEEDS_REVISION: (True, False, False),
    S.FAILED: (False, False, False),
    S.CLOSED: (False, False, False),
    S.ABANDONED: (False, False, False),
}

LEGAL = {
    (S.OPEN, S.RUNNING),
    (S.OPEN, S.ABANDONED),
    (S.RUNNING, S.RUNNING),
    (S.RUNNING, S.VALIDATING),
    (S.RUNNING, S.FAILED),
    (S.RUNNING, S.OPEN),
    (S.RUNNING, S.ABANDONED),
    (S.VALIDATING, S.AWAITING_FEEDBACK),
    (S.VALIDATING, S.NEEDS_REVIEW),
    (S.VALIDATING, S.NEEDS_REVISION),
    (S.VALIDATING, S.FAILED),
    (S.VALIDATING, S.ABANDONED),
    (S.AWAITING_FEEDBACK, S.CLOSED),
    (S.AWAITING_FEEDBACK, S.NEEDS_REVISION),
    (S.AWAITING_FEEDBACK, S.ABANDONED),
    (S.NEEDS_REVIEW, S.CLOSED),
    (S.NEEDS_REVIEW, S.NEEDS_REVISION),
    (S.NEEDS_REVIEW, S.ABANDONED),
    (S.NEEDS_REVISION, S.RUNNING),
    (S.NEEDS_REVISION, S.ABANDONED),
}


def test_there_are_exactly_nine_statuses_and_three_terminal() -> None:
    """S1."""
    assert set(S.values) == {s.value for s in EXPECTED_FLAGS}
    assert states.TERMINAL_STATUSES == {S.FAILED, S.CLOSED, S.ABANDONED}


@pytest.mark.parametrize("status", list(S))
def test_flags_match_spec_for_every_status(status: S) -> None:
    """S2: flags on the model match the table in docs/runtime.md for all nine statuses."""
    task = Task(status=status)
    assert (task.is_open, task.is_execution_active, task.requires_user_action) == EXPECTED_FLAGS[
        status
    ]


def test_needs_review_is_open_inactive_and_needs_action_and_not_runnable() -> None:
    """S2, S4."""
    task = Task(status=S.NEEDS_REVIEW)
    assert task.is_open and not task.is_execution_active and task.requires_user_action
    assert S.NEEDS_REVIEW not in states.RUNNABLE_STATUSES


def test_terminal_statuses_have_no_way_out() -> None:
    """S1."""
    for status in states.TERMINAL_STATUSES:
        assert states.TRANSITIONS[status] == frozenset()


def test_transition_table_is_exactly_the_documented_edges() -> None:
    """S3: the table is the contract; a change to it must change this test."""
    table = {(a, b) for a, targets in states.TRANSITIONS.items() for b in targets}
    assert table == LEGAL


@pytest.mark.django_db
@pytest.mark.parametrize("edge", sorted(LEGAL))
def test_every_legal_transition_applies_and_records_an_event(edge: tuple[S, S]) -> None:
    """S3."""
    from_status, to_status = edge
    task = TaskFactory(status=from_status)
    updated = transitions.task_transition(
        transitions.Transition(task_id=task.pk, to_status=to_status, reason="test")
    )
    assert updated.status == to_status
    task.refresh_from_db()
    assert task.status == to_status
    assert task.version == 1
    event = TaskEvent.objects.get(task=task)
    assert (event.from_status, event.to_status, event.reason) == (from_status, to_status, "test")


@pytest.mark.django_db
@pytest.mark.parametrize("edge", [e for e in itertools.product(list(S), list(S)) if e not in LEGAL])
def test_every_illegal_transition_raises_and_changes_nothing(edge: tuple[S, S]) -> None:
    """S3: an illegal transition raises the domain error; nothing is written."""
    from_status, to_status = edge
    task = TaskFactory(status=from_status)
    with pytest.raises(IllegalTransition):
        transitions.task_transition(transitions.Transition(task_id=task.pk, to_status=to_status))
    task.refresh_from_db()
    assert task.status == from_status
    assert not TaskEvent.objects.filter(task=task).exists()


@pytest.mark.django_db
def test_stale_version_is_refused() -> None:
    """S3/U3: an action based on an old view of the task is refused."""
    task = TaskFactory(status=S.NEEDS_REVIEW)
    transitions.task_transition(transitions.Transition(task_id=task.pk, to_status=S.NEEDS_REVISION))
    with pytest.raises(StaleAction):
        services.task_apply_feedback(
            task_id=task.pk, actor=task.owner, action="abandon", expected_version=0
        )


@pytest.mark.django_db
def test_fenced_write_with_a_taken_over_lease_is_refused() -> None:
    """X1: a worker whose lease was taken over cannot move the task."""
    task = TaskFactory(status=S.RUNNING, lease_token="new-owner")
    with pytest.raises(StaleAction):
        transitions.task_transition(
            transitions.Transition(task_id=task.pk, to_status=S.VALIDATING, lease_token="old-owner")
        )
    task.refresh_from_db()
    assert task.status == S.RUNNING


@pytest.mark.django_db
def test_satisfied_closes_and_marks_force_accept_without_validator_accept(requester) -> None:
    """S5, V3: closing an answer the validator did not accept is a force-accept."""
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    ValidationSnapshotFactory(task=task, status="insufficient_evidence")
    task = services.task_apply_feedback(task_id=task.pk, actor=requester, action="satisfied")
    assert task.status == S.CLOSED
    assert task.validation_outcome == "force_accepted"
    feedback = Feedback.objects.get(task=task)
    assert (feedback.action, feedback.validator_status) == ("satisfied", "insufficient_evidence")


@pytest.mark.django_db
def test_satisfied_after_validator_accept_keeps_accepted_outcome(requester) -> None:
    """V3."""
    task = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
    ValidationSnapshotFactory(task=task, status="accepted")
    task = services.task_apply_feedback(task_id=task.pk, actor=requester, action="satisfied")
    assert task.validation_outcome == "accepted"


@pytest.mark.django_db
def test_revise_requires_a_comment_and_moves_to_needs_revision(requester) -> None:
    """S5."""
    task = TaskFactory(owner=requester, status=S.AWAITING_FEEDBACK)
    with pytest.raises(InvalidInput):
        services.task_apply_feedback(
            task_id=task.pk, actor=requester, action="revise", comment="  "
        )
    task.refresh_from_db()
    assert task.status == S.AWAITING_FEEDBACK
    task = services.task_apply_feedback(
        task_id=task.pk, actor=requester, action="revise", comment="Cite the document."
    )
    assert task.status == S.NEEDS_REVISION
    assert Feedback.objects.get(task=task).comment == "Cite the document."


@pytest.mark.django_db
def test_abandon_from_running_and_feedback_on_terminal_task_is_illegal(requester) -> None:
    """S5: abandon works while running; a closed task takes no more feedback."""
    task = TaskFactory(owner=requester, status=S.RUNNING, lease_token="t")
    task = services.task_apply_feedback(task_id=task.pk, actor=requester, action="abandon")
    assert task.status == S.ABANDONED
    assert task.lease_token == ""
    with pytest.raises(IllegalTransition):
        services.task_apply_feedback(task_id=task.pk, actor=requester, action="satisfied")


@pytest.mark.django_db
def test_unknown_feedback_action_is_invalid_input(requester) -> None:
    task = TaskFactory(owner=requester, status=S.NEEDS_REVIEW)
    with pytest.raises(InvalidInput):
        services.task_apply_feedback(task_id=task.pk, actor=requester, action="approve")
