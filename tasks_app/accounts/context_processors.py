from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from project.roles import is_operator, is_reviewer
from tasks_app.workflow.selectors import pending_decision_by


def roles(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    return {
        "is_reviewer": is_reviewer(user),
        "is_operator": is_operator(user),
        # Called by the template only where it shows the admin link (full pages): an
        # htmx fragment, such as the queue's poll, costs no permission queries.
        "has_admin": lambda: has_admin_access(user),
        # The undo toast: read only where a template shows messages.
        "my_pending_decision": lambda: pending_decision_by(user),
    }


def has_admin_access(user: Any) -> bool:
    """The admin link only for people the admin lets in and shows something to (issue
    13): staff with at least one permission, or a superuser."""
    if not (getattr(user, "is_active", False) and getattr(user, "is_staff", False)):
        return False
    return bool(user.is_superuser or user.get_all_permissions())
