"""Websocket routes (the `websocket` half of inbox/site/asgi.py's router)."""

from __future__ import annotations

from django.urls import path

from inbox.web.live import consumers

websocket_urlpatterns = [
    path("ws/inbox/", consumers.InboxConsumer.as_asgi(), name="ws_inbox"),
]
