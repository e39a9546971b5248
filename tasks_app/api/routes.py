"""The tasks app's API router: every router of this package in one."""

from __future__ import annotations

from ninja import Router

from tasks_app.api import documents, external, otlp, runs, tasks

router = Router()
router.add_router("", tasks.router)
router.add_router("", runs.router)
router.add_router("", documents.router)
router.add_router("", external.router)
router.add_router("", otlp.router)
