"""The project package and the conversation app: chats, messages, ownership, ingest."""

from __future__ import annotations

from inbox.celery import app as celery_app

__all__ = ["celery_app"]
