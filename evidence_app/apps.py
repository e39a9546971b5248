from __future__ import annotations

from django.apps import AppConfig


class EvidenceAppConfig(AppConfig):
    name = "evidence_app"
    verbose_name = "Evidence and validation"

    def ready(self) -> None:
        from evidence_app import registrations
        from evidence_app.offline_judge.judge import (
            CORROBORATING_MODEL_NAME,
            corroborating_judge_model,
            offline_judge_model,
        )
        from project.llm.registry import register_offline_model

        register_offline_model("offline:judge", offline_judge_model)
        register_offline_model(CORROBORATING_MODEL_NAME, corroborating_judge_model)
        registrations.register()
