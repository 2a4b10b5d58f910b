from __future__ import annotations

from django.apps import AppConfig


class WebConfig(AppConfig):
    """The manager web UI: pages, the JSON API, the live websocket, template tags."""

    name = "inbox.web"
    label = "inbox_web"
    verbose_name = "Inbox web UI"
