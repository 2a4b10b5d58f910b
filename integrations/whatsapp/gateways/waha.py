"""WAHA (WhatsApp HTTP API, devlikeapro/waha) as a transport: a session of the business's own
number, linked as a device, run next to the inbox (docs/bridges.md).

The channel: `bridge_url` is WAHA's base URL, `bridge_token` its API key (`X-Api-Key`, WAHA's
`WHATSAPP_API_KEY`) and the webhook's HMAC key (the session config's `hmac.key`), and
`gateway_instance` the session's name. Sending: `POST {url}/api/sendText` with `{session,
chatId, text}`, `/api/sendImage` and `/api/sendFile` with the file as base64; the answer is the
sent message, whose id is recorded (`waha_events.short_id`: the same id the echo and the acks
carry), so the echo of our own message is never taken for a manager on the phone. WAHA does
not let the caller choose the id, and posts the echo while the send's answer is still on its
way: so an engine that marks API sends (`source: "api"`) has its echo dropped at the webhook,
and on the others a send marks its chat "sending" in Redis until the returned id is
remembered as ours (`outbound.remember_bot_sent`); the webhook holds a `fromMe` event of a
chat with a send in flight until then (`wait_for_sends`), so the id is known before the echo
is queued.

Errors: 429 and 5xx are transient (retried after Retry-After), as are a timeout and an
unreachable WAHA; 422 "session status is not as expected" is transient while the session is
STARTING (it reconnects) and permanent in any other state (a QR code to scan, stopped,
failed: a person must act); 401/403/404 and other 4xx are permanent.

Webhook bodies are read by `waha_events`; a `session.status` that says the phone link is gone
raises the silent-number alert at once (`session_changed`).
"""

from __future__ import annotations

import base64
import contextlib
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

import httpx
import redis
from django.utils import translation
from django.utils.translation import gettext

from inbox.conversations import outbound
from inbox.conversations.transports import (
    MediaBlob,
    MediaError,
    OutgoingMedia,
    PermanentSendError,
    TransientSendError,
)
from inbox.platform import egress, http
from inbox.platform.redis import get_redis
from inbox.upkeep import alerts
from integrations.whatsapp.gateways.waha_events import UNLINKED_STATES, short_id

if TYPE_CHECKING:
    from inbox.conversations.models import Channel, Chat, Message

log = logging.getLogger(__name__)

# A send's "in flight" mark outlives the longest send (60 s read timeout for media) only a bit.
SENDING_TTL_SECONDS = 90
ECHO_WAIT_SECONDS = 20.0


def _sending_key(channel_id: int, chat_key: str) -> str:
    return f"waha:sending:{channel_id}:{chat_key}"


@contextlib.contextmanager
def _sending(channel_id: int, chat_key: str) -> Iterator[None]:
    """Mark a send to the chat in flight (a count: two sends may overlap)."""
    key = _sending_key(channel_id, chat_key)
    client = get_redis()
    try:
        pipe = client.pipeline()
        pipe.incr(key)
        pipe.expire(key, SENDING_TTL_SECONDS)
        pipe.execute()
    except redis.RedisError:
        log.warning("waha.sending_mark_failed", extra={"channel_id": channel_id})
    try:
        yield
    finally:
        with contextlib.suppress(redis.RedisError):
            if client.decr(key) <= 0:
                client.delete(key)


def wait_for_sends(channel_id: int, chat_key: str, timeout: float = ECHO_WAIT_SECONDS) -> None:
    """Return once no send to the chat is in flight (or after `timeout`): a `fromMe` event
    that arrived meanwhile may be the echo of that send, whose id is known only after."""
    key = _sending_key(channel_id, chat_key)
    deadline = time.monotonic() + timeout
    try:
        while get_redis().exists(key) and time.monotonic() < deadline:
            time.sleep(0.05)
    except redis.RedisError:
        return


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def sent_id(answer: dict[str, Any]) -> str:
    """The sent message's id in the send call's answer, per engine: GOWS and NOWEB's newer
    builds `{"id": "true_<chat>_<ID>", "_data": …}`, WEBJS `{"id": {"_serialized": …}, …}`,
    NOWEB's Baileys message `{"key": {"id": "<ID>", …}, …}`."""
    found = short_id(answer.get("id"))
    if not found and isinstance(answer.get("key"), dict):
        found = short_id(answer["key"].get("id"))
    return found


