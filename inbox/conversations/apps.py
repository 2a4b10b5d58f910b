from __future__ import annotations

from django.apps import AppConfig


class ConversationsConfig(AppConfig):
    """The conversation core. Its label stays "inbox": the tables, migrations and content types
    of existing databases are named after it."""

    name = "inbox.conversations"
    label = "inbox"
    verbose_name = "Inbox"
    default_auto_field = "django.db.models.BigAutoField"
