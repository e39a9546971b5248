from __future__ import annotations

from django.urls import path

from tasks_app.accounts import views as views_account

urlpatterns = [
    path("", views_account.account, name="account"),
    path("tokens/", views_account.token_create, name="account_token_create"),
    path("tokens/<id:token_id>/revoke/", views_account.token_revoke, name="account_token_revoke"),
    path("webhooks/", views_account.webhook_create, name="account_webhook_create"),
    path(
        "webhooks/<id:endpoint_id>/disable/",
        views_account.webhook_disable,
        name="account_webhook_disable",
    ),
    path(
        "webhooks/deliveries/<id:delivery_id>/resend/",
        views_account.webhook_resend,
        name="account_webhook_resend",
    ),
]
