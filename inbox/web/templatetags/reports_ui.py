"""Filters of the reports page: seconds as a short duration, a share as a percentage."""

from __future__ import annotations

from django import template

register = template.Library()


@register.filter
def duration(seconds: float | None) -> str:
    """1 h 05 min, 4 min 30 s, 12 s; an en dash when nothing was measured."""
    if seconds is None:
        return "–"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    if minutes:
        return f"{minutes} min {secs:02d} s"
    return f"{secs} s"


@register.filter
def percent(share: float | None) -> str:
    return "–" if share is None else f"{share * 100:.1f}%"
