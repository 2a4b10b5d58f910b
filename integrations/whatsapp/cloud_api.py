"""WhatsApp Business Platform (Cloud API): sending, media upload and media download through the
Graph API. A manager's attachment goes in two calls: `POST /{phone-number-id}/media` (multipart)
gives a media id, then `POST /{phone-number-id}/messages` refers to that id.

Graph errors are mapped to what the inbox can do about them: retry (rate limits, temporary
outages, timeouts) or fail visibly for a manager (expired token, invalid recipient, outside the
24-hour window); a Retry-After the platform sends (seconds or a date) travels on the transient
error. Requests go through the process's shared client (`inbox.platform.http`): the Graph URL
is the operator's setting, not a business's, so it is not pinned. `WHATSAPP_GRAPH_URL` points
tests at the emulator.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from typing import TYPE_CHECKING, Any

import httpx
from django.conf import settings

from inbox.conversations.transports import (
    MediaBlob,
    MediaError,
    OutgoingMedia,
    OutgoingTemplate,
    PermanentSendError,
    SendError,
    TransientSendError,
)
from inbox.platform import http

if TYPE_CHECKING:
    from inbox.conversations.models import Channel, Chat, Message

log = logging.getLogger(__name__)

MAX_TEXT_LENGTH = 4096
MAX_CAPTION_LENGTH = 1024
# The platform's document types do not include text/csv: a CSV goes as plain text, its
# filename keeps the extension.
UPLOAD_TYPES = {"text/csv": "text/plain"}
# Retrying helps: throughput/pair rate limits, generic and temporary service errors.
TRANSIENT_CODES = frozenset({"130429", "131056", "131000", "131016", "131057", "4", "80007", "2"})
EXPLANATIONS = {
    "190": "The access token expired or is invalid: update the channel's token.",
    "131030": "The recipient is not in the allowed list of this test number.",
    "131047": "More than 24 hours since the customer last wrote: only templates can be sent.",
    "131026": "The message could not be delivered (number not on WhatsApp, or blocked).",
    "100": "The Graph API rejected a parameter.",
    "130429": "WhatsApp's rate limit was hit.",
    "131056": "Too many messages to this customer in a short time.",
    "132000": "The template's variables do not match it: sync the templates and try again.",
    "132001": "WhatsApp does not know this template in this language: sync the templates.",
    "132015": "The template is paused for low quality.",
    "132016": "The template is disabled.",
}


SEND_TIMEOUT = http.timeouts(10.0)
# A read mark is a courtesy: it must never hold a turn up.
READ_TIMEOUT = http.timeouts(3.0)
UPLOAD_TIMEOUT = http.timeouts(60.0)
DOWNLOAD_TIMEOUT = http.timeouts(30.0)


def _graph_error(response: httpx.Response) -> SendError:
    """Classify a Graph API error answer."""
    code, title = "", f"HTTP {response.status_code}"
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        code = str(error.get("code", ""))
        details = error.get("error_data", {})
        detail = details.get("details", "") if isinstance(details, dict) else ""
        title = str(detail or error.get("message") or title)[:500]
    title = EXPLANATIONS.get(code, title)
    retry_after = http.retry_after(response.headers)
    if code in TRANSIENT_CODES or (not code and response.status_code >= 500):
        return TransientSendError(
            title, code=code or str(response.status_code), retry_after=retry_after
        )
    if response.status_code >= 500 and code not in EXPLANATIONS:
        return TransientSendError(title, code=code, retry_after=retry_after)
    return PermanentSendError(title, code=code or str(response.status_code))


class CloudApiTransport:
    assigns_message_ids = False

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self.base = settings.WHATSAPP_GRAPH_URL

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.channel.access_token}"}

    def _recipient(self, chat: Chat) -> dict[str, Any]:
        """The phone in `to` where the chat has one; else the customer's business-scoped user
        id in `recipient`, the field Meta takes BSUIDs in (`to` is for phone numbers only:
        a BSUID there is read as a number and the message goes nowhere)."""
        address: dict[str, Any] = {"messaging_product": "whatsapp", "recipient_type": "individual"}
        if chat.customer_phone or not chat.customer_bsuid:
            address["to"] = chat.customer_phone or chat.customer_key
        else:
            address["recipient"] = chat.customer_bsuid
        return address

    def send_text(self, chat: Chat, text: str, *, client_message_id: str) -> str:
        if len(text) > MAX_TEXT_LENGTH:
            raise PermanentSendError(f"longer than {MAX_TEXT_LENGTH} characters", code="too_long")
        payload = {
            **self._recipient(chat),
            "type": "text",
            "text": {"preview_url": False, "body": text},
        }
        return self._send(payload, client_message_id)

    def send_template(
        self, chat: Chat, template: OutgoingTemplate, *, client_message_id: str
    ) -> str:
        """`"type": "template"`: the template's name, language code and the filled
        parameters; the only message WhatsApp delivers past the 24-hour window."""
        body: dict[str, Any] = {"name": template.name, "language": {"code": template.language}}
        if template.components:
            body["components"] = template.components
        payload = {**self._recipient(chat), "type": "template", "template": body}
        return self._send(payload, client_message_id)

    def upload_media(self, chat: Chat, media: OutgoingMedia) -> str:
        """`POST /{phone-number-id}/media`; the id lasts 30 days, longer than any retry."""
        mime = UPLOAD_TYPES.get(media.mime_type, media.mime_type)
        url = f"{self.base}/{self.channel.phone_number_id}/media"
        try:
            response = http.shared().post(
                url,
                data={"messaging_product": "whatsapp", "type": mime},
                files={"file": (media.filename or "file", media.content, mime)},
                headers=self._headers(),
                timeout=UPLOAD_TIMEOUT,
            )
        except httpx.TimeoutException as exc:
            raise TransientSendError(
                "the Graph API did not take the file in time", code="timeout"
            ) from exc
        except httpx.TransportError as exc:
            raise TransientSendError("the Graph API is unreachable", code="network") from exc
        if response.status_code != 200:
            raise _graph_error(response)
        try:
            return str(response.json()["id"])
        except (ValueError, KeyError, TypeError) as exc:
            raise TransientSendError(
                "unexpected answer from the Graph API", code="bad_response"
            ) from exc

    def send_media(self, chat: Chat, media: OutgoingMedia, *, client_message_id: str) -> str:
        if not media.media_ref:
            raise PermanentSendError("the file was not uploaded", code="not_uploaded")
        if len(media.caption) > MAX_CAPTION_LENGTH:
            raise PermanentSendError(
                f"a caption can be at most {MAX_CAPTION_LENGTH} characters", code="too_long"
            )
        body: dict[str, Any] = {"id": media.media_ref}
        if media.caption:
            body["caption"] = media.caption
        if media.kind == "document" and media.filename:
            body["filename"] = media.filename
        payload = {**self._recipient(chat), "type": media.kind, media.kind: body}
        return self._send(payload, client_message_id)

    def mark_read(self, chat: Chat, *, message_id: str, typing: bool) -> None:
        """`{"status": "read", "message_id": …}` on the messages endpoint marks everything up
        to that message read; `typing_indicator` adds "typing…" for up to 25 s or until our
        next message (doc/mark-message-as-read.md, doc/typing-indicators.md)."""
        payload: dict[str, Any] = {
            "messaging_product": "whatsapp",
            "status": "read",
            "message_id": message_id,
        }
        if typing:
            payload["typing_indicator"] = {"type": "text"}
        self._post_messages(payload, READ_TIMEOUT)

    def _post_messages(self, payload: dict[str, Any], timeout: httpx.Timeout) -> httpx.Response:
        """POST to the number's `/messages` (a send or a read mark); a 200 answer or the error."""
        url = f"{self.base}/{self.channel.phone_number_id}/messages"
        try:
            response = http.shared().post(
                url, json=payload, headers=self._headers(), timeout=timeout
            )
        except httpx.TimeoutException as exc:
            raise TransientSendError(
                "the Graph API did not answer in time", code="timeout"
            ) from exc
        except httpx.TransportError as exc:
            raise TransientSendError("the Graph API is unreachable", code="network") from exc
        if response.status_code != 200:
            raise _graph_error(response)
        return response

    def _send(self, payload: dict[str, Any], client_message_id: str) -> str:
        if client_message_id:
            payload["biz_opaque_callback_data"] = client_message_id
        response = self._post_messages(payload, SEND_TIMEOUT)
        try:
            return str(response.json()["messages"][0]["id"])
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise TransientSendError(
                "unexpected answer from the Graph API", code="bad_response"
            ) from exc

    def fetch_media(self, message: Message) -> MediaBlob:
        """Media id → short-lived URL → bytes (with the bearer token), checked against the
        webhook's sha256. An expired URL (404) is fetched afresh once."""
        media_id = message.media_ref
        if not media_id:
            raise MediaError("the message has no media id", permanent=True)
        with http.client(headers=self._headers(), timeout=DOWNLOAD_TIMEOUT) as client:
            for attempt in range(2):
                info = self._media_info(client, media_id)
                downloaded = self._download(client, str(info["url"]))
                if downloaded is None and attempt == 0:
                    continue  # the URL expired between the two calls: ask for a new one
                if downloaded is None:
                    raise MediaError("the media URL kept expiring", permanent=False)
                content, content_type = downloaded
                expected = message.media_sha256 or str(info.get("sha256") or "")
                if expected and not _sha256_matches(content, expected):
                    raise MediaError("downloaded media does not match its sha256", permanent=False)
                mime = str(info.get("mime_type") or content_type)
                return MediaBlob(content, mime, message.media_filename)
        raise MediaError("media could not be downloaded", permanent=False)

    def _media_info(self, client: httpx.Client, media_id: str) -> dict[str, Any]:
        try:
            response = client.get(f"{self.base}/{media_id}")
        except httpx.TransportError as exc:
            raise MediaError("the Graph API is unreachable", permanent=False) from exc
        if response.status_code != 200:
            error = _graph_error(response)
            raise MediaError(f"media lookup failed: {error.title}", permanent=error.permanent)
        info = response.json()
        if not isinstance(info, dict) or not info.get("url"):
            raise MediaError("media lookup returned no URL", permanent=False)
        return info

    def _download(self, client: httpx.Client, url: str) -> tuple[bytes, str] | None:
        """(content, content type), or None when the URL has expired (404)."""
        limit = settings.MEDIA_MAX_BYTES
        try:
            with client.stream("GET", url) as response:
                if response.status_code == 404:
                    return None
                if response.status_code != 200:
                    raise MediaError(
                        f"media download failed with HTTP {response.status_code}",
                        permanent=response.status_code in (401, 403),
                    )
                chunks, size = [], 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > limit:
                        raise MediaError(f"media larger than {limit} bytes", permanent=True)
                    chunks.append(chunk)
                return b"".join(chunks), response.headers.get("content-type", "")
        except httpx.TransportError as exc:
            raise MediaError("media download interrupted", permanent=False) from exc


def _sha256_matches(content: bytes, expected: str) -> bool:
    """The platform gives sha256 base64-encoded; accept hex as well."""
    digest = hashlib.sha256(content).digest()
    return expected.strip() in (base64.b64encode(digest).decode(), digest.hex())
