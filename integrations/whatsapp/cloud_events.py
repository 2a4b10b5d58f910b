"""Cloud API webhook bodies → `InboundEvent` / `StatusEvent`.

Pure functions, no I/O: the webhook endpoint verifies the signature, resolves which channel each
`phone_number_id` belongs to, and calls `normalise`. Every message type the platform documents
is kept (unknown types become `unsupported`, so a manager still sees that something arrived);
change fields we do not use are reported as skipped, never an error. Only a body whose envelope
has the wrong types is rejected (`MalformedWebhook`), because retrying it cannot help. The shapes
are declared once, in `payloads.py`; each message and status is validated on its own, so a bad
one is skipped and the rest of the batch is kept.
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
from integrations.whatsapp import payloads

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


def _str(value: Any) -> str:
    return payloads._text(value)


def phone_number_ids(body: Any) -> set[str]:
    """The business numbers a body is addressed to (for routing before normalising; never
    raises: a malformed body is rejected by `normalise`)."""
    found: set[str] = set()
    entries = body.get("entry") if isinstance(body, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        changes = entry.get("changes") if isinstance(entry, dict) else None
        for change in changes if isinstance(changes, list) else []:
            value = change.get("value") if isinstance(change, dict) else None
            number = _number(value) if isinstance(value, dict) else ""
            if number:
                found.add(number)
    return found


def _number(value: dict[str, Any]) -> str:
    """The `phone_number_id` of a change's value ("" when missing or of the wrong type)."""
    metadata = value.get("metadata")
    parsed = payloads.Metadata.model_validate(metadata if isinstance(metadata, dict) else {})
    return parsed.phone_number_id


def _malformed(exc: payloads.ValidationError) -> MalformedWebhook:
    return MalformedWebhook(payloads.describe(exc))


def normalise(body: Any, channels: Mapping[str, int]) -> Normalised:
    """Turn one webhook body into events for the channels in `channels`
    (phone_number_id → channel id). Numbers not in it are reported in `unknown_numbers`."""
    if not isinstance(body, dict):
        raise MalformedWebhook("body must be an object")
    out = Normalised()
    if body.get("object") != "whatsapp_business_account":
        out.skipped.append(f"object {str(body.get('object'))[:40]!r}")
        return out
    try:
        changes = payloads.Envelope.model_validate(body).changes()
    except payloads.ValidationError as exc:
        raise _malformed(exc) from None
    for change in changes:
        if change.field not in ("messages", "smb_message_echoes") or not isinstance(
            change.value, dict
        ):
            out.skipped.append(f"field {change.field[:40]!r}")
            continue
        number = _number(change.value)
        channel_id = channels.get(number)
        if channel_id is None:
            out.unknown_numbers.add(number)
            continue
        try:
            value = payloads.Value.model_validate(change.value)
        except payloads.ValidationError as exc:
            raise _malformed(exc) from None
        _normalise_value(value, channel_id, out)
    return out


def _normalise_value(value: payloads.Value, channel_id: int, out: Normalised) -> None:
    contacts = value.contact_list()
    for raw in value.messages:
        message = payloads.parse_item(payloads.Message, raw)
        event = _message(message, raw, channel_id, contacts, from_me=False) if message else None
        if message is None:
            out.skipped.append("message that is not an object")
        elif event is None:
            out.skipped.append("message without id or sender")
        else:
            out.events.append(event)
    for raw in value.message_echoes:
        message = payloads.parse_item(payloads.Message, raw)
        event = _message(message, raw, channel_id, contacts, from_me=True) if message else None
        if message is None:
            out.skipped.append("echo that is not an object")
        elif event is None:
            out.skipped.append("echo without id or recipient")
        else:
            out.events.append(event)
    for raw in value.statuses:
        parsed = payloads.parse_item(payloads.Status, raw)
        status = _status(parsed, channel_id) if parsed else None
        if status is None:
            out.skipped.append("status without id or with an unknown status")
        else:
            out.events.append(status)
    for raw in value.errors:
        error = payloads.parse_item(payloads.ErrorInfo, raw)
        if error is not None:
            log.warning(
                "whatsapp.webhook_error", extra={"code": error.code, "title": error.title[:200]}
            )


def _contact_for(
    contacts: list[payloads.Contact], wa_id: str, user_id: str = ""
) -> payloads.Contact:
    for contact in contacts:
        if (wa_id and contact.wa_id == wa_id) or (user_id and contact.user_id == user_id):
            return contact
    return contacts[0] if len(contacts) == 1 else payloads.Contact()


def _message(
    message: payloads.Message,
    raw: dict[str, Any],
    channel_id: int,
    contacts: list[payloads.Contact],
    *,
    from_me: bool,
) -> InboundEvent | None:
    if from_me:
        # Business-app echo: `from` is the business, `to` the customer (or only their user id).
        contact = _contact_for(contacts, message.to, message.to_user_id)
        wa_id = message.to
        user_id = message.to_user_id or contact.user_id
    else:
        # 2026: a customer who uses a username may come without `from`/`wa_id`, only with
        # `from_user_id` / `contacts[].user_id` (their BSUID).
        contact = _contact_for(contacts, message.from_, message.from_user_id)
        wa_id = message.from_ or contact.wa_id
        user_id = message.from_user_id or contact.user_id
    if wa_id and not wa_id.isdigit():
        user_id, wa_id = user_id or wa_id, ""  # a BSUID where the number goes: no phone
    # Customers are keyed on wa_id; on the business-scoped user id when wa_id is empty.
    chat_key = wa_id or user_id
    if not message.id or not chat_key:
        return None
    kind, text, media, extra = _content(raw)
    if message.context is not None:
        if message.context.id:
            extra["reply_to"] = message.context.id
        if message.context.is_forwarded:
            extra["forwarded"] = True
    if message.referral is not None:
        extra["referral"] = {
            k: _str(v)
            for k, v in message.referral.items()
            if k in ("source_url", "headline", "source_type")
        }
    return InboundEvent(
        channel_id=channel_id,
        provider_message_id=message.id,
        chat_key=chat_key,
        from_me=from_me,
        kind=kind,
        text=text,
        media=media,
        provider_ts=message.timestamp,
        customer_name=contact.profile.name[:200],
        customer_phone=wa_id,
        customer_bsuid=user_id[:160],
        customer_username=contact.profile.username[:64],
        extra=extra,
    )


