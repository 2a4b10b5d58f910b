from __future__ import annotations

from django.urls import path

from integrations.sandbox import views

urlpatterns = [
    path("", views.sandbox, name="sandbox"),
    path("<int:channel_id>/", views.sandbox_chat, name="sandbox_chat"),
    path("<int:channel_id>/send/", views.sandbox_send, name="sandbox_send"),
    path("<int:channel_id>/reset/", views.sandbox_reset, name="sandbox_reset"),
]