class WahaTransport:
    assigns_message_ids = False

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    @property
    def session(self) -> str:
        return self.channel.gateway_instance or "default"

    def _headers(self) -> dict[str, str]:
        return {"X-Api-Key": self.channel.bridge_token}

    def _url(self, path: str) -> str:
        return self.channel.bridge_url.rstrip("/") + path

    def send_text(self, chat: Chat, text: str, *, client_message_id: str) -> str:
        body = {"session": self.session, "chatId": chat.customer_key, "text": text}
        return self._send(chat, "/api/sendText", body)

    def upload_media(self, chat: Chat, media: OutgoingMedia) -> str:
        return ""  # the file travels with the send itself

    def send_media(self, chat: Chat, media: OutgoingMedia, *, client_message_id: str) -> str:
        path = "/api/sendImage" if media.kind == "image" else "/api/sendFile"
        body = {
            "session": self.session,
            "chatId": chat.customer_key,
            "caption": media.caption,
            "file": {
                "mimetype": media.mime_type,
                "filename": media.filename or "file",
                "data": base64.b64encode(media.content).decode(),
            },
        }
        return self._send(chat, path, body, read_timeout=60.0)

    def _send(
        self, chat: Chat, path: str, body: dict[str, Any], *, read_timeout: float = 15.0
    ) -> str:
        with _sending(self.channel.pk, chat.customer_key):
            message_id = self._post(path, body, read_timeout)
            if message_id:
                # Ours, whoever wrote it (the bot or a manager in the inbox): known before the
                # "sending" mark goes, so the echo held at the webhook is recognised.
                with contextlib.suppress(redis.RedisError):
                    outbound.remember_bot_sent(chat.pk, message_id)
            return message_id

    def _post(self, path: str, body: dict[str, Any], read_timeout: float) -> str:
        url = self._url(path)
        try:
            egress.check(url)
        except egress.EgressRefused as exc:
            raise PermanentSendError(f"the WAHA URL is not allowed: {exc}", code="egress") from exc
        try:
            response = http.shared(pinned=True).post(
                url, json=body, headers=self._headers(), timeout=http.timeouts(read_timeout)
            )
        except httpx.TimeoutException as exc:
            raise TransientSendError("WAHA did not answer in time", code="timeout") from exc
        except httpx.TransportError as exc:
            raise TransientSendError("WAHA is unreachable", code="network") from exc
        status = response.status_code
        if status == 429 or status >= 500:
            raise TransientSendError(
                f"WAHA answered HTTP {status}",
                code=str(status),
                retry_after=http.retry_after(response.headers),
            )
        if status == 422:
            state = str(_json(response).get("status") or "")[:40]
            if state == "STARTING":
                raise TransientSendError("the WAHA session is reconnecting", code="starting")
            raise PermanentSendError(
                f"the WAHA session is not working ({state or 'unknown state'}): "
                "check the phone and the session in WAHA",
                code=f"session_{state.lower()}" if state else "422",
            )
        if status not in (200, 201):
            # The answer's body is not shown: the URL is the business's, the server may not be.
            raise PermanentSendError(f"WAHA refused the message (HTTP {status})", code=str(status))
        message_id = sent_id(_json(response))
        if not message_id:
            log.warning("waha.send_without_id", extra={"channel_id": self.channel.pk})
        return message_id

    def mark_read(self, chat: Chat, *, message_id: str, typing: bool) -> None:
        """`POST /api/sendSeen` (the chat's unread messages read), then `POST /api/startTyping`;
        WhatsApp drops "typing…" by itself after about 25 s or with our next message."""
        body = {"session": self.session, "chatId": chat.customer_key}
        self._courtesy("/api/sendSeen", body)
        if typing:
            self._courtesy("/api/startTyping", body)

    def _courtesy(self, path: str, body: dict[str, Any]) -> None:
        url = self._url(path)
        egress.check(url)
        response = http.shared(pinned=True).post(
            url, json=body, headers=self._headers(), timeout=http.timeouts(3.0)
        )
        if response.status_code not in (200, 201):
            raise TransientSendError(f"WAHA answered HTTP {response.status_code}", code=path)

    def fetch_media(self, message: Message) -> MediaBlob:
        url = message.media_ref
        if not url:
            raise MediaError("the message has no media URL", permanent=True)
        try:
            egress.check(url)
        except egress.EgressRefused as exc:
            raise MediaError(f"the media URL is not allowed: {exc}", permanent=True) from exc
        # The API key goes only to WAHA itself, not to a storage URL (S3) the body names.
        headers = self._headers() if _same_origin(url, self.channel.bridge_url) else {}
        try:
            response = http.shared(pinned=True).get(
                url, headers=headers, timeout=http.timeouts(30.0)
            )
        except httpx.TransportError as exc:
            raise MediaError("WAHA is unreachable", permanent=False) from exc
        if response.status_code != 200:
            raise MediaError(
                f"media download failed with HTTP {response.status_code}",
                permanent=response.status_code in (401, 403, 404, 410),
            )
        mime = message.media_mime or response.headers.get("content-type", "")
        return MediaBlob(response.content, mime, message.media_filename)


