"""Evolution API v2 as a transport: sends through the gateway's REST API, fetches customers'
attachments, and checks the instance's link for the channel page.

Built from EvolutionAPI/evolution-api 2.3.6 (commit 3454bec7). Every call carries the header
`apikey: <channel.bridge_token>` (the instance's token, or the global
`AUTHENTICATION_API_KEY`) and goes to `{channel.bridge_url}/…/{channel.gateway_instance}`:

- `POST /message/sendText/{instance}` `{"number": <JID>, "text": …}` → `201` with the sent
  message (`key.id` is its WhatsApp id). Evolution chooses the id; its `send.message` webhook
  is skipped (`evolution_events`), so an id known only after the answer is enough.
- `POST /message/sendMedia/{instance}` `{"number", "mediatype": image|document, "mimetype",
  "media": <base64>, "fileName", "caption"}` → the same answer.
- `POST /chat/getBase64FromMediaMessage/{instance}` `{"message": {"key": {"id": …}}}` →
  `{"base64", "mimetype", "fileName", …}`.
- `GET /instance/connectionState/{instance}` → `{"instance": {"instanceName", "state"}}`.

Errors, as the gateway answers them: `{"status": 400, "error": "Bad Request", "response":
{"message": [...]}}`. A 400 whose message says the connection is closed (the phone's link
dropped: Baileys' "Connection Closed") is transient; a number not on WhatsApp (`"exists":
false`), 401 (wrong key) and 404 (no such instance) are permanent; 429 and 5xx are transient.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
from django.utils.translation import gettext

from inbox.conversations.transports import (
    MediaBlob,
    MediaError,
    NoReadReceipts,
    OutgoingMedia,
    PermanentSendError,
    TransientSendError,
)
from inbox.platform import egress, http
from inbox.platform.redis import get_redis

if TYPE_CHECKING:
    from inbox.conversations.models import Channel, Chat, Message

# How long an attachment that came in the webhook's body (`webhookBase64`) is kept for
# `fetch_media`: the download and the transcription run within seconds, retries within minutes.
INLINE_MEDIA_SECONDS = 3600

# What Baileys says when the socket to WhatsApp is down: the phone is offline or unlinked for
# now; the send can succeed once the gateway reconnects.
_LINK_DOWN = ("connection closed", "connection lost", "timed out", "not connected")


class EvolutionTransport(NoReadReceipts):
    assigns_message_ids = False

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def _url(self, path: str) -> str:
        instance = quote(self.channel.gateway_instance, safe="")
        return f"{self.channel.bridge_url.rstrip('/')}/{path}/{instance}"

    def _call(
        self, method: str, path: str, *, read_timeout: float = 15.0, **body: Any
    ) -> httpx.Response:
        url = self._url(path)
        try:
            egress.check(url)
        except egress.EgressRefused as exc:
            raise PermanentSendError(
                f"the Evolution API URL is not allowed: {exc}", code="egress"
            ) from exc
        try:
            return http.shared(pinned=True).request(
                method,
                url,
                headers={"apikey": self.channel.bridge_token},
                timeout=http.timeouts(read_timeout),
                **body,
            )
        except httpx.TimeoutException as exc:
            raise TransientSendError(
                "Evolution API did not answer in time", code="timeout"
            ) from exc
        except httpx.TransportError as exc:
            raise TransientSendError("Evolution API is unreachable", code="network") from exc

    def send_text(self, chat: Chat, text: str, *, client_message_id: str) -> str:
        return _sent_id(
            self._call("POST", "message/sendText", json={"number": chat.customer_key, "text": text})
        )

    def upload_media(self, chat: Chat, media: OutgoingMedia) -> str:
        return ""  # the file travels with the send itself

    def send_media(self, chat: Chat, media: OutgoingMedia, *, client_message_id: str) -> str:
        body = {
            "number": chat.customer_key,
            "mediatype": media.kind,
            "mimetype": media.mime_type,
            "media": base64.b64encode(media.content).decode(),
            "fileName": media.filename or "file",
            "caption": media.caption,
        }
        return _sent_id(self._call("POST", "message/sendMedia", json=body, read_timeout=60.0))

    def fetch_media(self, message: Message) -> MediaBlob:
        if not message.media_ref:
            raise MediaError("the message has no media", permanent=True)
        inline = _inline_media(self.channel.pk, message.media_ref)
        if inline is not None:
            return MediaBlob(inline, message.media_mime, message.media_filename)
        body = {"message": {"key": {"id": message.media_ref}}, "convertToMp4": False}
        try:
            response = self._call(
                "POST", "chat/getBase64FromMediaMessage", json=body, read_timeout=60.0
            )
        except PermanentSendError as exc:
            raise MediaError(exc.title, permanent=True) from exc
        except TransientSendError as exc:
            raise MediaError(exc.title, permanent=False) from exc
        if response.status_code not in (200, 201):
            raise MediaError(
                f"media download failed with HTTP {response.status_code}",
                permanent=response.status_code in (401, 403, 404),
            )
        try:
            answer = response.json()
            content = base64.b64decode(answer["base64"], validate=True)
        except (ValueError, KeyError, TypeError, binascii.Error) as exc:
            raise MediaError("Evolution API sent no media", permanent=False) from exc
        mime = message.media_mime or str(answer.get("mimetype") or "")
        return MediaBlob(content, mime.split(";")[0], message.media_filename)


def _inline_key(channel_id: int, message_id: str) -> str:
    return f"evolution:media:{channel_id}:{message_id}"


def keep_inline_media(channel_id: int, blobs: dict[str, str]) -> None:
    """Keep the base64 attachments of a webhook body for `fetch_media` (the webhook's side)."""
    pipe = get_redis().pipeline(transaction=False)
    for message_id, encoded in blobs.items():
        pipe.set(_inline_key(channel_id, message_id), encoded, ex=INLINE_MEDIA_SECONDS)
    pipe.execute()


def _inline_media(channel_id: int, message_id: str) -> bytes | None:
    encoded = get_redis().get(_inline_key(channel_id, message_id))
    if not isinstance(encoded, bytes):
        return None
    try:
        return base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return None  # not base64 after all: the gateway's endpoint


def _reason(response: httpx.Response) -> str:
    """The gateway's error message, lower-cased, for telling a dropped link from a bad number
    (never shown: the gateway's text may carry the number)."""
    try:
        message = response.json().get("response", {}).get("message")
    except (ValueError, AttributeError):
        return ""
    return str(message).lower()[:500]


def _sent_id(response: httpx.Response) -> str:
    status = response.status_code
    if status == 429 or status >= 500:
        raise TransientSendError(
            f"Evolution API answered HTTP {status}",
            code=str(status),
            retry_after=http.retry_after(response.headers),
        )
    if status == 400 and any(words in _reason(response) for words in _LINK_DOWN):
        raise TransientSendError(
            "the phone is not linked to Evolution API right now", code="link_down"
        )
    if status not in (200, 201):
        if status == 400 and "'exists': false" in _reason(response):
            raise PermanentSendError("the number is not on WhatsApp", code="not_on_whatsapp")
        raise PermanentSendError(
            f"Evolution API refused the message (HTTP {status})", code=str(status)
        )
    try:
        message_id = response.json()["key"]["id"]
    except (ValueError, KeyError, TypeError) as exc:
        raise PermanentSendError("Evolution API's answer has no key.id", code="no_id") from exc
    if not isinstance(message_id, str) or not message_id:
        raise PermanentSendError("Evolution API's answer has no key.id", code="no_id")
    return message_id


def check_connection(channel: Channel) -> tuple[bool, str]:
    """The channel page's "Test connection": linked when the instance's state is `open`. Its
    words are the page reader's (run in the request)."""
    try:
        response = EvolutionTransport(channel)._call("GET", "instance/connectionState")
    except (PermanentSendError, TransientSendError) as exc:
        return False, _check_failure(exc)
    if response.status_code in (401, 403):
        return False, gettext("Evolution API refused the key (give the instance token)")
    if response.status_code == 404:
        return False, gettext("Evolution API has no such instance")
    if response.status_code != 200:
        return False, gettext("Evolution API answered HTTP %(status)s") % {
            "status": response.status_code
        }
    try:
        state = str(response.json()["instance"]["state"])
    except (ValueError, KeyError, TypeError):
        return False, gettext("Evolution API's answer has no instance state")
    if state == "open":
        return True, gettext("linked (state open)")
    return False, gettext("not linked (state %(state)s)") % {"state": state[:40]}


def _check_failure(exc: PermanentSendError | TransientSendError) -> str:
    """A failed call of the test in the reader's words (the error's own title is English, for
    the send path's logs)."""
    if exc.code == "egress" and isinstance(exc.__cause__, egress.EgressRefused):
        return gettext("the Evolution API URL is not allowed: %(why)s") % {
            "why": egress.explain(exc.__cause__)
        }
    if exc.code == "timeout":
        return gettext("Evolution API did not answer in time")
    if exc.code == "network":
        return gettext("Evolution API is unreachable")
    return exc.title
