"""The inbox: the site shell (`site`), the conversation core (`conversations`), the manager web
UI (`web`) and upkeep (`upkeep`). docs/architecture.md draws how they depend on each other.

The Celery app is imported here so `celery -A inbox` finds it, as in every Django project.
"""

from __future__ import annotations

from inbox.site.celery import app as celery_app

__all__ = ["celery_app"]
