"""Show auto-accept at a certified risk on the demo, once the demo has settled
(``make run`` runs it in the background, beside ``demo_audits``):

    manage.py demo_autoaccept --wait 300

What it shows and how: ``evidence_app.autoaccept.demo``. Idempotent: it does nothing once
the history exists."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from evidence_app.autoaccept.demo import AutoAcceptDemo
from evidence_app.management.commands.demo_audits import SETTLED
from evidence_app.validation.current_judge import current_judge


class Command(BaseCommand):
    help = "Certify, approve and show auto-accept thresholds on the demo (scripted history)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--wait", type=float, default=0, help="seconds to wait to settle")

    def handle(self, *args: Any, **options: Any) -> None:
        demo = AutoAcceptDemo(self.stdout, settled=SETTLED, current_judge=current_judge)
        demo.show(wait=options["wait"])
