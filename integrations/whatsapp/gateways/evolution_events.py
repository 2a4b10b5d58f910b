"""Evolution API v2 webhook bodies → the normalised events the bridge path produces.

Built from EvolutionAPI/evolution-api 2.3.6 (commit 3454bec7): `webhook.controller.ts` posts
`{"event", "instance", "data", "date_time", "sender", "server_url", "apikey"}` to one URL
(`webhookByEvents: false`); `whatsapp.baileys.service.ts` fills `data`:

- `messages.upsert`: one message (`prepareMessage`): `key` {remoteJid, fromMe, id,
  remoteJidAlt when the chat is addressed by `@lid`}, `pushName`, `message` (`conversation`
  — extendedText is folded into it —, `imageMessage`, `audioMessage` {ptt}, `documentMessage`,
  …, and `base64` when the webhook has `webhookBase64`), `contextInfo` {stanzaId of a quoted
  message}, `messageType`, `messageTimestamp`. `fromMe` here is a message typed on the phone
  (or another linked device): Evolution runs Baileys with `emitOwnEvents: false`, so its own
  API sends never come back as upserts.
- `send.message`: the same shape for a message sent through the API — ours (the inbox is the
  API's client), recorded by the send itself, so it is skipped, never a takeover. It is posted
  before the send's HTTP answer, so it could not be recognised by the id that answer returns.
- `messages.set`: a list of old messages (history sync after linking or a reconnect): stored,
  deduplicated, and marked `history` so the bot never answers them.
- `messages.update`: {keyId, remoteJid, fromMe, status: ERROR|PENDING|SERVER_ACK|DELIVERY_ACK|
  READ|PLAYED|DELETED}: delivery statuses of our messages.
- `connection.update`: {state: open|connecting|close, statusReason}: read by the webhook
  handler (`link_state`), not an event of a chat.

Media: the bytes are not in the event (a voice note would travel through the queue and the
row); `MediaRef.ref` is the message's key id. With `webhookBase64` on, the webhook keeps the
body's `base64` aside for a while (`inline_media`, `evolution.keep_inline_media`); else, or
once that expired, the transport asks `POST /chat/getBase64FromMediaMessage/{instance}`.
"""

from __future__ import annotations

import time
from typing import Any

from inbox.conversations.events import (
    HISTORY_AGE_SECONDS,
    Event,
    InboundEvent,
    MediaRef,
    StatusEvent,
)
from integrations.whatsapp.cloud_events import MalformedWebhook

MAX_EVENTS_PER_BODY = 1000

_STATUSES = {
    "SERVER_ACK": "sent",
    "DELIVERY_ACK": "delivered",
    "READ": "read",
    "PLAYED": "played",
    "ERROR": "failed",
    "DELETED": "deleted",
}

# Evolution's messageType / message keys → the inbox's kinds.
_KINDS = {
    "conversation": "text",
    "extendedTextMessage": "text",
    "imageMessage": "image",
    "audioMessage": "audio",
    "documentMessage": "document",
    "documentWithCaptionMessage": "document",
    "videoMessage": "video",
    "ptvMessage": "video",
    "stickerMessage": "sticker",
    "locationMessage": "location",
    "liveLocationMessage": "location",
    "contactMessage": "contacts",
    "contactsArrayMessage": "contacts",
    "reactionMessage": "reaction",
    "buttonsResponseMessage": "interactive",
    "listResponseMessage": "interactive",
    "templateButtonReplyMessage": "interactive",
}
_MEDIA_KINDS = frozenset({"image", "audio", "voice", "document", "video", "sticker"})


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return ""


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value if 0 <= value < 2**53 else 0
    if isinstance(value, str) and value.isascii() and value.isdigit() and len(value) < 16:
        return int(value)
    if isinstance(value, dict):  # a protobuf Long serialised as {low, high, unsigned}
        return _int(value.get("low")) + (_int(value.get("high")) << 32)
    return 0


