from __future__ import annotations

from django.urls import path

from tasks_app import views_account

urlpatterns = [
    path("", views_account.account, name="account"),
    path("tokens/", views_account.token_create, name="account_token_create"),
    path("tokens/<int:token_id>/revoke/", views_account.token_revoke, name="account_token_revoke"),
]