def _media(obj: payloads.MediaBody, *, voice: bool = False) -> MediaRef | None:
    if not obj.id:
        return None
    return MediaRef(
        ref=obj.id, mime_type=obj.mime_type, sha256=obj.sha256, filename=obj.filename, voice=voice
    )


def _content(raw: dict[str, Any]) -> tuple[MessageKind, str, MediaRef | None, dict[str, Any]]:
    """(kind, text, media, extra) for one message object, whatever its type. The body under
    the type's key is read through its model; one of the wrong type reads as empty."""
    kind = _str(raw.get("type"))
    body = raw.get(kind) if kind else None
    obj = body if isinstance(body, dict) else {}
    extra: dict[str, Any] = {}

    if kind == "text":
        return "text", payloads.TextBody.model_validate(obj).body, None, extra
    if kind in MEDIA_KINDS:
        media_body = payloads.MediaBody.model_validate(obj)
        voice = kind == "audio" and media_body.voice
        mapped: MessageKind = "voice" if voice else kind  # type: ignore[assignment]
        if media_body.animated:
            extra["animated"] = True
        return mapped, media_body.caption, _media(media_body, voice=voice), extra
    if kind == "location":
        # Kept verbatim: the values are shown as the platform sent them.
        extra = {k: obj.get(k) for k in ("latitude", "longitude", "name", "address", "url")}
        label = ", ".join(_str(obj.get(k)) for k in ("name", "address") if _str(obj.get(k)))
        return "location", label, None, extra
    if kind == "contacts":
        cards = [c for c in body if isinstance(c, dict)] if isinstance(body, list) else []
        lines = [payloads.ContactCard.model_validate(card).line for card in cards]
        return "contacts", "\n".join(lines), None, {"contacts": cards}
    if kind == "interactive":
        reply_type = payloads.InteractiveBody.model_validate(obj).type
        reply = obj.get(reply_type) if reply_type else None
        if isinstance(reply, dict):
            answer = payloads.InteractiveReply.model_validate(reply)
            extra = {"interactive_type": reply_type, "id": answer.id}
            if reply_type == "nfm_reply":
                extra["response_json"] = answer.response_json
                return "interactive", answer.body or "(form reply)", None, extra
            text = answer.title
            if answer.description:
                text = f"{text} — {answer.description}"
            return "interactive", text, None, extra
        return "unsupported", "", None, {"type": "interactive", **_errors(raw)}
    if kind == "button":
        button = payloads.ButtonBody.model_validate(obj)
        extra = {"interactive_type": "button", "payload": button.payload}
        return "interactive", button.text, None, extra
    if kind == "reaction":
        # An empty emoji removes an earlier reaction.
        reaction = payloads.ReactionBody.model_validate(obj)
        return "reaction", reaction.emoji, None, {"reacted_to": reaction.message_id}
    if kind == "order":
        order = payloads.OrderBody.model_validate(obj)
        lines = [
            f"{i.quantity} × {i.product_retailer_id} @ {i.item_price} {i.currency}".strip()
            for i in order.product_items
        ]
        text = "Order:\n" + "\n".join(lines)
        if order.text:
            text += "\n" + order.text
        return "interactive", text, None, {"interactive_type": "order", "order": obj}
    if kind == "edit":
        edit = payloads.EditBody.model_validate(obj)
        inner_kind, text, media, inner_extra = (
            _content(edit.message) if edit.message else ("unsupported", "", None, {})
        )
        inner_extra["edit_of"] = edit.original_message_id
        return inner_kind, text, media, inner_extra
    if kind == "revoke":
        revoke = payloads.RevokeBody.model_validate(obj)
        return "unsupported", "", None, {"revoke_of": revoke.original_message_id}
    if kind == "system":
        # Kept verbatim (every key, as text): system notices vary by kind.
        extra = {"system": {k: _str(v) for k, v in obj.items()}}
        return "unsupported", _str(obj.get("body")), None, extra
    return "unsupported", "", None, {"type": kind[:40], **_errors(raw)}


def _errors(raw: dict[str, Any]) -> dict[str, Any]:
    errors = raw.get("errors")
    return _first_error(errors) if isinstance(errors, list) else {}


def _first_error(errors: list[Any]) -> dict[str, Any]:
    """The first entry of an `errors` list, when it is an object (as the platform sends it)."""
    if errors and isinstance(errors[0], dict):
        error = payloads.ErrorInfo.model_validate(errors[0])
        return {"error_code": error.code, "error_title": error.described}
    return {}


def _status(raw: payloads.Status, channel_id: int) -> StatusEvent | None:
    if not raw.id or raw.status not in STATUSES:
        return None
    errors = _first_error(raw.errors)
    extra: dict[str, Any] = {}
    if raw.biz_opaque_callback_data:
        extra["callback_data"] = raw.biz_opaque_callback_data
    return StatusEvent(
        channel_id=channel_id,
        provider_message_id=raw.id,
        status=raw.status,  # type: ignore[arg-type]
        provider_ts=raw.timestamp,
        recipient=raw.recipient_id or raw.recipient_user_id,
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
