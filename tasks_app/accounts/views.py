"""The account page: a person's API tokens, created and revoked here, and their
webhook endpoints with the delivery log and "send again".

A new token's raw value, and a new webhook's signing secret, are shown exactly once:
kept in the session only until the next page render, which pops them; the database
holds only the token's hash (a webhook secret is kept, since signing needs it). The page
says ``Cache-Control: no-store`` (``never_cache``), so no browser or proxy cache keeps it.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from project.errors import DomainError
from project.views import AuthenticatedHttpRequest
from tasks_app.accounts.auth import api_token_create, api_token_revoke
from tasks_app.accounts.models import ApiToken
from tasks_app.notifications.event_names import webhook_event_choices
from tasks_app.notifications.models import WebhookDelivery, WebhookEndpoint
from tasks_app.notifications.webhooks import (
    webhook_delivery_resend,
    webhook_endpoint_create,
    webhook_endpoint_disable,
)

NEW_TOKEN_SESSION_KEY = "account_new_api_token"
NEW_WEBHOOK_SESSION_KEY = "account_new_webhook_secret"
RECENT_DELIVERIES = 50


@never_cache  # it may show a new token or webhook secret: no cache may keep it
@login_required
def account(request: AuthenticatedHttpRequest) -> HttpResponse:
    new_token = request.session.pop(NEW_TOKEN_SESSION_KEY, None)
    new_webhook = request.session.pop(NEW_WEBHOOK_SESSION_KEY, None)
    tokens = ApiToken.objects.filter(user=request.user).order_by("-created_at")
    endpoints = WebhookEndpoint.objects.filter(owner=request.user)
    deliveries = (
        WebhookDelivery.objects.filter(endpoint__owner=request.user)
        .defer("payload")
        .select_related("endpoint")
        .prefetch_related("attempts")
        .order_by("-id")[:RECENT_DELIVERIES]
    )
    return render(
        request,
        "accounts/account.html",
        {
            "tokens": tokens,
            "new_token": new_token,
            "endpoints": endpoints,
            "deliveries": deliveries,
            "new_webhook": new_webhook,
            "webhook_events": webhook_event_choices(),
        },
    )


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


@login_required
@require_POST
def webhook_create(request: HttpRequest) -> HttpResponse:
    try:
        endpoint = webhook_endpoint_create(
            owner=request.user,
            url=request.POST.get("url", ""),
            events=request.POST.getlist("events") or None,
            description=request.POST.get("description", ""),
        )
    except DomainError as exc:
        messages.error(request, exc.message)
        return redirect("account")
    request.session[NEW_WEBHOOK_SESSION_KEY] = {"url": endpoint.url, "secret": endpoint.secret}
    return redirect("account")


@login_required
@require_POST
def webhook_disable(request: HttpRequest, endpoint_id: int) -> HttpResponse:
    try:
        endpoint = webhook_endpoint_disable(endpoint_id=endpoint_id, owner=request.user)
    except WebhookEndpoint.DoesNotExist:
        raise Http404("No such webhook") from None
    messages.success(request, f"Webhook {endpoint.url} is disabled.")
    return redirect("account")


@login_required
@require_POST
def webhook_resend(request: HttpRequest, delivery_id: int) -> HttpResponse:
    try:
        delivery = webhook_delivery_resend(delivery_id=delivery_id, owner=request.user)
    except WebhookDelivery.DoesNotExist:
        raise Http404("No such delivery") from None
    messages.success(request, f"{delivery.event_type} for task {delivery.task_id} is queued again.")
    return redirect("account")
