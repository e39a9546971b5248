"""Django admin, read-mostly (U6): records are inspected here, changed via services."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from tasks_app.models import (
    ApiToken,
    Feedback,
    KnowledgeDocument,
    LLMRequestSnapshot,
    Run,
    RunMessage,
    Task,
    TaskEvent,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """View-only: status changes must go through the transition service (S3)."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)


class TaskEventInline(admin.TabularInline):
    model = TaskEvent
    extra = 0
    can_delete = False
    fields = ("at", "from_status", "to_status", "actor", "actor_kind", "reason")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Task)
class TaskAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "title",
        "owner",
        "status",
        "attempt_count",
        "validation_outcome",
        "created_at",
    )
    list_filter = ("status", "validation_outcome", "validation_policy")
    search_fields = ("title",)
    date_hierarchy = "created_at"
    list_select_related = ("owner",)
    inlines = [TaskEventInline]

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).defer("request", "rules", "final_answer", "plan")


@admin.register(TaskEvent)
class TaskEventAdmin(ReadOnlyAdmin):
    list_display = ("task", "from_status", "to_status", "actor_kind", "actor", "at")
    list_filter = ("to_status", "actor_kind")
    list_select_related = ("actor",)


@admin.register(Feedback)
class FeedbackAdmin(ReadOnlyAdmin):
    list_display = ("task", "action", "author", "validator_status", "created_at")
    list_filter = ("action",)


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "task",
        "attempt_index",
        "kind",
        "node_id",
        "model_name",
        "status",
        "finish_reason",
        "duration_ms",
    )
    list_filter = ("kind", "status", "finish_reason")

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).defer("output_text")


@admin.register(RunMessage)
class RunMessageAdmin(ReadOnlyAdmin):
    list_display = ("run", "index", "role", "created_at")
    list_filter = ("role",)

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).defer("content", "payload")


@admin.register(LLMRequestSnapshot)
class LLMRequestSnapshotAdmin(ReadOnlyAdmin):
    list_display = (
        "run",
        "iteration",
        "provider",
        "model_name",
        "message_count",
        "message_chars",
        "latency_ms",
    )

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).defer("full_request")


@admin.register(KnowledgeDocument)
class KnowledgeDocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "source_key", "updated_at")
    search_fields = ("title",)

    def get_queryset(self, request: HttpRequest) -> Any:
        qs = super().get_queryset(request)
        return (
            qs.defer("body")
            if request.resolver_match and request.resolver_match.url_name.endswith("changelist")
            else qs
        )


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    list_display = ("prefix", "user", "name", "created_at", "last_used_at", "revoked_at")
    exclude = ("key_hash",)
