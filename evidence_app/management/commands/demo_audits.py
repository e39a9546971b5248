"""Judge part of the demo's audits from the demo's own labels, once the demo has settled
(``make run`` starts it in the background), so the trust page has an estimate to show.

    manage.py demo_audits --wait 300 --share 0.5

A demo task's answer is correct when its spec expects an answer (``supported``,
``deep_fact``) and the answer states every figure of the spec's ``answer_fact``
(``demo/tasks.json``); the audit is judged by the demo ``reviewer`` with a comment
saying so. The other audits stay open for a person to judge blind."""

from __future__ import annotations

import json
import math
import re
import time
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser

from evidence_app.models import Audit, AuditState
from evidence_app.trust.audits import audit_judge
from tasks_app.records import Task, TaskStatus

SETTLED = {
    TaskStatus.AWAITING_FEEDBACK,
    TaskStatus.NEEDS_REVIEW,
    TaskStatus.FAILED,
    TaskStatus.CLOSED,
    TaskStatus.ABANDONED,
}
ANSWERING = {"supported", "deep_fact"}
_FIGURE_RE = re.compile(r"[A-Z]{3,}-\d+|\d[\d,.]*\d|\d")


def figures(text: str) -> set[str]:
    """The figures and code words of a text, separators dropped (1,750 -> 1750)."""
    return {re.sub(r"[,.]", "", f) for f in _FIGURE_RE.findall(text)}


def demo_label(spec: dict[str, Any], answer: str) -> tuple[bool, str]:
    """(correct, comment) for a demo task's answer, from its spec."""
    if spec.get("expect") not in ANSWERING:
        return False, (
            f"Demo label (demo/tasks.json): the handbook gives no single answer here "
            f"(expected '{spec.get('expect')}'), so an accepted answer is wrong."
        )
    missing = figures(spec.get("answer_fact", "")) - figures(answer)
    if missing:
        lacking = ", ".join(sorted(missing))
        return False, f"Demo label (demo/tasks.json): the answer lacks {lacking}."
    return True, "Demo label (demo/tasks.json): the answer states the expected fact."


class Command(BaseCommand):
    help = "Judge a share of the demo's open audits from the demo's own labels."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--wait", type=float, default=0, help="seconds to wait to settle")
        parser.add_argument("--share", type=float, default=0.5, help="share of audits to judge")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        requester = User.objects.filter(username="requester").first()
        reviewer = User.objects.filter(username="reviewer").first()
        if requester is None or reviewer is None:
            self.stdout.write("demo audits: no demo accounts (run manage.py seed_demo)")
            return
        tasks = Task.objects.filter(owner=requester)
        deadline = time.monotonic() + options["wait"]
        while tasks.exclude(status__in=SETTLED).exists() and time.monotonic() < deadline:
            time.sleep(2)
        if tasks.exclude(status__in=SETTLED).exists():
            self.stdout.write("demo audits: the demo has not settled; nothing judged")
            return
        specs = {
            spec["title"]: spec
            for spec in json.loads(
                (settings.BASE_DIR / "demo" / "tasks.json").read_text(encoding="utf-8")
            )
        }
        audits = list(
            Audit.objects.filter(task__owner=requester, state=AuditState.OPEN)
            .select_related("task")
            .order_by("created_at", "id")
        )
        chosen = audits[: math.ceil(len(audits) * options["share"])]
        for audit in chosen:
            spec = specs.get(audit.task.title, {})
            correct, comment = demo_label(spec, audit.task.final_answer)
            audit_judge(audit.pk, user=reviewer, correct=correct, comment=comment)
        self.stdout.write(
            f"demo audits: {len(chosen)} judged from the demo's labels, "
            f"{len(audits) - len(chosen)} left open for you at /review/audits/"
        )
