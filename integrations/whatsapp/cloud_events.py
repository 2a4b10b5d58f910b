"""Cloud API webhook bodies → `InboundEvent` / `StatusEvent`.

Pure functions, no I/O: the webhook endpoint verifies the signature, resolves which channel each
`phone_number_id` belongs to, and calls `normalise`. Every message type the platform documents
is kept (unknown types become `unsupported`, so a manager still sees that something arrived);
change fields we do not use are reported as skipped, never an error. Only a body whose envelope
has the wrong types is rejected (`MalformedWebhook`), because retrying it cannot help.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from hashlib import sha256
from typing import Any

from inbox.conversations.events import (
    DeliveryStatus,
    InboundEvent,
    MediaRef,
    MessageKind,
    StatusEvent,
)

log = logging.getLogger(__name__)

MEDIA_KINDS = ("image", "video", "document", "sticker", "audio")
STATUSES: frozenset[str] = frozenset({"sent", "delivered", "read", "played", "failed", "deleted"})


class MalformedWebhook(ValueError):
    """The body is JSON but not a webhook envelope (wrong types where structure is required)."""


@dataclass
class Normalised:
    events: list[InboundEvent | StatusEvent] = field(default_factory=list)
    # Human-readable notes on what was acknowledged but not turned into an event.
    skipped: list[str] = field(default_factory=list)
    unknown_numbers: set[str] = field(default_factory=set)


def signature_is_valid(app_secret: str, body: bytes, header: str | None) -> bool:
    """`X-Hub-Signature-256: sha256=<hex HMAC-SHA256(app_secret, raw body)>`, compared in
    constant time."""
    if not app_secret or not header or not header.startswith("sha256="):
        return False
    expected = hmac.new(app_secret.encode(), body, sha256).hexdigest()
    return hmac.compare_digest(expected, header.removeprefix("sha256=").strip().lower())


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise MalformedWebhook(f"{where} must be a list")
    return value


def _items(value: Any) -> list[Any]:
    """A list field that may be missing or of the wrong type (routing reads before checking)."""
    return value if isinstance(value, list) else []


def _dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedWebhook(f"{where} must be an object")
    return value


def _str(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return ""


def _timestamp(value: Any) -> int:
    try:
        return int(float(_str(value) or 0))
    except (ValueError, OverflowError):  # "abc", NaN; 1e999 and Infinity (JSON allows both)
        return 0


def phone_number_ids(body: Any) -> set[str]:
    """The business numbers a body is addressed to (for routing before normalising)."""
    found: set[str] = set()
    if not isinstance(body, dict):
        return found
    for entry in _items(body.get("entry")):
        if not isinstance(entry, dict):
            continue
        for change in _items(entry.get("changes")):
            value = change.get("value") if isinstance(change, dict) else None
            metadata = value.get("metadata") if isinstance(value, dict) else None
            if isinstance(metadata, dict) and _str(metadata.get("phone_number_id")):
                found.add(_str(metadata.get("phone_number_id")))
    return found


def normalise(body: Any, channels: Mapping[str, int]) -> Normalised:
    """Turn one webhook body into events for the channels in `channels`
    (phone_number_id → channel id). Numbers not in it are reported in `unknown_numbers`."""
    envelope = _dict(body, "body")
    out = Normalised()
    if envelope.get("object") != "whatsapp_business_account":
        out.skipped.append(f"object {str(envelope.get('object'))[:40]!r}")
        return out
    for entry in _list(envelope.get("entry"), "entry"):
        for change in _list(_dict(entry, "entry[]").get("changes"), "entry[].changes"):
            change = _dict(change, "changes[]")
            field_name = _str(change.get("field"))
            value = change.get("value")
            if field_name not in ("messages", "smb_message_echoes") or not isinstance(value, dict):
                out.skipped.append(f"field {field_name[:40]!r}")
                continue
            metadata = value.get("metadata")
            number = _str(metadata.get("phone_number_id")) if isinstance(metadata, dict) else ""
            channel_id = channels.get(number)
            if channel_id is None:
                out.unknown_numbers.add(number)
                continue
            _normalise_value(value, channel_id, out)
    return out


def _normalise_value(value: dict[str, Any], channel_id: int, out: Normalised) -> None:
    contacts = [c for c in _list(value.get("contacts"), "contacts") if isinstance(c, dict)]
    for raw in _list(value.get("messages"), "messages"):
        if not isinstance(raw, dict):
            out.skipped.append("message that is not an object")
            continue
        event = _message(raw, channel_id, contacts, from_me=False)
        if event is None:
            out.skipped.append("message without id or sender")
        else:
            out.events.append(event)
    for raw in _list(value.get("message_echoes"), "message_echoes"):
        if not isinstance(raw, dict):
            out.skipped.append("echo that is not an object")
            continue
        event = _message(raw, channel_id, contacts, from_me=True)
        if event is None:
            out.skipped.append("echo without id or recipient")
        else:
            out.events.append(event)
    for raw in _list(value.get("statuses"), "statuses"):
        status = _status(raw, channel_id) if isinstance(raw, dict) else None
        if status is None:
            out.skipped.append("status without id or with an unknown status")
        else:
            out.events.append(status)
    for error in _list(value.get("errors"), "errors"):
        if isinstance(error, dict):
            log.warning(
                "whatsapp.webhook_error",
                extra={"code": _str(error.get("code")), "title": _str(error.get("title"))[:200]},
            )


def _contact_for(contacts: list[dict[str, Any]], wa_id: str) -> dict[str, Any]:
    for contact in contacts:
        if wa_id and _str(contact.get("wa_id")) == wa_id:
            return contact
    return contacts[0] if len(contacts) == 1 else {}


def _message(
    raw: dict[str, Any], channel_id: int, contacts: list[dict[str, Any]], *, from_me: bool
) -> InboundEvent | None:
    message_id = _str(raw.get("id"))
    if from_me:
        # Business-app echo: `from` is the business, `to` the customer (or only their user id).
        wa_id = _str(raw.get("to"))
        user_id = _str(raw.get("to_user_id"))
        contact = _contact_for(contacts, wa_id)
    else:
        wa_id = _str(raw.get("from"))
        contact = _contact_for(contacts, wa_id)
        wa_id = wa_id or _str(contact.get("wa_id"))
        user_id = _str(raw.get("from_user_id")) or _str(contact.get("user_id"))
    # Customers are keyed on wa_id; on the business-scoped user id when wa_id is empty.
    chat_key = wa_id or user_id
    if not message_id or not chat_key:
        return None
    profile = contact.get("profile")
    name = _str(profile.get("name")) if isinstance(profile, dict) else ""
    kind, text, media, extra = _content(raw)
    context = raw.get("context")
    if isinstance(context, dict):
        if _str(context.get("id")):
            extra["reply_to"] = _str(context.get("id"))
        if context.get("forwarded") or context.get("frequently_forwarded"):
            extra["forwarded"] = True
    if isinstance(raw.get("referral"), dict):
        extra["referral"] = {
            k: _str(v)
            for k, v in raw["referral"].items()
            if k in ("source_url", "headline", "source_type")
        }
    return InboundEvent(
        channel_id=channel_id,
        provider_message_id=message_id,
        chat_key=chat_key,
        from_me=from_me,
        kind=kind,
        text=text,
        media=media,
        provider_ts=_timestamp(raw.get("timestamp")),
        customer_name=name[:200],
        customer_phone=wa_id if wa_id.isdigit() else "",
        extra=extra,
    )


def _media(obj: dict[str, Any], *, voice: bool = False) -> MediaRef | None:
    ref = _str(obj.get("id"))
    if not ref:
        return None
    return MediaRef(
        ref=ref,
        mime_type=_str(obj.get("mime_type")),
        sha256=_str(obj.get("sha256")),
        filename=_str(obj.get("filename")),
        voice=voice,
    )


def _content(raw: dict[str, Any]) -> tuple[MessageKind, str, MediaRef | None, dict[str, Any]]:
    """(kind, text, media, extra) for one message object, whatever its type."""
    kind = _str(raw.get("type"))
    body = raw.get(kind) if kind else None
    obj = body if isinstance(body, dict) else {}
    extra: dict[str, Any] = {}

    if kind == "text":
        return "text", _str(obj.get("body")), None, extra
    if kind in MEDIA_KINDS:
        voice = kind == "audio" and obj.get("voice") is True
        media = _media(obj, voice=voice)
        mapped: MessageKind = "voice" if voice else kind  # type: ignore[assignment]
        if obj.get("animated") is True:
            extra["animated"] = True
        return mapped, _str(obj.get("caption")), media, extra
    if kind == "location":
        extra = {k: obj.get(k) for k in ("latitude", "longitude", "name", "address", "url")}
        label = ", ".join(_str(obj.get(k)) for k in ("name", "address") if _str(obj.get(k)))
        return "location", label, None, extra
    if kind == "contacts":
        cards = [c for c in body if isinstance(c, dict)] if isinstance(body, list) else []
        lines = []
        for card in cards:
            name: dict[str, Any] = card["name"] if isinstance(card.get("name"), dict) else {}
            phones = [_str(p.get("phone")) for p in card.get("phones") or [] if isinstance(p, dict)]
            lines.append(f"{_str(name.get('formatted_name'))} {' '.join(phones)}".strip())
        return "contacts", "\n".join(lines), None, {"contacts": cards}
    if kind == "interactive":
        reply_type = _str(obj.get("type"))
        reply = obj.get(reply_type) if reply_type else None
        if isinstance(reply, dict):
            extra = {"interactive_type": reply_type, "id": _str(reply.get("id"))}
            if reply_type == "nfm_reply":
                extra["response_json"] = _str(reply.get("response_json"))
                return "interactive", _str(reply.get("body")) or "(form reply)", None, extra
            text = _str(reply.get("title"))
            if _str(reply.get("description")):
                text = f"{text} — {_str(reply.get('description'))}"
            return "interactive", text, None, extra
        return "unsupported", "", None, {"type": "interactive", **_errors(raw)}
    if kind == "button":
        extra = {"interactive_type": "button", "payload": _str(obj.get("payload"))}
        return "interactive", _str(obj.get("text")), None, extra
    if kind == "reaction":
        # An empty emoji removes an earlier reaction.
        extra = {"reacted_to": _str(obj.get("message_id"))}
        return "reaction", _str(obj.get("emoji")), None, extra
    if kind == "order":
        items = [i for i in _items(obj.get("product_items")) if isinstance(i, dict)]
        lines = [
            f"{_str(i.get('quantity'))} × {_str(i.get('product_retailer_id'))} "
            f"@ {_str(i.get('item_price'))} {_str(i.get('currency'))}".strip()
            for i in items
        ]
        text = "Order:\n" + "\n".join(lines)
        if _str(obj.get("text")):
            text += "\n" + _str(obj.get("text"))
        return "interactive", text, None, {"interactive_type": "order", "order": obj}
    if kind == "edit":
        inner = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        inner_kind, text, media, inner_extra = (
            _content(inner) if inner else ("unsupported", "", None, {})
        )
        inner_extra["edit_of"] = _str(obj.get("original_message_id"))
        return inner_kind, text, media, inner_extra
    if kind == "revoke":
        return "unsupported", "", None, {"revoke_of": _str(obj.get("original_message_id"))}
    if kind == "system":
        extra = {"system": {k: _str(v) for k, v in obj.items()}}
        return "unsupported", _str(obj.get("body")), None, extra
    return "unsupported", "", None, {"type": kind[:40], **_errors(raw)}


def _errors(raw: dict[str, Any]) -> dict[str, Any]:
    errors = raw.get("errors")
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        return {
            "error_code": _str(errors[0].get("code")),
            "error_title": _str(errors[0].get("title")),
        }
    return {}


def _status(raw: dict[str, Any], channel_id: int) -> StatusEvent | None:
    message_id = _str(raw.get("id"))
    status = _str(raw.get("status"))
    if not message_id or status not in STATUSES:
        return None
    errors = _errors(raw)
    extra: dict[str, Any] = {}
    if _str(raw.get("biz_opaque_callback_data")):
        extra["callback_data"] = _str(raw.get("biz_opaque_callback_data"))
    return StatusEvent(
        channel_id=channel_id,
        provider_message_id=message_id,
        status=status,  # type: ignore[arg-type]
        provider_ts=_timestamp(raw.get("timestamp")),
        recipient=_str(raw.get("recipient_id")),
        error_code=errors.get("error_code", ""),
        error_title=errors.get("error_title", "")[:500],
        extra=extra,
    )


__all__ = [
    "DeliveryStatus",
    "MalformedWebhook",
    "Normalised",
    "normalise",
    "phone_number_ids",
    "signature_is_valid",
]
