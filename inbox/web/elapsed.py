"""How long ago something happened, in the reader's language ("5 minutes", "5 минут",
"5 минут" in Kazakh).

Django's `timesince` words its units from Django's own catalogues, and Django's Kazakh catalogue
has none of them: a Kazakh page would read "5 minutes". Where the active language's catalogue
leaves the units in English, the units come from ours instead; a Kazakh noun keeps one form after
a number, so one string per unit serves every count there.
"""

from __future__ import annotations

from datetime import datetime

from django.utils import translation
from django.utils.timesince import timesince
from django.utils.translation import gettext, ngettext

ENGLISH_MINUTES = "%(num)d minutes"


def _own_units() -> dict[str, str]:
    return {
        "year": gettext("%(num)d yr"),
        "month": gettext("%(num)d mo"),
        "week": gettext("%(num)d wk"),
        "day": gettext("%(num)d d"),
        "hour": gettext("%(num)d h"),
        "minute": gettext("%(num)d min"),
    }


def elapsed(since: datetime, now: datetime | None = None) -> str:
    """`timesince(since, now)`, its units in the active language."""
    language = translation.get_language() or "en"
    django_has_units = language.startswith("en") or (
        ngettext("%(num)d minute", ENGLISH_MINUTES, 5) != ENGLISH_MINUTES
    )
    if django_has_units:
        return timesince(since, now)
    return timesince(since, now, time_strings=_own_units())
