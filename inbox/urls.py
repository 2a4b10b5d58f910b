from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from inbox import health, views

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("inbox/", views.chat_list, name="chat_list"),
    path("inbox/sandbox/", include("integrations.sandbox.urls")),
    path("", include("integrations.bitrix24.urls")),
    path("", views.home, name="home"),
]
