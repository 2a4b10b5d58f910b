"""The shapes every transport normalises to before anything else touches an event.

Transports (Cloud API webhook, linked-device bridge, sandbox) turn provider payloads into these
and hand them to `inbox.conversations.ingest`; nothing past that point knows which provider sent
them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

MessageKind = Literal[
    "text",
    "voice",
    "audio",
    "image",
    "document",
    "video",
    "sticker",
    "location",
    "contacts",
    "interactive",
    "reaction",
    "unsupported",
]
MESSAGE_KINDS: frozenset[str] = frozenset(MessageKind.__args__)  # type: ignore[attr-defined]

DeliveryStatus = Literal["sent", "delivered", "read", "played", "failed", "deleted"]


# A linked-device gateway's message older than this is replayed history (an offline backlog, a
# resend after a reconnect): marked `history`, stored and deduplicated, never answered as new.
HISTORY_AGE_SECONDS = 6 * 3600


@dataclass(frozen=True, slots=True)
class MediaRef:
    """Where to fetch an attachment: a provider media id (Cloud API) or a URL (bridge)."""

    ref: str
    mime_type: str = ""
    sha256: str = ""
    filename: str = ""
    voice: bool = False


# The events are not frozen: a frozen dataclass sets each field through object.__setattr__,
# 2 µs of the consumer's ~40 per event for a dozen fields. Nothing changes an event after it
# is made (`ingest.storable` makes a cleaned copy), and none is hashed.
@dataclass(slots=True)
class InboundEvent:
    """One message on a chat, from the customer or (from_me) from the business number."""

    channel_id: int
    provider_message_id: str
    chat_key: str  # wa_id, else the business-scoped user id, else the bridge's chat JID
    from_me: bool
    kind: MessageKind
    text: str
    media: MediaRef | None
    provider_ts: int  # Unix seconds, as the provider stamped it
    customer_name: str = ""
    customer_phone: str = ""
    # Cloud API: the customer's business-scoped user id (`user_id`, with or without a phone)
    # and their WhatsApp username, when the event carries them (`inbox.conversations.identity`).
    customer_bsuid: str = ""
    customer_username: str = ""
    # Kind-specific details: location, reaction target, quoted/edited/revoked message id...
    # `history: True` marks replayed history (a linked-device gateway's sync after a
    # reconnect): stored and shown, never answered, no takeover (`ingest.store`).
    extra: dict[str, Any] = field(default_factory=dict)
    correlation_id: str = ""

    def to_json(self) -> str:
        return json.dumps({"type": "message", **asdict(self)}, ensure_ascii=False)


@dataclass(slots=True)
class StatusEvent:
    """A delivery update for a message the business sent (at least once, in any order)."""

    channel_id: int
    provider_message_id: str
    status: DeliveryStatus
    provider_ts: int
    recipient: str = ""  # recipient_id (phone), else recipient_user_id (BSUID)
    error_code: str = ""
    error_title: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    correlation_id: str = ""

    def to_json(self) -> str:
        return json.dumps({"type": "status", **asdict(self)}, ensure_ascii=False)


Event = InboundEvent | StatusEvent


def _has_float(value: Any) -> bool:
    if type(value) is float:
        return True
    if type(value) is dict:
        return any(_has_float(v) for v in value.values())
    if type(value) is list:
        return any(_has_float(v) for v in value)
    return False


def _loads(raw: str | bytes) -> Any:
    """orjson (a fifth of the standard library's cost, on the consumer's hot path) where it
    reads exactly what the standard library would; the standard library for the rest: NaN,
    a lone surrogate, and any event with a float in it, because orjson reads an integer
    beyond 64 bits as a float (an event's fields have no floats; a location's payload does).
    NaN and Infinity are read as null: neither database's JSON column takes them."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        pass
    else:
        if type(data) is not dict:
            return data
        for value in data.values():
            kind = type(value)
            if kind is float or ((kind is dict or kind is list) and value and _has_float(value)):
                break
        else:
            return data
    return json.loads(raw, parse_constant=lambda _name: None)


def event_from_json(raw: str | bytes) -> Event:
    """Inverse of `to_json` for both event types. Raises ValueError on anything else."""
    data = _loads(raw)
    if not isinstance(data, dict):
        raise ValueError("event must be a JSON object")
    kind = data.pop("type", None)
    if kind == "message":
        media = data.pop("media", None)
        return InboundEvent(media=MediaRef(**media) if media else None, **data)
    if kind == "status":
        return StatusEvent(**data)
    raise ValueError(f"unknown event type {kind!r}")


def provider_datetime(provider_ts: int) -> datetime | None:
    """The provider's Unix timestamp as a time, or None when it is missing or impossible (a
    fuzzed or broken payload can carry 1e20: no reason to lose the message over it)."""
    if provider_ts <= 0:
        return None
    try:
        return datetime.fromtimestamp(provider_ts, tz=UTC)
    except (OverflowError, ValueError, OSError):
        return None
