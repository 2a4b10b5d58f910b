"""WAHA's webhook bodies read into the bridge's normalised events.

Built from WAHA's own source and docs (devlikeapro/waha, core 2024.10.8 and the 2025/2026
GOWS engine; waha.devlike.pro "Events" and "Receive messages"). One body is one event:

    {"id": "evt_…", "timestamp": 1749416383123, "session": "default", "engine": "GOWS",
     "event": "message" | "message.any" | "message.ack" | "message.edited" |
              "message.revoked" | "session.status" | …,
     "payload": {…}, "me": {"id": "77010000000@c.us"}}

A message's payload: `id` (serialised `true_<chat>_<ID>` / `false_<chat>_<ID>`), `timestamp`
(seconds), `from`, `to`, `fromMe`, `source` ("api" | "app", where the engine gives it), `body`,
`hasMedia`, `media` {url, mimetype, filename}, `replyTo` {id}, `_data` (the engine's raw
message). Who the customer is depends on the engine: on WEBJS a message typed on the phone has
`from` = the business and `to` = the chat; on GOWS `from` = the chat and `to` = null. So the
chat is `to` for a `fromMe` message only when `to` is set and `from` is the business itself.

Ids: the short id (the last part of the serialised one) is the provider id, the same for the
send call's answer, `message.ack`, `replyTo.id`, whichever of `@c.us` / `@lid` the chat was
written with. `message` and `message.any` carry the same message: dedup keeps one.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from dataclasses import dataclass, field
from typing import Any

from inbox.conversations.events import (
    HISTORY_AGE_SECONDS,
    DeliveryStatus,
    InboundEvent,
    MediaRef,
    StatusEvent,
)
from integrations.whatsapp.cloud_events import MalformedWebhook

MESSAGE_EVENTS = frozenset({"message", "message.any"})
# `ack` → status. 0 (PENDING) says nothing new.
ACK_STATUS: dict[int, DeliveryStatus] = {-1: "failed", 1: "sent", 2: "delivered", 3: "read",
                                         4: "played"}  # fmt: skip
ACK_NAMES: dict[str, DeliveryStatus] = {"ERROR": "failed", "SERVER": "sent", "DEVICE": "delivered",
                                        "READ": "read", "PLAYED": "played"}  # fmt: skip
# Session states in which the number is not linked: the silent-number alert goes up at once.
UNLINKED_STATES = frozenset({"STOPPED", "FAILED", "SCAN_QR_CODE"})
WEBJS_KINDS = {"chat": "text", "ptt": "voice", "audio": "audio", "image": "image",
               "document": "document", "video": "video", "sticker": "sticker",
               "location": "location", "vcard": "contacts", "multi_vcard": "contacts"}  # fmt: skip
PROTO_KINDS = {"imageMessage": "image", "documentMessage": "document", "videoMessage": "video",
               "stickerMessage": "sticker", "locationMessage": "location",
               "contactMessage": "contacts", "documentWithCaptionMessage": "document"}  # fmt: skip


@dataclass
class WahaBody:
    """What one webhook body comes to: messages and statuses for the queue, and the session's
    state when the body is a `session.status`."""

    events: list[InboundEvent | StatusEvent] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    session_status: str = ""


def signature_is_valid(key: str, body: bytes, signature: str | None, algorithm: str | None) -> bool:
    """`X-Webhook-Hmac`: hex HMAC-SHA512 of the raw body, keyed with the session's `hmac.key`
    (`X-Webhook-Hmac-Algorithm: sha512`; any other algorithm is refused)."""
    if not key or not signature or (algorithm or "sha512").strip().lower() != "sha512":
        return False
    expected = hmac.new(key.encode(), body, hashlib.sha512).hexdigest()
    return hmac.compare_digest(expected.encode(), signature.strip().lower().encode("latin-1"))


def _s(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _d(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def short_id(message_id: Any) -> str:
    """`true_77011234567@c.us_3EB0ABC` → `3EB0ABC`; an id already short stays as it is. WEBJS's
    send answer gives the id as an object: its `_serialized` (else `id`) is read."""
    if isinstance(message_id, dict):
        message_id = message_id.get("_serialized") or message_id.get("id")
    text = _s(message_id)
    if text.startswith(("true_", "false_")):
        parts = text.split("_")
        if len(parts) >= 3:
            return parts[2][:255]
    return text[:255]


def _is_group(jid: str) -> bool:
    return jid.endswith(("@g.us", "@broadcast", "@newsletter")) or jid == "status@broadcast"


def _phone(jid: str) -> str:
    user = jid.split("@")[0].split(":")[0]
    return user if jid.endswith(("@c.us", "@s.whatsapp.net")) and user.isdigit() else ""


def normalise(body: Any, channel_id: int) -> WahaBody:
    """A WAHA webhook body → events. Raises MalformedWebhook when it is not an event object;
    a payload that lacks what its event needs is skipped (counted in `skipped`)."""
    if not isinstance(body, dict):
        raise MalformedWebhook("body must be an object")
    event = _s(body.get("event"))
    payload = body.get("payload")
    out = WahaBody()
    if not isinstance(payload, dict):
        out.skipped.append(f"{event[:40] or 'event'} without a payload object")
        return out
    me = _s(_d(body.get("me")).get("id"))
    if event in MESSAGE_EVENTS:
        message = _message(payload, channel_id, me, out.skipped)
        if message is not None:
            out.events.append(message)
    elif event in ("message.edited", "message.revoked"):
        changed = _edit_or_revoke(event, payload, channel_id, me, out.skipped)
        if changed is not None:
            out.events.append(changed)
    elif event == "message.ack":
        status = _status(payload, channel_id)
        if status is None:
            out.skipped.append("ack without id or a known status")
        else:
            out.events.append(status)
    elif event == "session.status":
        out.session_status = _s(payload.get("status")).upper()[:40]
    else:
        out.skipped.append(f"event {event[:40]!r}")
    return out


def _chat_of(payload: dict[str, Any], me: str) -> str:
    sender, recipient = _s(payload.get("from")), _s(payload.get("to"))
    if payload.get("fromMe") is True and recipient and not _same_user(recipient, me):
        return recipient  # WEBJS / NOWEB: from = the business, to = the chat
    return sender or recipient  # GOWS: from = the chat (to is null), and every customer message


def _same_user(a: str, b: str) -> bool:
    return bool(a and b) and a.split("@")[0].split(":")[0] == b.split("@")[0].split(":")[0]


def _kind(payload: dict[str, Any], media: dict[str, Any]) -> str:
    data = _d(payload.get("_data"))
    webjs = WEBJS_KINDS.get(_s(data.get("type")))
    if webjs:
        return webjs
    proto = _d(data.get("message") or data.get("Message"))
    audio = _d(proto.get("audioMessage"))
    if audio:
        return "voice" if audio.get("ptt") is True or audio.get("PTT") is True else "audio"
    for key, kind in PROTO_KINDS.items():
        if key in proto:
            return kind
    if payload.get("hasMedia") is not True and not media:
        return "text"
    mime = _s(media.get("mimetype")).lower()
    if mime.startswith("audio/ogg") or "opus" in mime:
        return "voice"
    for prefix in ("audio", "image", "video"):
        if mime.startswith(prefix + "/"):
            return prefix
    return "document"


def _message(
    payload: dict[str, Any], channel_id: int, me: str, skipped: list[str]
) -> InboundEvent | None:
    message_id = short_id(payload.get("id"))
    chat = _chat_of(payload, me)
    if not message_id or not chat:
        skipped.append("message without id or chat")
        return None
    if _is_group(chat) or _is_group(_s(payload.get("from"))):
        skipped.append("group or broadcast chat")
        return None
    from_me = payload.get("fromMe") is True
    source = _s(payload.get("source"))
    if from_me and source == "api":
        # Sent through WAHA's API, i.e. by the inbox (the session is the inbox's): already
        # stored as the reply it is. Engines without `source` are matched by the send's id.
        skipped.append("our own API send")
        return None
    media = _d(payload.get("media"))
    kind = _kind(payload, media)
    extra: dict[str, Any] = {}
    reply_to = short_id(_d(payload.get("replyTo")).get("id"))
    if reply_to:
        extra["reply_to"] = reply_to
    if source:
        extra["source"] = source[:20]
    media_ref = None
    url = _s(media.get("url"))
    if url:
        media_ref = MediaRef(ref=url[:1024], mime_type=_s(media.get("mimetype"))[:120],
                             filename=_s(media.get("filename"))[:255],
                             voice=kind == "voice")  # fmt: skip
    elif kind not in ("text", "location", "contacts"):
        extra["media_missing"] = _s(media.get("error"))[:200] or True
    timestamp = payload.get("timestamp")
    if isinstance(timestamp, int) and 0 < timestamp < time.time() - HISTORY_AGE_SECONDS:
        extra["history"] = True  # WAHA marks no replay: an old message is one
    data = _d(payload.get("_data"))
    name = _s(data.get("notifyName") or data.get("pushName") or data.get("PushName"))
    return InboundEvent(
        channel_id=channel_id,
        provider_message_id=message_id,
        chat_key=chat[:128],
        from_me=from_me,
        kind=kind,  # type: ignore[arg-type]
        text=_s(payload.get("body")),
        media=media_ref,
        provider_ts=int(timestamp) if isinstance(timestamp, int) and 0 < timestamp < 2**40 else 0,
        customer_name="" if from_me else name[:200],
        customer_phone=_phone(chat),
        extra=extra,
    )


def _edit_or_revoke(
    event: str, payload: dict[str, Any], channel_id: int, me: str, skipped: list[str]
) -> InboundEvent | None:
    """`message.edited` {id, editedMessageId, body, …} and `message.revoked` {after,
    revokedMessageId, before}: the bridge's `edit_of` / `revoke_of` on an event of their own."""
    if event == "message.edited":
        target, message = short_id(payload.get("editedMessageId")), payload
    else:
        target = short_id(payload.get("revokedMessageId"))
        message = _d(payload.get("after")) or _d(payload.get("before"))
        if target and not short_id(message.get("id")):
            message = {**message, "id": f"revoke-{target}"}
    if not target:
        skipped.append(f"{event} without the changed message's id")
        return None
    changed = _message(message, channel_id, me, skipped)
    if changed is not None:
        changed.extra["edit_of" if event == "message.edited" else "revoke_of"] = target
    return changed


def _status(payload: dict[str, Any], channel_id: int) -> StatusEvent | None:
    message_id = short_id(payload.get("id"))
    ack = payload.get("ack")
    status = ACK_STATUS.get(ack) if isinstance(ack, int) and not isinstance(ack, bool) else None
    status = status or ACK_NAMES.get(_s(payload.get("ackName")).upper())
    if not message_id or status is None:
        return None
    timestamp = payload.get("timestamp")
    return StatusEvent(
        channel_id=channel_id,
        provider_message_id=message_id,
        status=status,
        provider_ts=int(timestamp) if isinstance(timestamp, int) and 0 < timestamp < 2**40 else 0,
        recipient=_phone(_s(payload.get("to")) or _s(payload.get("from"))),
        error_code="waha_ack_error" if status == "failed" else "",
        error_title="WhatsApp did not accept the message" if status == "failed" else "",
    )