def event_name(body: Any) -> str:
    """The body's event, as `messages.upsert` (Evolution also knows `MESSAGES_UPSERT`)."""
    return _str(_obj(body).get("event")).lower().replace("_", ".")


def given_apikey(body: Any) -> str:
    return _str(_obj(body).get("apikey"))


def link_state(body: Any) -> str | None:
    """`open`, `connecting` or `close` for a `connection.update` body; None for any other body
    (a state it does not name is acknowledged and ignored)."""
    if event_name(body) != "connection.update":
        return None
    state = _str(_obj(_obj(body).get("data")).get("state"))
    return state if state in ("open", "connecting", "close") else None


def inline_media(body: Any) -> dict[str, str]:
    """The base64 attachments of a body sent with `webhookBase64` on, by message key id: kept
    aside for `fetch_media` (never queued), so the gateway is not asked for them again."""
    if event_name(body) not in ("messages.upsert", "messages.set"):
        return {}
    data = _obj(body).get("data")
    found: dict[str, str] = {}
    for raw in data if isinstance(data, list) else [data]:
        item = _obj(raw)
        message_id = _str(_obj(item.get("key")).get("id"))
        encoded = _obj(item.get("message")).get("base64")
        if message_id and isinstance(encoded, str) and encoded:
            found[message_id[:255]] = encoded
    return found


def normalise(
    body: Any, channel_id: int, now: float | None = None
) -> tuple[list[Event], list[str]]:
    """(events, skipped reasons); MalformedWebhook when the body is not an Evolution event.
    Each message is read on its own: a malformed one is skipped, its neighbours are kept."""
    if not isinstance(body, dict):
        raise MalformedWebhook("body must be an object")
    name = event_name(body)
    data = body.get("data")
    now = time.time() if now is None else now
    if name == "messages.upsert":
        items = data if isinstance(data, list) else [data]
        return _messages(items, channel_id, history_before=now - HISTORY_AGE_SECONDS)
    if name == "messages.set":
        history = data if isinstance(data, list) else _obj(data).get("messages")
        if not isinstance(history, list):
            raise MalformedWebhook("data must be a list of messages")
        return _messages(history, channel_id, history_before=float("inf"))
    if name == "messages.update":
        items = data if isinstance(data, list) else [data]
        return _statuses(items, channel_id, int(now))
    return [], [f"event {name[:40] or 'without a name'}"]


def _messages(
    items: list[Any], channel_id: int, *, history_before: float
) -> tuple[list[Event], list[str]]:
    if len(items) > MAX_EVENTS_PER_BODY:
        raise MalformedWebhook(f"more than {MAX_EVENTS_PER_BODY} messages in one body")
    events: list[Event] = []
    skipped: list[str] = []
    for raw in items:
        try:
            event = _message(_obj(raw), channel_id, history_before)
        except (ValueError, TypeError, AttributeError, RecursionError):
            event = "malformed message"
        if isinstance(event, str):
            skipped.append(event)
        else:
            events.append(event)
    return events, skipped


def chat_key(key: dict[str, Any]) -> str:
    """The customer's JID. A chat addressed by `@lid` is keyed by its phone-number JID when
    Evolution gives it (`remoteJidAlt`), so one customer stays one chat whichever address a
    message used; else by the `@lid` JID itself, as the bridge does."""
    jid = _str(key.get("remoteJid"))
    alt = _str(key.get("remoteJidAlt"))
    if jid.endswith("@lid") and alt.endswith("@s.whatsapp.net"):
        return alt
    return jid


