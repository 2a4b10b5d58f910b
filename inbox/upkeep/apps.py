from __future__ import annotations

from django.apps import AppConfig


class UpkeepConfig(AppConfig):
    """Periodic upkeep: alerts, data retention and the safety nets run by Celery beat."""

    name = "inbox.upkeep"
    label = "inbox_upkeep"
    verbose_name = "Inbox upkeep"
