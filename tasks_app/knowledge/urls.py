"""Knowledge-base pages (reviewers); the task pages are evidence_app's (they show the
verdicts)."""

from __future__ import annotations

from django.urls import path

from tasks_app.knowledge import views as views_knowledge

urlpatterns = [
    path("knowledge/", views_knowledge.kb_search, name="kb_search"),
    path("knowledge/<id:document_id>/", views_knowledge.kb_document, name="kb_document"),
]
