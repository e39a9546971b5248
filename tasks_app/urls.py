from __future__ import annotations

from django.urls import path

from tasks_app import views, views_knowledge, views_review

urlpatterns = [
    path("", views.home, name="home"),
    path("tasks/mine/", views.my_tasks, name="my_tasks"),
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
        "tasks/<int:task_id>/validations/<int:snapshot_id>/claims/<str:claim_id>/",
        views.claim_evidence,
        name="claim_evidence",
    ),
    path(
        "tasks/<int:task_id>/runs/<int:run_id>/transcript/",
        views.run_transcript,
        name="run_transcript",
    ),
    path("tasks/<int:task_id>/assign/", views_review.task_assign, name="task_assign"),
    path("review/", views_review.review_queue, name="review_queue"),
    path("knowledge/", views_knowledge.kb_search, name="kb_search"),
    path("knowledge/<int:document_id>/", views_knowledge.kb_document, name="kb_document"),
]
