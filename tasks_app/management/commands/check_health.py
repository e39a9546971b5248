"""``manage.py check_health``: the readiness checks of ``/ready`` for shell use.

Exit status 0 when every check passes, 1 otherwise (usable in scripts and
container health checks); ``--json`` prints the same body as ``/ready``.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from project.health import run_checks


class Command(BaseCommand):
    help = "Check database, broker, migrations, workers per queue and beat; exit 1 on failure."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print the /ready JSON body")

    def handle(self, *args: Any, **options: Any) -> None:
        checks = run_checks()
        failing = [c.name for c in checks if not c.ok]
        if options["json"]:
            body = {
                "status": "ok" if not failing else "unavailable",
                "failing": failing,
                "checks": [c.as_dict() for c in checks],
            }
            self.stdout.write(json.dumps(body, indent=2))
        else:
            for check in checks:
                mark = "ok  " if check.ok else "FAIL"
                self.stdout.write(
                    f"{mark} {check.name:<10} {check.detail} ({check.duration_ms} ms)"
                )
        if failing:
            self.stderr.write(f"not ready: {', '.join(failing)}")
            raise SystemExit(1)
