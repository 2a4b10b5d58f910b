"""The Jinja2 templates of the inbox's two most rendered fragments: a chat's row and a message.

Every stored burst renders a row and a message fragment per chat, in the ingest consumer before
the push, and the inbox page renders 50 of each. Django's template language spent most of a
row's 465 µs resolving its 30 variables node by node; the same row compiled to Python by Jinja2
takes about 200 µs (docs/performance.md). The two templates (and the voice note a message
includes) live in `jinja_templates/inbox/`; pages written in Django's language include them
with the `chat_row` and `message_item` tags (`inbox_fragments`), so a page and a push render
the same HTML.

Words are marked `{{ _("...") }}` (the i18n extension with Django's gettext), so the rows speak
the active language. Autoescaping is on, as in Django's templates: customer text is always
text. Values Django's filters mark safe (`linebreaksbr`) carry `__html__`, which Jinja2
respects. Times are converted to the current zone (the business's, `local_time.business_time`)
as Django's templates do.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Any

from django.template import defaultfilters, engines
from django.template.backends.jinja2 import Jinja2
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince
from jinja2 import Environment, Undefined

from inbox.conversations import delivery_errors, resend
from inbox.conversations.models import Message
from inbox.web.templatetags import inbox_ui, inbox_workday

ENGINE = "jinja2"


def _local(value: Any) -> Any:
    """An aware time in the current zone, as Django's templates show it."""
    if isinstance(value, datetime) and not timezone.is_naive(value):
        return timezone.localtime(value)
    return value


def _iso(value: datetime | None) -> str:
    return inbox_ui.iso(_local(value))


def _clock(value: datetime | None) -> str:
    return inbox_ui.clock(_local(value))


def _date(value: datetime | None, fmt: str) -> str:
    return defaultfilters.date(_local(value), fmt) if value else ""


def _timesince(value: datetime | None) -> str:
    return timesince(value) if value else ""


def _floatformat(value: Any, digits: int) -> str:
    """Django's `floatformat`; empty for a value that is missing, as in Django's templates."""
    return "" if isinstance(value, Undefined) else defaultfilters.floatformat(value, digits)


def _percent(value: float | None) -> str:
    """`{% widthratio value 1 100 %}`: the share as a whole percentage; empty when unknown."""
    try:
        return str(round(float(value) * 100))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return ""


def _truncatechars(value: object, length: int) -> str:
    """Django's `truncatechars`, without its loop over every character for a text that fits,
    as most chats' previews do (30 µs a row)."""
    text = unicodedata.normalize("NFC", str(value))
    return text if len(text) <= length else defaultfilters.truncatechars(text, length)


def _delivery_explanation(message: Message) -> str:
    """Why a failed message was not delivered, in the manager's words and language (escaped by
    the template like any text)."""
    return delivery_errors.explain(message.error_code, message.error_title, translated=True)


def _resend_refusal(message: Message) -> str:
    """Why the failed message cannot be sent again now ("" when the Resend button is shown), in
    the active language (the refusal is an English constant, as the API sends it)."""
    why = resend.refusal(message, message.chat)
    return translation.gettext(why) if why else ""


def _url(name: str, *args: object) -> str:
    return reverse(name, args=args)


def environment(**options: Any) -> Environment:
    """The environment Django's Jinja2 backend builds (settings.TEMPLATES): autoescaping, and a
    template keeps its last newline, as Django's do, so a page renders the same HTML as before."""
    options.pop("autoescape", None)
    options["keep_trailing_newline"] = True
    env = Environment(autoescape=True, extensions=["jinja2.ext.i18n"], **options)
    # `{{ _("Text") }}` is Django's gettext, so the active language (inbox/web/local_language.py)
    # translates it from the same catalogues as `{% translate %}` in Django's templates.
    env.install_gettext_callables(  # type: ignore[attr-defined]
        translation.gettext, translation.ngettext, newstyle=True
    )
    env.globals["url"] = _url
    env.filters.update(
        assignee_name=inbox_ui.assignee_name,
        author_label=inbox_ui.author_label,
        clock=_clock,
        date=_date,
        delivery_explanation=_delivery_explanation,
        resend_refusal=_resend_refusal,
        display_name=inbox_workday.display_name,
        floatformat=_floatformat,
        iso=_iso,
        linebreaksbr=defaultfilters.linebreaksbr,
        media_url=inbox_ui.media_url,
        percent=_percent,
        preview=inbox_ui.preview,
        sort_key=inbox_ui.sort_key,
        timesince=_timesince,
        truncatechars=_truncatechars,
    )
    return env


def render(template: str, **context: object) -> SafeString:
    """A template of `jinja_templates/`, in the current time zone; safe to include in a page."""
    engine: Jinja2 = engines[ENGINE]  # type: ignore[assignment]
    return mark_safe(engine.env.get_template(template).render(context))  # noqa: S308
