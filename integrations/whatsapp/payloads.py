"""Typed models of what WhatsApp sends us: the Cloud API webhook and the bridge's event body.

Why models: one declaration of each wire shape (docs: /shared/PROTOCOLS.md) instead of
`isinstance` checks spread through the normalisers. Two kinds of field:

* structure (`entry`, `changes`, the lists in a change's `value`, the bridge's `events`) is
  strict: a wrong type there fails validation, and the caller answers 400 (`MalformedWebhook`),
  because a provider retrying the same body cannot help;
* scalars and sub-objects inside one message or status are lenient, the way the platform itself
  is: a number where a string is expected is read as its digits, anything else as missing, and a
  sub-object of the wrong type as empty. The normaliser then skips an event that lacks what it
  needs (an id, a sender), so one bad event never takes its neighbours with it.

Every model ignores unknown keys (`extra="ignore"`): the platform adds fields all the time.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

__all__ = [
    "BridgeBody",
    "BridgeEvent",
    "Change",
    "Contact",
    "Envelope",
    "Message",
    "Status",
    "ValidationError",
    "Value",
    "describe",
    "parse_item",
]


def _text(value: Any) -> str:
    """Cloud API scalars: strings as they are, numbers as their digits, anything else as ""."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return ""


def _timestamp(value: Any) -> int:
    """Seconds since the epoch; 0 (unknown) for anything unreadable: "abc", NaN, 1e999."""
    try:
        return int(float(_text(value) or 0))
    except (ValueError, OverflowError):
        return 0


def _object(value: Any) -> Any:
    """A sub-object of the wrong type reads as an empty one."""
    return value if isinstance(value, dict) else {}


def _optional_object(value: Any) -> Any:
    return value if isinstance(value, dict) else None


def _list_or_empty(value: Any) -> Any:
    """A structural list: missing/null is empty; any other non-list fails validation."""
    return [] if value is None else value


def _dicts(value: Any) -> list[Any]:
    """A list where only the objects count (the rest are dropped, not an error)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


Text = Annotated[str, BeforeValidator(_text)]
Timestamp = Annotated[int, BeforeValidator(_timestamp)]
Items = Annotated[list[Any], BeforeValidator(_list_or_empty)]
Objects = Annotated[list[dict[str, Any]], BeforeValidator(_dicts)]
Loose = Annotated[list[Any], BeforeValidator(lambda v: v if isinstance(v, list) else [])]

M = TypeVar("M", bound=BaseModel)


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


def parse_item(model: type[M], raw: Any) -> M | None:
    """One event of a batch, or None when it is not even an object: the caller skips it and
    keeps the rest."""
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None


def describe(exc: ValidationError) -> str:
    """A short reason naming where the structure is wrong, without echoing the input back."""
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "body"
    return f"{where} must be {'a list' if error['type'] == 'list_type' else 'an object'}"


# --- Cloud API ------------------------------------------------------------------------------


class Profile(_Model):
    name: Text = ""
    username: Text = ""  # 2026: the customer's WhatsApp username, when they adopted one


class Contact(_Model):
    wa_id: Text = ""  # may be "" or absent for a customer who uses a username (2026)
    user_id: Text = ""  # the business-scoped user id (BSUID), `US.1349…`
    profile: Annotated[Profile, BeforeValidator(_object)] = Profile()


class Context(_Model):
    id: Text = ""
    forwarded: Any = None
    frequently_forwarded: Any = None

    @property
    def is_forwarded(self) -> bool:
        return bool(self.forwarded or self.frequently_forwarded)


class ErrorData(_Model):
    details: Text = ""


class ErrorInfo(_Model):
    code: Text = ""
    title: Text = ""
    error_data: Annotated[ErrorData, BeforeValidator(_object)] = ErrorData()

    @property
    def described(self) -> str:
        """The title with Meta's details when they add something ("title: details")."""
        details = self.error_data.details.strip()
        if not details or details.rstrip(".").lower() == self.title.rstrip(".").lower():
            return self.title
        return f"{self.title}: {details}" if self.title else details


class Message(_Model):
    """One entry of `messages` or `message_echoes`. The type-specific body (`text`, `image`,
    `interactive`, …) is read from `raw` by the normaliser, keyed by `type`."""

    id: Text = ""
    from_: Text = Field("", alias="from")
    to: Text = ""
    from_user_id: Text = ""
    to_user_id: Text = ""
    type: Text = ""
    timestamp: Timestamp = 0
    context: Annotated[Context | None, BeforeValidator(_optional_object)] = None
    referral: Annotated[dict[str, Any] | None, BeforeValidator(_optional_object)] = None


# The type-specific bodies of a message (`message[message["type"]]`). Only what the normaliser
# reads is declared; `location`, `system` and an order's raw object are kept verbatim in
# `extra`, so they are read from the raw dict.

