from __future__ import annotations

from typing import Any

from django.apps import AppConfig
from django.db.backends.signals import connection_created


def _sqlite_functions(sender: Any, connection: Any, **kwargs: Any) -> None:
    """The search index's triggers call a Python function (`search.index_text`): every SQLite
    connection needs it before it writes a message."""
    if connection.vendor == "sqlite":
        from inbox.conversations import search

        search.register_sqlite_functions(connection.connection)


class ConversationsConfig(AppConfig):
    """The conversation core. Its label stays "inbox": the tables, migrations and content types
    of existing databases are named after it."""

    name = "inbox.conversations"
    label = "inbox"
    verbose_name = "Inbox"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        connection_created.connect(_sqlite_functions, dispatch_uid="inbox.search.sqlite")
