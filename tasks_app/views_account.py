"""The account page (A2): a person's API tokens, created and revoked here.

A new token's raw value is shown exactly once: it is kept in the session only until the
next page render, which pops it; the database holds only its hash.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from tasks_app.auth import api_token_create, api_token_revoke
from tasks_app.errors import DomainError
from tasks_app.models import ApiToken

NEW_TOKEN_SESSION_KEY = "account_new_api_token"


@login_required
def account(request: HttpRequest) -> HttpResponse:
    new_token = request.session.pop(NEW_TOKEN_SESSION_KEY, None)
    tokens = ApiToken.objects.filter(user=request.user).order_by("-created_at")
    return render(request, "accounts/account.html", {"tokens": tokens, "new_token": new_token})


@login_required
@require_POST
def token_create(request: HttpRequest) -> HttpResponse:
    try:
        token, raw = api_token_create(user=request.user, name=request.POST.get("name", ""))
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("account")
    request.session[NEW_TOKEN_SESSION_KEY] = {"name": token.name, "raw": raw}
    return redirect("account")


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token = api_token_revoke(token_id=token_id, user=request.user)
    except ApiToken.DoesNotExist:
        raise Http404("No such token") from None
    messages.success(request, f"Token '{token.name}' ({token.prefix}…) is revoked.")
    return redirect("account")
