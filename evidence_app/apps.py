from __future__ import annotations

from django.apps import AppConfig


class EvidenceAppConfig(AppConfig):
    name = "evidence_app"
    verbose_name = "Evidence and validation"
