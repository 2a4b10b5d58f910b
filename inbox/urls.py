from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from inbox import health, media, views

urlpatterns = [
    path("healthz", health.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("inbox/", views.chat_list, name="chat_list"),
    path("inbox/sandbox/", include("integrations.sandbox.urls")),
    path("inbox/media/<int:message_id>/", media.message_media, name="message_media"),
    path("", views.home, name="home"),
]
