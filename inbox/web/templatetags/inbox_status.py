"""Template helpers for the conversation status controls (the snooze choices)."""

from __future__ import annotations

from django import template

from inbox.web import status_actions

register = template.Library()


@register.simple_tag
def snooze_choices() -> list[tuple[str, str]]:
    """In the reader's language."""
    return [(value, str(label)) for value, label in status_actions.SNOOZE_CHOICES]
