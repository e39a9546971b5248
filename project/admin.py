"""Admin building blocks shared by the apps (read-mostly)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest


class ReadOnlyAdmin(admin.ModelAdmin):
    """View-only: status changes must go through the transition service."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)


class AppendOnlyAdmin(ReadOnlyAdmin):
    """An event log: rows are written by services, read here, and never
    changed or deleted, not even by a superuser."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
