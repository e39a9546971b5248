"""Demo accounts, the demo handbook and demo tasks for ``make run``, and the measuring of
trust the demo shows: every demo task's automatic verdicts are audited (its spec's
``audit_rate``), one task has a second judge (``second_model``) and a candidate judges
in shadow (``offline:judge-corroborating`` with the ``terse`` template)."""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from evidence_app.judges.gate import shadow_start
from evidence_app.models import ShadowJudge
from evidence_app.offline_judge.judge import CORROBORATING_MODEL_NAME
from project.roles import OPERATORS, REVIEWERS
from tasks_app import actions
from tasks_app.actions import import_folder
from tasks_app.records import Task

DEMO_DIR = settings.BASE_DIR / "demo"
# The candidate the demo runs in shadow: another template on the stricter offline judge.
DEMO_SHADOW = ("terse", CORROBORATING_MODEL_NAME)
DEMO_USERS = [
    # username, password, groups, is_staff
    ("requester", "requester-demo", [], False),
    ("reviewer", "reviewer-demo", [REVIEWERS], True),
    ("operator", "operator-demo", [OPERATORS, REVIEWERS], True),
]


class Command(BaseCommand):
    help = "Create demo users, import the demo handbook and queue the demo tasks (idempotent)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--no-tasks", action="store_true", help="skip creating demo tasks")

    def handle(self, *args: Any, no_tasks: bool = False, **options: Any) -> None:
        User = get_user_model()
        for username, password, groups, is_staff in DEMO_USERS:
            user, created = User.objects.get_or_create(username=username)
            if created:
                user.set_password(password)
                user.is_staff = is_staff
                user.save()
                user.groups.set(Group.objects.filter(name__in=groups))
        handbook = DEMO_DIR / "handbook"
        if handbook.is_dir():
            report = import_folder(handbook)
            self.stdout.write(
                f"handbook: {report.created} created, {report.updated} updated, "
                f"{report.unchanged} unchanged"
            )
        tasks_file = DEMO_DIR / "tasks.json"
        if not no_tasks and tasks_file.exists():
            requester = User.objects.get(username="requester")
            if Task.objects.filter(owner=requester).exists():
                self.stdout.write("demo tasks: already present")
            else:
                specs = json.loads(tasks_file.read_text(encoding="utf-8"))
                for spec in specs:
                    actions.task_create(
                        owner=requester,
                        title=spec["title"],
                        request=spec["request"],
                        rules=spec.get("rules", ""),
                        plan=spec.get("plan") or {},
                        audit_rate=spec.get("audit_rate"),
                        second_model=spec.get("second_model", ""),
                    )
                self.stdout.write(f"demo tasks: {len(specs)} queued")
        if not ShadowJudge.objects.exists():
            template, model = DEMO_SHADOW
            operator = User.objects.get(username="operator")
            shadow_start(template=template, model=model, started_by=operator)
            self.stdout.write(f"demo shadow judge: template {template} on {model}")
        self.stdout.write("demo logins: " + ", ".join(f"{u} / {p}" for u, p, _, _ in DEMO_USERS))
