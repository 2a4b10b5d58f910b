"""What an event's text must not hold before it is queued or stored, and how long it may be.

`utf8_safe` (the webhook half: Redis takes UTF-8 only), `storable` (the consumer: PostgreSQL
takes no NUL) and `capped_text` (a message's text as stored). They run once per event, so
each returns its input as it is when there is nothing to clean (nearly always), after one
scan.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from operator import attrgetter
from typing import Any

from django.conf import settings

from inbox.conversations.events import Event, InboundEvent, StatusEvent

# A lone UTF-16 surrogate ("\ud83d": a JS bridge cutting an emoji in half) is valid JSON but
# not UTF-8: Redis could not take the event, and with it the whole body's events.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_safe(text: str) -> str:
    """The text with every lone surrogate replaced by U+FFFD (one pass, only when needed)."""
    if _LONE_SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    return value


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    return False


# Each event type's text fields, read at once: the scan below joins them and looks for a NUL
# once. The others hold no text of their own (`media` and `extra` are scanned apart). A field
# added later lands with the text fields: if it is not text, the join fails and every event
# takes the full pass (slower, still right).
_NOT_TEXT = {"channel_id", "from_me", "media", "provider_ts", "extra"}
_TEXT_FIELDS: dict[type, Callable[[Event], tuple[str, ...]]] = {
    event_type: attrgetter(
        *(field.name for field in dataclasses.fields(event_type) if field.name not in _NOT_TEXT)
    )
    for event_type in (InboundEvent, StatusEvent)
}


def _nul_free(event: Event) -> bool:
    """Whether the event holds no NUL anywhere (a joined scan: a third of a field-by-field
    one). A field of the wrong type (a broken producer) answers False: the full pass of
    `storable` copes with any type."""
    try:
        if "\x00" in "".join(_TEXT_FIELDS[type(event)](event)):
            return False
        media = event.media if isinstance(event, InboundEvent) else None
        if media is not None and "\x00" in "".join(
            (media.ref, media.mime_type, media.sha256, media.filename)
        ):
            return False
    except TypeError:
        return False
    return not (event.extra and _has_nul(event.extra))


def storable(event: Event) -> Event:
    """The event with every NUL character replaced by U+FFFD. JSON allows "\\u0000" in a
    customer's text or name; PostgreSQL text and jsonb do not, and the whole event would fail
    (and end in the dead-letter stream, unanswered) over one invisible character. An event
    without one (nearly all) is returned as it is, after a scan that costs half a
    microsecond."""
    if _nul_free(event):
        return event
    changes = {
        f.name: _without_nul(getattr(event, f.name))
        for f in dataclasses.fields(event)
        if isinstance(getattr(event, f.name), str | list | dict)
    }
    if isinstance(event, InboundEvent) and event.media is not None:
        media = event.media
        changes["media"] = dataclasses.replace(
            media,
            ref=_without_nul(media.ref),
            mime_type=_without_nul(media.mime_type),
            sha256=_without_nul(media.sha256),
            filename=_without_nul(media.filename),
        )
    return dataclasses.replace(event, **changes)


# The full text of a message longer than INBOUND_TEXT_MAX_CHARS, kept as its attachment.
FULL_TEXT_FILENAME = "full-message.txt"


def capped_text(text: str, limit: int | None = None) -> tuple[str, int]:
    """The text as stored on the message, and its original length when it was cut (0 when
    not). WhatsApp lets a person send at most 65,536 characters (settings.py); longer text is
    a script or a broken bridge, and a 2.9 MB message went to every page, prompt and CRM
    comment whole."""
    if limit is None:
        limit = settings.INBOUND_TEXT_MAX_CHARS
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text)
