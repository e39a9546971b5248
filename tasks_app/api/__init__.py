"""The tasks app's API routers, one module per job: tasks (create, list, feedback,
claims, events), runs (runs and transcripts), documents (the knowledge base), external
(external agents' attempts and webhooks, issue 14), otlp (OpenTelemetry traces, issue 15)."""

from __future__ import annotations

from ninja import Router

from tasks_app.api import documents, external, otlp, runs, tasks

router = Router()
router.add_router("", tasks.router)
router.add_router("", runs.router)
router.add_router("", documents.router)
router.add_router("", external.router)
router.add_router("", otlp.router)