Flag = Annotated[bool, BeforeValidator(lambda v: v is True)]


class TextBody(_Model):
    body: Text = ""


class MediaBody(_Model):
    """`image`, `video`, `document`, `sticker`, `audio`."""

    id: Text = ""
    mime_type: Text = ""
    sha256: Text = ""
    filename: Text = ""
    caption: Text = ""
    voice: Flag = False
    animated: Flag = False


class CardName(_Model):
    formatted_name: Text = ""


class CardPhone(_Model):
    phone: Text = ""


class ContactCard(_Model):
    """One card of a `contacts` message. `phones` of the wrong type reads as none
    (`"phones": 5` used to raise TypeError → HTTP 500)."""

    name: Annotated[CardName, BeforeValidator(_object)] = CardName()
    phones: Annotated[list[CardPhone], BeforeValidator(_dicts)] = []

    @property
    def line(self) -> str:
        return f"{self.name.formatted_name} {' '.join(p.phone for p in self.phones)}".strip()


class InteractiveBody(_Model):
    type: Text = ""


class InteractiveReply(_Model):
    """`button_reply`, `list_reply`, `nfm_reply` (a Flow's answer)."""

    id: Text = ""
    title: Text = ""
    description: Text = ""
    body: Text = ""
    response_json: Text = ""


class ButtonBody(_Model):
    payload: Text = ""
    text: Text = ""


class ReactionBody(_Model):
    message_id: Text = ""
    emoji: Text = ""


class OrderItem(_Model):
    product_retailer_id: Text = ""
    quantity: Text = ""
    item_price: Text = ""
    currency: Text = ""


class OrderBody(_Model):
    product_items: Annotated[list[OrderItem], BeforeValidator(_dicts)] = []
    text: Text = ""


class EditBody(_Model):
    original_message_id: Text = ""
    message: Annotated[dict[str, Any], BeforeValidator(_object)] = {}


class RevokeBody(_Model):
    original_message_id: Text = ""


class Status(_Model):
    id: Text = ""
    status: Text = ""
    timestamp: Timestamp = 0
    recipient_id: Text = ""  # may be absent for a customer who uses a username (2026)
    recipient_user_id: Text = ""  # their BSUID
    biz_opaque_callback_data: Text = ""
    errors: Loose = []


class Metadata(_Model):
    phone_number_id: Text = ""
    display_phone_number: Text = ""


class Value(_Model):
    """A `messages` / `smb_message_echoes` change's value. The lists are structure (strict);
    their items are validated one by one (`parse_item`), so one bad item is only skipped."""

    metadata: Annotated[Metadata, BeforeValidator(_object)] = Metadata()
    contacts: Items = []
    messages: Items = []
    message_echoes: Items = []
    statuses: Items = []
    errors: Items = []

    def contact_list(self) -> list[Contact]:
        return [Contact.model_validate(c) for c in self.contacts if isinstance(c, dict)]


class Change(_Model):
    field: Text = ""
    value: Any = None


class Entry(_Model):
    id: Text = ""
    changes: Annotated[list[Change], BeforeValidator(_list_or_empty)] = []


class Envelope(_Model):
    """The top level of a Cloud API webhook body. `entry` and each entry's `changes` must be
    lists of objects; the change values are validated after routing (`Value`)."""

    object: Any = None
    entry: Annotated[list[Entry], BeforeValidator(_list_or_empty)] = []

    def changes(self) -> list[Change]:
        return [change for entry in self.entry for change in entry.changes]


# --- Bridge ---------------------------------------------------------------------------------


def _bridge_text(value: Any) -> str:
    """The bridge's scalars: strings, and integers as their digits (the bridge is ours)."""
    return value if isinstance(value, str) else str(value) if isinstance(value, int) else ""


def _bridge_timestamp(value: Any) -> int:
    if isinstance(value, int | float) and math.isfinite(value):
        return int(value)
    return 0


BridgeText = Annotated[str, BeforeValidator(_bridge_text)]


class BridgeEvent(_Model):
    id: BridgeText = ""
    chat_id: BridgeText = ""
    from_me: Annotated[bool, BeforeValidator(lambda v: v is True)] = False
    kind: BridgeText = ""
    text: BridgeText = ""
    timestamp: Annotated[int, BeforeValidator(_bridge_timestamp)] = 0
    sender_name: BridgeText = ""
    phone: BridgeText = ""
    media_url: BridgeText = ""
    media_mime: BridgeText = ""
    media_sha256: BridgeText = ""
    filename: BridgeText = ""
    reply_to: BridgeText = ""
    reacted_to: BridgeText = ""
    edit_of: BridgeText = ""
    revoke_of: BridgeText = ""


class BridgeBody(_Model):
    """`{"events": [event, …]}`; the list is structure, its events are parsed one by one."""

    events: list[Any]
