from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from tasks_app.roles import is_operator, is_reviewer


def roles(request: HttpRequest) -> dict[str, Any]:
    user = getattr(request, "user", None)
    return {"is_reviewer": is_reviewer(user), "is_operator": is_operator(user)}
