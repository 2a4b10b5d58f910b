"""Linked-device bridge: a session linked to an existing WhatsApp number (whatsmeow, Baileys…)
run as a small HTTP service next to the inbox. The wire format is ours; docs/bridge.md documents
it for whoever writes the bridge.

Events (bridge → inbox): `POST /webhooks/bridge/<channel id>/` with `Authorization: Bearer <token>`
and a JSON body `{"events": [event, …]}` (or one event object). An event:

    {"id": "3EB0C767D26A1D3F1C2B", "chat_id": "77011234567@s.whatsapp.net", "from_me": false,
     "kind": "text", "text": "How much is the oak table?", "timestamp": 1749416383,
     "sender_name": "Aigerim", "phone": "77011234567",
     "media_url": null, "media_mime": null, "media_sha256": null, "filename": null,
     "reply_to": null, "reacted_to": null, "edit_of": null, "revoke_of": null}

`from_me: true` events are messages sent from the business number (the phone or another linked
device): how the inbox learns that a manager replied from the phone. Group chats are ignored.

Sending (inbox → bridge): `POST {bridge_url}/send` with the same bearer token and
`{"chat_id": …, "text": …, "id": "<message id chosen by the inbox>"}` → `200 {"id": "<id>"}`.
The bridge must use the given id for the message (whatsmeow: SendRequestExtra.ID; Baileys:
the messageId option), so the inbox knows its own messages before their echo arrives.
Media: `GET <media_url>` with the bearer token. A manager's image or document:
`POST {bridge_url}/send-media`, multipart/form-data with the fields `chat_id`, `id`, `kind`
(`image` | `document`), `caption`, `filename` and the file as `file` → `200 {"id": "<id>"}`.
A 429 or 5xx answer is retried later (after its Retry-After, seconds or a date, when it has one);
other answers fail the message.

The bridge URL is a business's setting: it is checked against the egress rule before each
request, and the request goes through the process's pinned client (`inbox.platform.http`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpx

from inbox.conversations.events import MESSAGE_KINDS, InboundEvent, MediaRef
from inbox.conversations.transports import (
    MediaBlob,
    MediaError,
    NoReadReceipts,
    OutgoingMedia,
    PermanentSendError,
    TransientSendError,
)
from inbox.platform import egress, http
from integrations.whatsapp import payloads
from integrations.whatsapp.cloud_events import MalformedWebhook

if TYPE_CHECKING:
    from inbox.conversations.models import Channel, Chat, Message

MAX_EVENTS_PER_BODY = 1000


def _str(value: Any) -> str:
    return value if isinstance(value, str) else str(value) if isinstance(value, int) else ""


def normalise(body: Any, channel_id: int) -> tuple[list[InboundEvent], list[str]]:
    """Bridge events → InboundEvents. Returns (events, skipped reasons); raises
    MalformedWebhook when the body is not an event or a list of events. Each event is parsed on
    its own (`payloads.BridgeEvent`): a bad one is skipped, its neighbours are kept."""
    if isinstance(body, dict) and "events" in body:
        try:
            raw_events = payloads.BridgeBody.model_validate(body).events
        except payloads.ValidationError:
            raise MalformedWebhook("events must be a list") from None
    elif isinstance(body, dict):
        raw_events = [body]
    else:
        raise MalformedWebhook("body must be an object")
    if len(raw_events) > MAX_EVENTS_PER_BODY:
        raise MalformedWebhook(f"more than {MAX_EVENTS_PER_BODY} events in one body")
    events: list[InboundEvent] = []
    skipped: list[str] = []
    for raw in raw_events:
        event = payloads.parse_item(payloads.BridgeEvent, raw)
        if event is None:
            skipped.append("event that is not an object")
            continue
        if not event.id or not event.chat_id:
            skipped.append("event without id or chat_id")
            continue
        if event.chat_id.endswith("@g.us") or event.chat_id.endswith("@broadcast"):
            skipped.append("group or broadcast chat")
            continue
        events.append(_event(event, channel_id))
    return events, skipped


def _event(event: payloads.BridgeEvent, channel_id: int) -> InboundEvent:
    kind = event.kind or "text"
    extra: dict[str, Any] = {
        key: value
        for key in ("reply_to", "reacted_to", "edit_of", "revoke_of")
        if (value := getattr(event, key))
    }
    if kind not in MESSAGE_KINDS:
        extra["type"] = kind[:40]
        kind = "unsupported"
    media = None
    if event.media_url:
        media = MediaRef(
            ref=event.media_url,
            mime_type=event.media_mime,
            sha256=event.media_sha256,
            filename=event.filename,
            voice=kind == "voice",
        )
    phone = event.phone or event.chat_id.split("@")[0]
    return InboundEvent(
        channel_id=channel_id,
        provider_message_id=event.id[:255],
        chat_key=event.chat_id[:128],
        from_me=event.from_me,
        kind=kind,  # type: ignore[arg-type]
        text=event.text,
        media=media,
        provider_ts=event.timestamp,
        customer_name="" if event.from_me else event.sender_name[:200],
        customer_phone=phone if phone.isdigit() else "",
        extra=extra,
    )


class BridgeTransport(NoReadReceipts):
    assigns_message_ids = True

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.channel.bridge_token}"}

    def send_text(self, chat: Chat, text: str, *, client_message_id: str) -> str:
        body = {"chat_id": chat.customer_key, "text": text, "id": client_message_id}
        return self._post("/send", client_message_id, json=body)

    def upload_media(self, chat: Chat, media: OutgoingMedia) -> str:
        return ""  # the file travels with the send itself

    def send_media(self, chat: Chat, media: OutgoingMedia, *, client_message_id: str) -> str:
        fields = {
            "chat_id": chat.customer_key,
            "id": client_message_id,
            "kind": media.kind,
            "caption": media.caption,
            "filename": media.filename,
        }
        files = {"file": (media.filename or "file", media.content, media.mime_type)}
        return self._post(
            "/send-media", client_message_id, data=fields, files=files, read_timeout=60.0
        )

    def _post(
        self, path: str, client_message_id: str, *, read_timeout: float = 15.0, **body: Any
    ) -> str:
        url = self.channel.bridge_url.rstrip("/") + path
        try:
            egress.check(url)
        except egress.EgressRefused as exc:
            raise PermanentSendError(
                f"the bridge URL is not allowed: {exc}", code="egress"
            ) from exc
        try:
            response = http.shared(pinned=True).post(
                url, headers=self._headers(), timeout=http.timeouts(read_timeout), **body
            )
        except httpx.TimeoutException as exc:
            raise TransientSendError("the bridge did not answer in time", code="timeout") from exc
        except httpx.TransportError as exc:
            raise TransientSendError(
                "the bridge is unreachable (is the phone linked?)", code="network"
            ) from exc
        if response.status_code == 429 or response.status_code >= 500:
            raise TransientSendError(
                f"the bridge answered HTTP {response.status_code}",
                code=str(response.status_code),
                retry_after=http.retry_after(response.headers),
            )
        if response.status_code != 200:
            # The answer's body is not shown: the URL is the business's, the server may not be.
            status = response.status_code
            raise PermanentSendError(
                f"the bridge refused the message (HTTP {status})", code=str(status)
            )
        try:
            return _str(response.json().get("id")) or client_message_id
        except (ValueError, AttributeError):
            return client_message_id

    def fetch_media(self, message: Message) -> MediaBlob:
        if not message.media_ref:
            raise MediaError("the message has no media URL", permanent=True)
        try:
            egress.check(message.media_ref)
        except egress.EgressRefused as exc:
            raise MediaError(f"the media URL is not allowed: {exc}", permanent=True) from exc
        try:
            response = http.shared(pinned=True).get(
                message.media_ref, headers=self._headers(), timeout=http.timeouts(30.0)
            )
        except httpx.TransportError as exc:
            raise MediaError("the bridge is unreachable", permanent=False) from exc
        if response.status_code != 200:
            raise MediaError(
                f"media download failed with HTTP {response.status_code}",
                permanent=response.status_code in (401, 403, 404, 410),
            )
        mime = message.media_mime or response.headers.get("content-type", "")
        return MediaBlob(response.content, mime, message.media_filename)
