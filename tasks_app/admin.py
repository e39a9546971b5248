"""Django admin, read-mostly: records are inspected here, changed via services."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from project.admin import AppendOnlyAdmin, ReadOnlyAdmin
from tasks_app.accounts.models import ApiToken
from tasks_app.api.models import IdempotencyKey
from tasks_app.knowledge.models import KnowledgeDocument
from tasks_app.notifications.models import WebhookDelivery, WebhookDeliveryAttempt, WebhookEndpoint
from tasks_app.runtime.models import (
    LLMRequestSnapshot,
    Run,
    RunMessage,
    ServiceHeartbeat,
    ToolEvidence,
)
from tasks_app.workflow.models import (
    ClaimEvent,
    Feedback,
    OutboxJob,
    Task,
    TaskEvent,
    TaskStatusCount,
)


class TaskEventInline(admin.TabularInline):
    model = TaskEvent
    extra = 0
    can_delete = False
    fields = ("at", "from_status", "to_status", "actor", "actor_kind", "reason")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ClaimEventInline(admin.TabularInline):
    model = ClaimEvent
    fk_name = "task"
    extra = 0
    can_delete = False
    fields = ("at", "kind", "actor", "previous_holder", "task_status", "reason")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
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
    inlines = [TaskEventInline, ClaimEventInline]

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).defer("request", "rules", "final_answer", "plan")


@admin.register(TaskEvent)
class TaskEventAdmin(AppendOnlyAdmin):
    list_display = ("task", "from_status", "to_status", "actor_kind", "actor", "at")
    list_filter = ("to_status", "actor_kind")
    list_select_related = ("actor",)


@admin.register(ClaimEvent)
class ClaimEventAdmin(AppendOnlyAdmin):
    list_display = ("task", "kind", "actor", "previous_holder", "task_status", "at")
    list_filter = ("kind",)
    list_select_related = ("actor", "previous_holder")


@admin.register(Feedback)
class FeedbackAdmin(ReadOnlyAdmin):
    list_display = ("task", "action", "state", "author", "validator_status", "created_at")
    list_filter = ("action", "state")


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
        "cost",
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
        "cost",
    )

    def get_queryset(self, request: HttpRequest) -> Any:
        return super().get_queryset(request).defer("full_request")


@admin.register(ServiceHeartbeat)
class ServiceHeartbeatAdmin(ReadOnlyAdmin):
    list_display = ("kind", "name", "queues", "seen_at")
    list_filter = ("kind",)


@admin.register(KnowledgeDocument)
class KnowledgeDocumentAdmin(admin.ModelAdmin):
    list_display = ("title", "source_key", "updated_at")
    search_fields = ("title",)

    def get_queryset(self, request: HttpRequest) -> Any:
        qs = super().get_queryset(request)
        return (
            qs.defer("body")
            if request.resolver_match
            and (request.resolver_match.url_name or "").endswith("changelist")
            else qs
        )


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    list_display = ("prefix", "user", "name", "created_at", "last_used_at", "revoked_at")
    exclude = ("key_hash",)


@admin.register(IdempotencyKey)
class IdempotencyKeyAdmin(ReadOnlyAdmin):
    list_display = ("key", "user", "endpoint", "response_status", "created_at")
    list_select_related = ("user",)
    exclude = ("response_body",)


@admin.register(OutboxJob)
class OutboxJobAdmin(ReadOnlyAdmin):
    """Jobs recorded while the broker was down wait here until the relay sends them."""

    list_display = (
        "job_id",
        "name",
        "task_ref",
        "created_at",
        "not_before",
        "published_at",
        "attempts",
    )
    list_filter = ("name",)
    search_fields = ("job_id",)


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyAdmin):
    list_display = ("id", "url", "owner", "is_active", "created_at", "disabled_at")
    list_filter = ("is_active",)
    list_select_related = ("owner",)
    # The signing secret is never shown again after registration.
    exclude = ("secret",)


class WebhookDeliveryAttemptInline(admin.TabularInline):
    model = WebhookDeliveryAttempt
    extra = 0
    can_delete = False
    fields = ("attempted_at", "status_code", "latency_ms", "error", "outcome")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdmin):
    list_display = ("id", "event_type", "task", "endpoint", "status", "attempt_count", "created_at")
    list_filter = ("status", "event_type")
    inlines = [WebhookDeliveryAttemptInline]


@admin.register(TaskStatusCount)
class TaskStatusCountAdmin(ReadOnlyAdmin):
    list_display = ("status", "shard", "n")
    list_filter = ("status",)


@admin.register(ToolEvidence)
class ToolEvidenceAdmin(ReadOnlyAdmin):
    list_display = (
        "id",
        "task",
        "attempt_index",
        "run",
        "sequence",
        "tool_name",
        "content_chars",
        "is_error",
        "created_at",
    )
    list_filter = ("tool_name", "is_error")

    def get_queryset(self, request: HttpRequest) -> Any:
        qs = super().get_queryset(request)
        if request.resolver_match and (request.resolver_match.url_name or "").endswith(
            "changelist"
        ):
            return qs.defer("content", "event_payload")
        return qs
