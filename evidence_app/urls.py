"""Operator pages of the validator (U5, V5, V9, V10)."""

from __future__ import annotations

from django.urls import path

from evidence_app import views

urlpatterns = [
    path("ops/", views.ops_index, name="ops_index"),
    path("ops/templates/", views.ops_templates, name="ops_templates"),
    path("ops/tasks/<int:task_id>/inputs/", views.ops_task_inputs, name="ops_task_inputs"),
    path("ops/requests/", views.ops_llm_requests, name="ops_llm_requests"),
    path("ops/validations/<int:snapshot_id>/", views.ops_validation, name="ops_validation"),
    path("ops/validations/<int:snapshot_id>/replay/", views.ops_replay, name="ops_replay"),
    path("ops/replay/", views.ops_bulk_replay, name="ops_bulk_replay"),
    path("ops/agreement/", views.ops_agreement, name="ops_agreement"),
    path("ops/charts/", views.ops_charts, name="ops_charts"),
]
