from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import include, path, re_path, register_converter
from django.urls.converters import get_converters
from django.views.defaults import page_not_found
from django.views.generic import RedirectView

from project.api import api, api_not_found_view
from project.url_ids import RowIdConverter

# ``<id:...>``: a row id a bigint can hold; a longer run of digits is a 404, not a 500.
# Registered once per process: a test that reloads the URL configuration imports this
# module again, and Django refuses a second registration of a name.
if "id" not in get_converters():
    register_converter(RowIdConverter, "id")

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/v1/", api.urls),
    re_path(r"^api/v1/(?P<path>.*)$", api_not_found_view),
    # /api/docs is the documented short address; the versioned docs live under /api/v1/.
    path("api/docs", RedirectView.as_view(url="/api/v1/docs", permanent=False)),
    path("account/", include("tasks_app.accounts.urls")),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("evidence_app.urls")),
    path("", include("tasks_app.knowledge.urls")),
]


def app_not_found(request: HttpRequest) -> HttpResponse:
    """The app's own 404 page for an address that matches nothing."""
    return page_not_found(request, Http404("No page at this address"))


if settings.DEBUG:
    # With DEBUG on (``make run``) Django answers an unknown address with its technical
    # 404 page, which lists the URL patterns; a person trying the app gets the app's page.
    urlpatterns.append(re_path(r"^(?!static/|media/)", app_not_found))
