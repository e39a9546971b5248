from __future__ import annotations

from django.urls import path

from tasks_app import views

urlpatterns = [
    path("", views.home, name="home"),
    path("tasks/<int:task_id>/", views.task_detail, name="task_detail"),
]
