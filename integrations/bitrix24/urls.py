from __future__ import annotations

from django.urls import path

from integrations.bitrix24 import views

urlpatterns = [
    path("webhooks/bitrix24/", views.bitrix24_events, name="bitrix24_events"),
]
