from __future__ import annotations

from django.apps import AppConfig


class TasksAppConfig(AppConfig):
    name = "tasks_app"
    verbose_name = "Tasks and runs"

    def ready(self) -> None:
        from project.llm.registry import register_offline_model
        from tasks_app import operations
        from tasks_app.runtime.agents.offline_researcher import offline_researcher_model

        register_offline_model("offline:researcher", offline_researcher_model)
        operations.register()
