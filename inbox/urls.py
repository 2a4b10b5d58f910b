from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from inbox import health, media, metrics, views

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("readyz", health.readyz, name="readyz"),
    path("metrics", metrics.metrics_view, name="metrics"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("inbox/", views.chat_list, name="chat_list"),
    path("inbox/sandbox/", include("integrations.sandbox.urls")),
    path("inbox/media/<int:message_id>/", media.message_media, name="message_media"),
    path("", views.home, name="home"),
]