def _message(raw: dict[str, Any], channel_id: int, history_before: float) -> InboundEvent | str:
    key = _obj(raw.get("key"))
    message_id = _str(key.get("id"))
    jid = chat_key(key)
    if not message_id or not jid:
        return "message without key.id or key.remoteJid"
    if jid.endswith("@g.us") or jid.endswith("@broadcast") or jid.endswith("@newsletter"):
        return "group, broadcast or channel chat"
    content = _obj(raw.get("message"))
    message_type = _str(raw.get("messageType")) or next(
        (k for k in content if k in _KINDS or k.endswith("Message")), ""
    )
    from_me = key.get("fromMe") is True
    ts = _int(raw.get("messageTimestamp"))
    extra: dict[str, Any] = {}
    quoted = _str(_obj(raw.get("contextInfo")).get("stanzaId"))
    if quoted:
        extra["reply_to"] = quoted[:255]
    if (ts and ts < history_before) or history_before == float("inf"):
        extra["history"] = True
    protocol = _obj(content.get("protocolMessage"))
    if message_type == "protocolMessage" or protocol:
        target = _str(_obj(protocol.get("key")).get("id"))
        if protocol.get("type") in (0, "REVOKE") and target:
            extra["revoke_of"] = target[:255]
            return _event(raw, channel_id, message_id, jid, from_me, "text", "", None, ts, extra)
        return "protocol message"
    kind = _KINDS.get(message_type, "unsupported")
    body = _obj(content.get(message_type))
    if message_type == "documentWithCaptionMessage":
        body = _obj(_obj(_obj(body.get("message")).get("documentMessage")))
    text = _str(content.get("conversation")) or _str(body.get("text")) or _str(body.get("caption"))
    if kind == "audio" and body.get("ptt") is True:
        kind = "voice"
    if kind == "reaction":
        extra["reacted_to"] = _str(_obj(body.get("key")).get("id"))[:255]
    if kind == "unsupported":
        extra["type"] = message_type[:40]
    media = None
    if kind in _MEDIA_KINDS:
        media = MediaRef(
            ref=message_id[:255],
            mime_type=_str(body.get("mimetype")).split(";")[0][:128],
            filename=_str(body.get("fileName"))[:255],
            voice=kind == "voice",
        )
    return _event(raw, channel_id, message_id, jid, from_me, kind, text, media, ts, extra)


def _event(
    raw: dict[str, Any],
    channel_id: int,
    message_id: str,
    jid: str,
    from_me: bool,
    kind: str,
    text: str,
    media: MediaRef | None,
    ts: int,
    extra: dict[str, Any],
) -> InboundEvent:
    user = jid.split("@")[0].split(":")[0]
    phone = user if jid.endswith("@s.whatsapp.net") and user.isdigit() else ""
    return InboundEvent(
        channel_id=channel_id,
        provider_message_id=message_id[:255],
        chat_key=jid[:128],
        from_me=from_me,
        kind=kind,  # type: ignore[arg-type]
        text=text,
        media=media,
        provider_ts=ts,
        customer_name="" if from_me else _str(raw.get("pushName"))[:200],
        customer_phone=phone,
        extra=extra,
    )


def _statuses(items: list[Any], channel_id: int, now: int) -> tuple[list[Event], list[str]]:
    if len(items) > MAX_EVENTS_PER_BODY:
        raise MalformedWebhook(f"more than {MAX_EVENTS_PER_BODY} updates in one body")
    events: list[Event] = []
    skipped: list[str] = []
    for raw in items:
        update = _obj(raw)
        message_id = _str(update.get("keyId")) or _str(_obj(update.get("key")).get("id"))
        status = _STATUSES.get(_str(update.get("status")).upper())
        if not message_id or status is None:
            skipped.append("update without keyId or a known status")
            continue
        if update.get("fromMe") is False:
            skipped.append("status of a customer's message")
            continue
        events.append(
            StatusEvent(
                channel_id=channel_id,
                provider_message_id=message_id[:255],
                status=status,  # type: ignore[arg-type]
                provider_ts=_int(update.get("messageTimestamp")) or now,
                recipient=_str(update.get("remoteJid"))[:128],
            )
        )
    return events, skipped
