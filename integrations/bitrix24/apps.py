from __future__ import annotations

from django.apps import AppConfig


class Bitrix24Config(AppConfig):
    name = "integrations.bitrix24"
    label = "bitrix24"
    verbose_name = "Bitrix24 sync"
    default_auto_field = "django.db.models.BigAutoField"
