from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from evidence_app.models import ValidationSnapshot
from project.admin import ReadOnlyAdmin


@admin.register(ValidationSnapshot)
class ValidationSnapshotAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "task",
        "attempt_index",
        "kind",
        "status",
        "score",
        "model_name",
        "template_version",
        "latency_ms",
        "cost",
        "created_at",
    )
    list_filter = ("kind", "status", "model_name", "template_version")

    def get_queryset(self, request: HttpRequest) -> Any:
        qs = super().get_queryset(request)
        if request.resolver_match and (request.resolver_match.url_name or "").endswith(
            "changelist"
        ):
            return qs.defer("rendered_input", "system_prompt", "raw_responses")
        return qs
