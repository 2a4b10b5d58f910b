"""Filters of the reports page: seconds as a short duration, a share as a percentage."""

from __future__ import annotations

from django import template
from django.utils import formats
from django.utils.translation import gettext

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
        return gettext("%(hours)s h %(minutes)s min") % {
            "hours": hours,
            "minutes": f"{minutes:02d}",
        }
    if minutes:
        return gettext("%(minutes)s min %(seconds)s s") % {
            "minutes": minutes,
            "seconds": f"{secs:02d}",
        }
    return gettext("%(seconds)s s") % {"seconds": secs}


@register.filter
def percent(share: float | None) -> str:
    """In the active language's number format (12.5% in English, 12,5% in Russian)."""
    return "–" if share is None else f"{formats.number_format(round(share * 100, 1), 1)}%"
