from __future__ import annotations

from django.apps import AppConfig
from django.core.servers.basehttp import WSGIRequestHandler


class TasksAppConfig(AppConfig):
    name = "tasks_app"
    verbose_name = "Tasks and runs"

    def ready(self) -> None:
        from project.llm.registry import register_offline_model
        from tasks_app import registrations
        from tasks_app.runtime.agents.offline_researcher import offline_researcher_model

        register_offline_model("offline:researcher", offline_researcher_model)
        registrations.register()
        # Django's own server (make run's runserver, the tests' live server) writes a
        # response's headers and body separately; on a kept-alive connection Nagle's
        # algorithm then holds the body until the client's delayed ACK, about 40 ms a
        # request. gunicorn (make prod) sets TCP_NODELAY on its own sockets.
        WSGIRequestHandler.disable_nagle_algorithm = True
