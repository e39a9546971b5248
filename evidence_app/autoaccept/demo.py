"""Auto-accept at a certified risk shown on the demo, once the demo has settled: the
scripted history and its steps, which ``manage.py demo_autoaccept`` runs (``make run``
runs it in the background, beside ``demo_audits``):

    manage.py demo_autoaccept --wait 300

1. A scripted history of labelled verdicts, stored on one task of the operator's
   ("Scripted history ..."): 210 audited accepts of the demo's judge, whose scores say
   how sure it was (0.85–1.0; the wrong ones score under 0.95), and 160 of the shadow
   candidate (the corroborating judge, scores 0.5). No real judge wrote them: a demo
   has too few tasks to certify anything (at 2 % a threshold needs 149 labelled
   accepts, all right).
2. The certification job certifies a threshold for each; each runs in shadow and is
   approved by the demo operator (the shadow period is skipped: its start is set back
   by AUTOACCEPT_SHADOW_HOURS).
3. Three answers from an external agent are validated by the demo's judge through the
   usual path: one whose fact two documents state (score 1.0: auto-accepted, above the
   threshold), one stated once (0.9: sent to a person, below the certified threshold),
   and the same once more on a task that asks for a second judge (the same model): the
   second judge agrees, and the answer still goes to a person: a task's own options
   never skip its judge's threshold.
4. Ten audits of the candidate's auto-accepts after its approval, all judged wrong
   (scripted), and the job runs again: the drift rule stops the candidate's auto-accept,
   and Trust, /metrics and the ``auto_accept.stopped`` webhook say so.
5. The report names ``AUTOACCEPT_UNCERTIFIED``: with ``auto-accept`` (the default) the
   demo's own tasks, judged before any threshold existed, were accepted by the judge's
   word; run the demo with ``certified-only`` and each of their accepts goes to a person.

Idempotent: it does nothing once the history exists."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.utils import timezone

from evidence_app.autoaccept.recompute import thresholds_recompute
from evidence_app.autoaccept.selectors import JudgeKey
from evidence_app.autoaccept.services import threshold_approve, threshold_shadow_start
from evidence_app.models import (
    Audit,
    AuditState,
    AutoAcceptThreshold,
    ThresholdState,
    ValidationSnapshot,
)
from evidence_app.offline_judge.judge import CORROBORATING_MODEL_NAME
from evidence_app.validator.templates import get_template
from tasks_app.actions import AttemptIn, task_create
from tasks_app.actions import external_attempt_submit as submit
from tasks_app.records import Task, TaskAgent

HISTORY_TITLE = "Scripted history: audited verdicts for the auto-accept demo"
HOTEL_SENTENCE = "The maximum hotel rate for a standard business trip is 150 EUR per night."
REQUEST = "What is the maximum hotel rate per night for a standard business trip?"
# (title, tool results) of the two answers the demo's judge validates.
ANSWERS = (
    (
        "Auto-accept demo: hotel rate, stated by two documents",
        [
            ("Travel policy", f"Hotels. {HOTEL_SENTENCE} Book close to the site."),
            ("Travel desk FAQ", f"Q: How much may a hotel cost? A: {HOTEL_SENTENCE}"),
        ],
    ),
    (
        "Auto-accept demo: hotel rate, stated once",
        [("Travel policy", f"Hotels. {HOTEL_SENTENCE} Book close to the site.")],
    ),
)
# The answer stated once, on a task that asks for a second judge.
SECOND_JUDGE_TITLE = "Auto-accept demo: hotel rate, stated once, with a second judge"


def _history_scores() -> list[tuple[float, bool]]:
    """(score, wrong) of the demo judge's scripted labels: 170 sure and right (0.95 to
    1.0), 40 less sure (0.85 to 0.94), one in five of them wrong, the surest of them
    among the wrong: the certified threshold is 0.95."""
    sure = [(0.95 + (i % 6) / 100, False) for i in range(170)]
    unsure = [(0.94 - (i % 10) / 100, i % 5 == 0) for i in range(40)]
    return sure + unsure


class AutoAcceptDemo:
    """The demo's steps, written to ``stdout``; ``settled``: the statuses of a task the
    demo no longer moves; ``current_judge``: the team's judge, (template, model)."""

    def __init__(
        self,
        stdout: Any,
        *,
        settled: Collection[str],
        current_judge: Callable[[], tuple[str, str]],
    ) -> None:
        self.stdout = stdout
        self.settled = settled
        self.current_judge = current_judge

    def show(self, *, wait: float) -> None:
        User = get_user_model()
        operator = User.objects.filter(username="operator").first()
        requester = User.objects.filter(username="requester").first()
        if operator is None or requester is None:
            self.stdout.write("demo auto-accept: no demo accounts (run manage.py seed_demo)")
            return
        if Task.objects.filter(title=HISTORY_TITLE).exists():
            self.stdout.write("demo auto-accept: already shown")
            return
        if not self._settled(requester, wait):
            self.stdout.write("demo auto-accept: the demo has not settled; nothing done")
            return
        template, model = self.current_judge()
        judge = JudgeKey(get_template(template).version, model)
        candidate = JudgeKey(get_template("terse").version, CORROBORATING_MODEL_NAME)
        history = task_create(
            owner=operator,
            title=HISTORY_TITLE,
            request="(no request: the rows of this task are a scripted history of audited "
            "verdicts, for the auto-accept demo)",
            agent=TaskAgent.EXTERNAL,
            enqueue=False,
        )
        since = timezone.now() - timedelta(days=20)
        self._labels(history, judge, _history_scores(), since)
        self._labels(history, candidate, [(0.5, False)] * 160, since)
        thresholds_recompute()
        for key in (judge, candidate):
            self._approve(key, operator)
        # The scripted approval is an hour old, so that the candidate's scripted
        # auto-accepts after it lie in the past, before the stop they cause.
        approved = timezone.now() - timedelta(hours=1)
        AutoAcceptThreshold.objects.approved().filter(
            pk__in=[self._approved(key).pk for key in (judge, candidate)]
        ).update(approved_at=approved)
        self._answers(requester, second_model=model)
        later = approved + timedelta(minutes=1)
        self._labels(history, candidate, [(0.5, True)] * 10, later)
        thresholds_recompute()
        self._report(judge, candidate, requester, wait)

    def _approved(self, key: JudgeKey) -> AutoAcceptThreshold:
        return AutoAcceptThreshold.objects.approved().for_judge(
            key.template_version, key.model_name
        )[0]

    def _settled(self, requester: Any, wait: float) -> bool:
        tasks = Task.objects.filter(owner=requester)
        deadline = time.monotonic() + wait
        while tasks.exclude(status__in=self.settled).exists() and time.monotonic() < deadline:
            time.sleep(2)
        return not tasks.exclude(status__in=self.settled).exists()

    def _labels(
        self,
        task: Task,
        key: JudgeKey,
        labels: list[tuple[float, bool]],
        since: Any,
    ) -> None:
        """Scripted auto-accepted verdicts of ``key`` on ``task``, each audited (drawn with
        probability 1) and judged by the demo reviewer: right or wrong."""
        start = ValidationSnapshot.objects.filter(task=task).count() + 1
        rows = ValidationSnapshot.objects.bulk_create(
            ValidationSnapshot(
                task=task,
                attempt_index=start + i,
                status="accepted",
                score=score,
                route="auto_accepted",
                audit_probability=1.0,
                template_version=key.template_version,
                model_name=key.model_name,
                created_at=since + timedelta(minutes=i),
            )
            for i, (score, _wrong) in enumerate(labels)
        )
        reviewer = get_user_model().objects.filter(username="reviewer").first()
        Audit.objects.bulk_create(
            Audit(
                snapshot=row,
                task=task,
                attempt_index=row.attempt_index,
                route="auto_accepted",
                probability=1.0,
                template_version=key.template_version,
                model_name=key.model_name,
                state=AuditState.DONE,
                reviewer=reviewer,
                correct=not wrong,
                comment="Scripted demo label." if not wrong else "Scripted demo label: wrong.",
                created_at=row.created_at,
                first_viewed_at=row.created_at,
                decided_at=row.created_at + timedelta(seconds=30),
            )
            for row, (_score, wrong) in zip(rows, labels, strict=True)
        )

    def _approve(self, key: JudgeKey, operator: Any) -> None:
        row = AutoAcceptThreshold.objects.for_judge(key.template_version, key.model_name).get(
            state=ThresholdState.PROPOSED
        )
        threshold_shadow_start(threshold_id=row.pk, user=operator)
        # The demo skips the shadow period: its start is set back by its length.
        AutoAcceptThreshold.objects.filter(pk=row.pk).update(
            shadow_started_at=timezone.now()
            - timedelta(hours=settings.AUTOACCEPT_SHADOW_HOURS, seconds=1)
        )
        threshold_approve(threshold_id=row.pk, user=operator)

    def _answers(self, requester: Any, *, second_model: str) -> None:
        answers = [(title, documents, "") for title, documents in ANSWERS]
        answers.append((SECOND_JUDGE_TITLE, ANSWERS[1][1], second_model))
        for title, documents, second in answers:
            # At the deployment's audit-rate floor, as any requester's task (a requester
            # may not lower it); an audit drawn here stays open for a person.
            task = task_create(
                owner=requester,
                title=title,
                request=REQUEST,
                agent=TaskAgent.EXTERNAL,
                second_model=second,
            )
            attempt = AttemptIn.model_validate(
                {
                    "final_answer": HOTEL_SENTENCE,
                    "runs": [
                        {
                            "model": "demo:external-agent",
                            "output_text": HOTEL_SENTENCE,
                            "tool_results": [
                                {"tool_name": "read_document", "title": name, "content": text}
                                for name, text in documents
                            ],
                        }
                    ],
                }
            )
            submit(task_id=task.pk, attempt=attempt, actor=requester)

    def _report(self, judge: JudgeKey, candidate: JudgeKey, requester: Any, wait: float) -> None:
        titles = [*(title for title, _ in ANSWERS), SECOND_JUDGE_TITLE]
        tasks = Task.objects.filter(owner=requester, title__in=titles)
        deadline = time.monotonic() + wait
        while tasks.exclude(status__in=self.settled).exists() and time.monotonic() < deadline:
            time.sleep(1)
        for key in (judge, candidate):
            row = self._approved(key)
            state = "stopped by drift" if row.stopped else "auto-accepting"
            self.stdout.write(
                f"demo auto-accept: {key.label}: threshold {row.threshold:.2f} approved, {state}"
            )
        for task in tasks.order_by("pk"):
            self.stdout.write(f"demo auto-accept: task {task.pk} '{task.title}': {task.status}")
        self.stdout.write(
            "demo auto-accept: judges without an approved threshold: "
            f"AUTOACCEPT_UNCERTIFIED={settings.AUTOACCEPT_UNCERTIFIED} ("
            + (
                "their accepts go to the requester, marked not certified; certified-only "
                "sends them to a person)"
                if settings.AUTOACCEPT_UNCERTIFIED == "auto-accept"
                else "their accepts go to a person; auto-accept lets them through)"
            )
        )