def _same_origin(url: str, base: str) -> bool:
    a, b = urlsplit(url), urlsplit(base)
    return (a.scheme, a.hostname, a.port) == (b.scheme, b.hostname, b.port)


def check_connection(channel: Channel) -> tuple[bool, str]:
    """The channel page's "Test connection": `GET {url}/api/sessions/{session}`; linked when
    the session is WORKING."""
    session = channel.gateway_instance or "default"
    url = channel.bridge_url.rstrip("/") + "/api/sessions/" + quote(session, safe="")
    try:
        egress.check(url)
    except egress.EgressRefused as exc:
        return False, gettext("the WAHA URL is not allowed: %(why)s") % {"why": egress.explain(exc)}
    try:
        response = http.shared(pinned=True).get(
            url, headers={"X-Api-Key": channel.bridge_token}, timeout=http.timeouts(10.0)
        )
    except httpx.TransportError:
        return False, gettext("WAHA is unreachable")
    if response.status_code in (401, 403):
        return False, gettext("WAHA refused the API key")
    if response.status_code == 404:
        return False, gettext("WAHA has no session “%(session)s”") % {"session": session}
    if response.status_code != 200:
        return False, gettext("WAHA answered HTTP %(status)s") % {"status": response.status_code}
    state = str(_json(response).get("status") or "unknown")[:40]
    if state == "WORKING":
        return True, gettext("session “%(session)s” is WORKING") % {"session": session}
    return False, gettext("session “%(session)s” is %(state)s: %(advice)s") % {
        "session": session,
        "state": state,
        "advice": _advice(state),
    }


def _advice(state: str) -> str:
    """What to do about a session that is not WORKING: in the page reader's language for the
    test, in English for the alert a worker raises (no language is active there)."""
    if state == "SCAN_QR_CODE":
        return gettext("link the phone again (scan the QR code in WAHA's dashboard)")
    if state == "STARTING":
        return gettext("WAHA is connecting, try again in a minute")
    return gettext("start the session in WAHA")


def session_changed(channel_id: int, state: str) -> None:
    """A `session.status` from WAHA: a lost link raises the silent-number alert at once, a
    WORKING session clears it."""
    if state in UNLINKED_STATES:
        log.warning("waha.session_unlinked", extra={"channel_id": channel_id, "state": state})
        with translation.override("en"):  # an alert is English, whoever's request this is
            advice = _advice(state)
        alerts.gateway_link_lost(channel_id, f"the WAHA session is {state}: {advice}")
    elif state == "WORKING":
        alerts.gateway_link_restored(channel_id)
