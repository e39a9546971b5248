from __future__ import annotations

from django.urls import path

from tasks_app import views, views_operator, views_review

urlpatterns = [
    path("", views.home, name="home"),
    path("tasks/", views.task_list_all, name="task_list_all"),
    path("tasks/new/", views.task_new, name="task_new"),
    path("tasks/<int:task_id>/", views.task_detail, name="task_detail"),
    path("tasks/<int:task_id>/progress/", views.task_progress, name="task_progress"),
    path("tasks/<int:task_id>/feedback/", views.task_feedback, name="task_feedback"),
    path("tasks/<int:task_id>/claim/", views.task_claim, name="task_claim"),
    path("tasks/<int:task_id>/notes/", views.task_note, name="task_note"),
    path("tasks/<int:task_id>/sections/<slug:section>/", views.task_section, name="task_section"),
    path(
        "tasks/<int:task_id>/validations/<int:snapshot_id>/<slug:section>/",
        views.snapshot_section,
        name="snapshot_section",
    ),
    path(
        "tasks/<int:task_id>/validations/<int:snapshot_id>/download/input.txt",
        views.snapshot_download,
        name="snapshot_download",
    ),
    path(
        "tasks/<int:task_id>/evidence/<int:evidence_id>/",
        views.evidence_content,
        name="evidence_content",
    ),
    path(
        "tasks/<int:task_id>/runs/<int:run_id>/transcript/",
        views.run_transcript,
        name="run_transcript",
    ),
    path("review/", views_review.review_queue, name="review_queue"),
    path("ops/", views_operator.ops_index, name="ops_index"),
    path("ops/templates/", views_operator.ops_templates, name="ops_templates"),
    path("ops/tasks/<int:task_id>/inputs/", views_operator.ops_task_inputs, name="ops_task_inputs"),
    path("ops/requests/", views_operator.ops_llm_requests, name="ops_llm_requests"),
    path(
        "ops/validations/<int:snapshot_id>/", views_operator.ops_validation, name="ops_validation"
    ),
    path("ops/validations/<int:snapshot_id>/replay/", views_operator.ops_replay, name="ops_replay"),
    path("ops/replay/", views_operator.ops_bulk_replay, name="ops_bulk_replay"),
    path("ops/agreement/", views_operator.ops_agreement, name="ops_agreement"),
    path("ops/charts/", views_operator.ops_charts, name="ops_charts"),
]
