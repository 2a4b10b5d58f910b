"""An emulator of the WhatsApp Cloud API (Graph API) over real HTTP.

It answers the calls the inbox makes (send a message, upload, look up and download media) the
way the platform does, including its error envelopes (an upload of a type or size the platform
refuses answers error 131053, a bad token 190), and plays the platform's side of the webhook:
signed deliveries of message and status events to the app, with duplicates, bursts, shuffled
order and redelivery on non-200 answers.

    with GraphApiEmulator(app_secret="s") as graph:
        graph.register_number("106540352242922", token="t")
        settings.WHATSAPP_GRAPH_URL = graph.graph_url
        graph.webhook_url = "http://127.0.0.1:8000/webhooks/whatsapp/"
        graph.deliver(envelope("106540352242922", messages=[text_message(...)]))
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import json
import random
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from tests.emulators.graph_templates import TemplateBook, status_update_body
from tests.emulators.http import EmulatorServer, parse_multipart

VERSION = "v24.0"
_ids = itertools.count(1)


def new_wamid() -> str:
    raw = f"emulated-{next(_ids)}-{random.getrandbits(48):012x}".encode()
    return "wamid." + base64.b64encode(raw).decode()


# --- payload builders: shapes exactly as the platform documents them -------------------------


def envelope(
    phone_number_id: str,
    *,
    messages: list[dict[str, Any]] | None = None,
    statuses: list[dict[str, Any]] | None = None,
    echoes: list[dict[str, Any]] | None = None,
    contacts: list[dict[str, Any]] | None = None,
    display_phone_number: str = "15550783881",
) -> dict[str, Any]:
    value: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "metadata": {
            "display_phone_number": display_phone_number,
            "phone_number_id": phone_number_id,
        },
    }
    if contacts is not None:
        value["contacts"] = contacts
    if messages is not None:
        value["messages"] = messages
    if statuses is not None:
        value["statuses"] = statuses
    field_name = "messages"
    if echoes is not None:
        value["message_echoes"] = echoes
        field_name = "smb_message_echoes"
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": "102290129340398", "changes": [{"value": value, "field": field_name}]}],
    }


def contact(
    wa_id: str, name: str = "Aigerim", user_id: str = "US.13491208655302741918", *,
    username: str = "",
) -> dict[str, Any]:  # fmt: skip
    """`contacts[]` entry. From 2026 it carries the business-scoped user id (`user_id`); for a
    customer who uses a username, `profile.username` and no `wa_id` (`wa_id=""` here)."""
    profile = {"name": name, **({"username": username} if username else {})}
    found: dict[str, Any] = {"profile": profile, "user_id": user_id}
    if wa_id:
        found["wa_id"] = wa_id
    return found


def text_message(
    wa_id: str, body: str, *, wamid: str | None = None, ts: int | None = None,
    user_id: str = "",
) -> dict[str, Any]:  # fmt: skip
    """An inbound text; `wa_id=""` with `user_id` is a customer without a phone (only
    `from_user_id`, their BSUID)."""
    message: dict[str, Any] = {
        "id": wamid or new_wamid(),
        "timestamp": str(ts if ts is not None else int(time.time())),
        "type": "text",
        "text": {"body": body},
    }
    if wa_id:
        message["from"] = wa_id
    if user_id:
        message["from_user_id"] = user_id
    return message


def media_message(
    wa_id: str, kind: str, media_id: str, *, sha256: str = "", mime: str = "", voice: bool = False,
    caption: str = "", filename: str = "", wamid: str | None = None, ts: int | None = None,
) -> dict[str, Any]:  # fmt: skip
    obj: dict[str, Any] = {"mime_type": mime, "sha256": sha256, "id": media_id}
    if kind == "audio":
        obj["voice"] = voice
    if caption:
        obj["caption"] = caption
    if filename:
        obj["filename"] = filename
    return {
        "from": wa_id,
        "id": wamid or new_wamid(),
        "timestamp": str(ts if ts is not None else int(time.time())),
        "type": kind,
        kind: obj,
    }


def echo_message(
    business_number: str, wa_id: str, body: str, *, wamid: str | None = None
) -> dict[str, Any]:
    return {
        "from": business_number,
        "to": wa_id,
        "id": wamid or new_wamid(),
        "timestamp": str(int(time.time())),
        "type": "text",
        "text": {"body": body},
    }


def status_update(
    wamid: str, status: str, recipient: str, *, error_code: int | None = None, ts: int | None = None,
    user_id: str = "",
) -> dict[str, Any]:  # fmt: skip
    """A `statuses[]` entry; `recipient=""` with `user_id` is one for a customer without a
    phone (`recipient_user_id` only)."""
    update: dict[str, Any] = {
        "id": wamid,
        "status": status,
        "timestamp": str(ts if ts is not None else int(time.time())),
    }
    if recipient:
        update["recipient_id"] = recipient
    if user_id:
        update["recipient_user_id"] = user_id
    if status in ("sent", "delivered"):
        update["pricing"] = {
            "billable": True,
            "pricing_model": "PMP",
            "type": "regular",
            "category": "service",
        }
    if error_code is not None:
        update["errors"] = [error_object(error_code)]
    return update


# code → (title, error_data.details), as the platform words them in status webhooks and error
# envelopes (Meta's error-code page; pywa's tests; the docs' verbatim failed status).
PLATFORM_ERRORS: dict[int, tuple[str, str]] = {
    131047: ("Re-engagement message", "Message failed to send because more than 24 hours have "
             "passed since the customer last replied to this number."),
    131026: ("Message undeliverable", "Message Undeliverable."),
    131049: ("This message was not delivered to maintain healthy ecosystem engagement.",
             "In order to maintain a healthy ecosystem engagement, the message failed to be "
             "delivered."),
    131050: ("Unable to deliver the message. This recipient has chosen to stop receiving "
             "marketing messages on WhatsApp from your business.",
             "The user has stopped marketing messages from this business."),
    131051: ("Message type unknown", "Unsupported message type."),
    131052: ("Media download error", "Unable to download the media sent by the user."),
    131053: ("Media upload error", "Unable to upload the media used in the message."),
    130429: ("Rate limit hit", "Cloud API message throughput has been reached."),
    131056: ("(Business Account, Consumer Account) pair rate limit hit",
             "Too many messages sent from the sender phone number to the same recipient phone "
             "number in a short period of time."),
    131000: ("Something went wrong", "Message failed to send due to an unknown error."),
    131030: ("Recipient phone number not in allowed list",
             "Recipient phone number not in allowed list."),
    190: ("Error validating access token: Session has expired", ""),
    100: ("Invalid parameter", ""),
}  # fmt: skip
ERROR_TITLES = {code: title for code, (title, _details) in PLATFORM_ERRORS.items()}


def error_object(code: int) -> dict[str, Any]:
    """One `errors[]` entry of a failed status, in the platform's shape."""
    title, details = PLATFORM_ERRORS.get(code, ("Error", "An error occurred."))
    return {
        "code": code,
        "title": title,
        "message": title,
        "error_data": {"details": details or title},
        "href": "https://developers.facebook.com/docs/whatsapp/cloud-api/support/error-codes/",
    }


HTTP_STATUS_FOR = {
    190: 401,
    131030: 400,
    100: 400,
    130429: 400,
    131056: 400,
    131000: 500,
    131047: 400,
}


def sign(app_secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest()


# --- the emulator -----------------------------------------------------------------------------


@dataclass
class SentMessage:
    phone_number_id: str
    to: str
    text: str
    wamid: str
    callback_data: str
    at: float
    type: str = "text"
    media_id: str = ""
    caption: str = ""
    filename: str = ""
    # The business-scoped user id of a send addressed by `recipient` (no phone: `to` is "").
    recipient: str = ""


# A business-scoped user id: ISO 3166 country code, a dot, then letters and digits.
BSUID = re.compile(r"^[A-Z]{2}\.(?:ENT\.)?[A-Za-z0-9]{1,128}$")


@dataclass
class ReadMark:
    """A `{"status": "read", …}` call: the customer's messages marked read, with "typing…"
    when `typing` (doc/mark-message-as-read.md, doc/typing-indicators.md)."""

    phone_number_id: str
    message_id: str
    typing: bool
    at: float


@dataclass
class Upload:
    phone_number_id: str
    media_id: str
    content: bytes
    mime_type: str
    filename: str


# What the platform takes on `POST /{phone-number-id}/media`, with its size limits
# (doc/media.md: "Supported media types").
UPLOAD_LIMITS = {
    "image/jpeg": 5 * 1024 * 1024,
    "image/png": 5 * 1024 * 1024,
    "image/webp": 500 * 1024,  # stickers
    "text/plain": 100 * 1024 * 1024,
    "application/pdf": 100 * 1024 * 1024,
    "application/msword": 100 * 1024 * 1024,
    "application/vnd.ms-excel": 100 * 1024 * 1024,
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": 100 * 1024 * 1024,
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": 100 * 1024 * 1024,
    "audio/ogg": 16 * 1024 * 1024,
    "video/mp4": 16 * 1024 * 1024,
}
SENDABLE_AS = {"image": {"image/jpeg", "image/png"}}


@dataclass
class Media:
    content: bytes
    mime_type: str
    sha256_b64: str


@dataclass
class _Failure:
    code: int
    http_status: int
    remaining: int
    retry_after: str = ""  # the Retry-After header of the answer, when not ""


@dataclass
class GraphApiEmulator:
    app_secret: str = "emulator-app-secret"
    webhook_url: str = ""
    # Emit sent → delivered → read status webhooks after each send.
    auto_statuses: bool = False
    media_url_ttl: float = 300.0
    sent: list[SentMessage] = field(default_factory=list)
    uploads: list[Upload] = field(default_factory=list)
    reads: list[ReadMark] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    send_times: list[float] = field(default_factory=list)  # time.time() of each send request

    def __post_init__(self) -> None:
        self._tokens: dict[str, str] = {}
        self._media: dict[str, Media] = {}
        self._downloads: dict[str, tuple[str, float]] = {}
        self._send_failures: list[_Failure] = []
        self._upload_failures: list[_Failure] = []
        self._read_failures: list[_Failure] = []
        self._async_failures: dict[str, int] = {}
        self._reused_id = ""
        self.templates = TemplateBook()  # graph_templates.py
        self._lock = threading.Lock()
        self._server: EmulatorServer | None = None
        self._threads: list[threading.Thread] = []
        self.base_url = ""

    # lifecycle
    def __enter__(self) -> GraphApiEmulator:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        emulator = self

        class Handler(_Handler):
            pass

        Handler.emulator = emulator
        self._server = EmulatorServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        for thread in self._threads:
            thread.join(timeout=10)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def graph_url(self) -> str:
        return f"{self.base_url}/{VERSION}"

    # configuration
    def reset(self) -> None:
        """Forget sends and scripted failures (between tests sharing one emulator)."""
        with self._lock:
            self.sent.clear()
            self.templates.sends.clear()
            self.uploads.clear()
            self.reads.clear()
            self._read_failures.clear()
            self.requests.clear()
            self.send_times.clear()
            self._send_failures.clear()
            self._upload_failures.clear()
            self._async_failures.clear()
            self._reused_id = ""
        self.auto_statuses = False

    def register_number(self, phone_number_id: str, token: str, *, waba_id: str = "") -> None:
        self._tokens[phone_number_id] = token
        if waba_id:
            self.templates.link(waba_id, phone_number_id)

    def template_status(self, waba_id: str, name: str, language: str, event: str,
                        reason: str = "NONE") -> int:  # fmt: skip
        """Change a template's status and post Meta's `message_template_status_update`."""
        template = self.templates.set_status(waba_id, name, language, event)
        return self.deliver(status_update_body(waba_id, template, event, reason))

    def add_media(self, media_id: str, content: bytes, mime_type: str) -> str:
        """Store an attachment; returns its sha256 as the webhook carries it (base64)."""
        digest = base64.b64encode(hashlib.sha256(content).digest()).decode()
        self._media[media_id] = Media(content, mime_type, digest)
        return digest

    def fail_next_sends(
        self, code: int, times: int = 1, http_status: int | None = None, retry_after: str = ""
    ) -> None:
        """The next `times` sends answer with this Graph error code (and a Retry-After header,
        seconds or an HTTP date, when `retry_after` is given)."""
        with self._lock:
            self._send_failures.append(
                _Failure(code, http_status or HTTP_STATUS_FOR.get(code, 400), times, retry_after)
            )

    def fail_next_uploads(self, code: int, times: int = 1, http_status: int | None = None) -> None:
        """The next `times` media uploads answer with this Graph error code."""
        with self._lock:
            self._upload_failures.append(
                _Failure(code, http_status or HTTP_STATUS_FOR.get(code, 400), times)
            )

    def fail_next_reads(self, code: int, times: int = 1, http_status: int | None = None) -> None:
        """The next `times` read marks answer with this Graph error code."""
        with self._lock:
            self._read_failures.append(
                _Failure(code, http_status or HTTP_STATUS_FOR.get(code, 400), times)
            )

    def reads_for(self, phone_number_id: str) -> list[ReadMark]:
        with self._lock:
            return [r for r in self.reads if r.phone_number_id == phone_number_id]

    def reuse_message_id(self, wamid: str) -> None:
        """Accepted sends answer with this id from now on (a provider that hands out an id it
        gave before)."""
        with self._lock:
            self._reused_id = wamid

    def fail_async(self, recipient: str, code: int = 131047) -> None:
        """Sends to `recipient` are accepted (200 + wamid), then a `failed` status follows
        (`sent`, then `failed` with `code` in the platform's error shape)."""
        self._async_failures[recipient] = code

    def stop_failing(self, recipient: str) -> None:
        """Sends to `recipient` are delivered again (after `fail_async`)."""
        self._async_failures.pop(recipient, None)

    def sent_to(self, recipient: str) -> list[SentMessage]:
        with self._lock:
            return [
                m
                for m in self.sent
                if (m.to and m.to.lstrip("+") == recipient.lstrip("+"))
                or (m.recipient and m.recipient == recipient)
            ]

    # the platform's side of the webhook
    def deliver(self, body: dict[str, Any], *, retries: int = 3, backoff: float = 0.2) -> int:
        """POST one signed webhook; redeliver (like the platform) while the answer is not 200."""
        raw = json.dumps(body, ensure_ascii=False).encode()
        status = 0
        for attempt in range(retries + 1):
            try:
                response = httpx.post(
                    self.webhook_url,
                    content=raw,
                    headers={
                        "Content-Type": "application/json",
                        "X-Hub-Signature-256": sign(self.app_secret, raw),
                    },
                    timeout=10,
                )
                status = response.status_code
            except httpx.HTTPError:
                status = 0
            if status == 200:
                return status
            if attempt < retries:
                time.sleep(backoff * (2**attempt))
        return status

    def deliver_many(self, bodies: list[dict[str, Any]], *, copies: int = 1, shuffle: bool = False,
                     concurrency: int = 1) -> list[int]:  # fmt: skip
        """Deliver each body `copies` times, optionally shuffled, from several clients at once."""
        work = [body for body in bodies for _ in range(copies)]
        if shuffle:
            random.shuffle(work)
        results: list[int] = []
        lock = threading.Lock()
        queue: Iterator[dict[str, Any]] = iter(work)

        def client() -> None:
            while True:
                with lock:
                    body = next(queue, None)
                if body is None:
                    return
                status = self.deliver(body)
                with lock:
                    results.append(status)

        threads = [threading.Thread(target=client) for _ in range(concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return results

    def _after_send(self, message: SentMessage) -> None:
        if not self.webhook_url:
            return
        recipient = message.to.lstrip("+") or message.recipient
        # To a customer without a phone, the statuses carry only their BSUID.
        phone, user_id = (recipient, "") if message.to else ("", message.recipient)
        if recipient in self._async_failures:
            updates = [
                status_update(message.wamid, "sent", phone, user_id=user_id),
                status_update(
                    message.wamid, "failed", phone, user_id=user_id,
                    error_code=self._async_failures[recipient],
                ),
            ]  # fmt: skip
        elif self.auto_statuses:
            updates = [
                status_update(message.wamid, s, phone, user_id=user_id)
                for s in ("sent", "delivered", "read")
            ]
        else:
            return

        def emit() -> None:
            for update in updates:
                self.deliver(envelope(message.phone_number_id, statuses=[update]))

        thread = threading.Thread(target=emit, daemon=True)
        self._threads.append(thread)
        thread.start()

    # request handling (called from the server thread)
    def _authorised(self, handler: BaseHTTPRequestHandler, phone_number_id: str | None) -> bool:
        auth = handler.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip()
        if phone_number_id is not None:
            return bool(token) and self._tokens.get(phone_number_id) == token
        return bool(token) and token in self._tokens.values()

    def handle_send(
        self, handler: _Handler, phone_number_id: str, body: dict[str, Any]
    ) -> tuple[int, Any] | tuple[int, Any, dict[str, str]]:
        if "status" not in body:  # a read mark is no message send
            with self._lock:
                self.send_times.append(time.time())
        if phone_number_id not in self._tokens:
            return 400, _error(
                100, f"Unsupported post request. Object with ID '{phone_number_id}' does not exist"
            )
        if not self._authorised(handler, phone_number_id):
            return 401, _error(190, ERROR_TITLES[190], subcode=463)
        if "status" in body:
            return self.handle_read(phone_number_id, body)
        failure = self._next_failure(self._send_failures)
        if failure is not None:
            headers = {"Retry-After": failure.retry_after} if failure.retry_after else {}
            return (
                failure.http_status,
                _error(failure.code, ERROR_TITLES.get(failure.code, "Error")),
                headers,
            )
        kind = body.get("type")
        if body.get("messaging_product") != "whatsapp" or kind not in (
            "text", "image", "document", "template"
        ):  # fmt: skip
            return 400, _error(100, "Invalid parameter")
        to = str(body.get("to", ""))
        user_id = "" if to else str(body.get("recipient", ""))
        # `to` takes phone numbers, `recipient` BSUIDs (Meta's business-scoped user ids doc).
        # The real API answers 200 to a BSUID in `to` and the message goes nowhere; the
        # emulator refuses it so that mistake shows.
        if BSUID.match(to) or (not to and not BSUID.match(user_id)):
            return 400, _error(100, "Invalid parameter: to / recipient")
        media_id = caption = filename = text = ""
        if kind == "template":
            checked = self.templates.check_send(phone_number_id, body)
            if isinstance(checked, tuple):
                return 400, _error(checked[0], checked[1])
            text = checked
        elif kind == "text":
            text = body.get("text", {}).get("body", "")
            if not isinstance(text, str) or not text or len(text) > 4096:
                return 400, _error(100, "Param text['body'] is invalid")
        else:
            media = body.get(kind)
            if not isinstance(media, dict) or "link" in media:
                return 400, _error(100, f"Param {kind} is invalid")
            media_id = str(media.get("id", ""))
            stored = self._media.get(media_id)
            if stored is None or not any(
                u.media_id == media_id for u in self.uploads_for(phone_number_id)
            ):
                return 400, _error(100, f"Param {kind}['id'] is not a valid media id")
            if kind in SENDABLE_AS and stored.mime_type not in SENDABLE_AS[kind]:
                return 400, _error(
                    131053, f"Media type {stored.mime_type} cannot be sent as {kind}"
                )
            caption = str(media.get("caption", ""))
            if len(caption) > 1024:
                return 400, _error(100, f"Param {kind}['caption'] is too long")
            filename = str(media.get("filename", ""))
        message = SentMessage(
            phone_number_id,
            to,
            text,
            self._reused_id or new_wamid(),
            str(body.get("biz_opaque_callback_data", "")),
            time.time(),
            type=str(kind),
            media_id=media_id,
            caption=caption,
            filename=filename,
            recipient=user_id,
        )
        with self._lock:
            self.sent.append(message)
        self._after_send(message)
        contact = (
            {"input": to, "wa_id": to.lstrip("+")} if to else {"input": user_id, "user_id": user_id}
        )
        return 200, {
            "messaging_product": "whatsapp",
            "contacts": [contact],
            "messages": [{"id": message.wamid}],
        }

    def handle_read(self, phone_number_id: str, body: dict[str, Any]) -> tuple[int, Any]:
        """`{"messaging_product": "whatsapp", "status": "read", "message_id": …}`, optionally
        with `"typing_indicator": {"type": "text"}`; anything else is a 400 like Meta's."""
        if body.get("messaging_product") != "whatsapp":
            return 400, _error(100, "Param messaging_product is required")
        if body.get("status") != "read":
            return 400, _error(100, "Param status must be 'read'")
        message_id = body.get("message_id")
        if not isinstance(message_id, str) or not message_id.startswith("wamid."):
            return 400, _error(100, "Param message_id is not a valid message id")
        extra = set(body) - {"messaging_product", "status", "message_id", "typing_indicator"}
        if extra:
            return 400, _error(100, f"Unexpected key(s) {sorted(extra)} in a read request")
        typing = "typing_indicator" in body
        if typing and body["typing_indicator"] != {"type": "text"}:
            return 400, _error(100, "Param typing_indicator['type'] must be 'text'")
        failure = self._next_failure(self._read_failures)
        if failure is not None:
            return failure.http_status, _error(
                failure.code, ERROR_TITLES.get(failure.code, "Error")
            )
        with self._lock:
            self.reads.append(ReadMark(phone_number_id, message_id, typing, time.time()))
        return 200, {"success": True}

    def _next_failure(self, failures: list[_Failure]) -> _Failure | None:
        with self._lock:
            failure = failures[0] if failures else None
            if failure is not None:
                failure.remaining -= 1
                if failure.remaining <= 0:
                    failures.pop(0)
        return failure

    def uploads_for(self, phone_number_id: str) -> list[Upload]:
        with self._lock:
            return [u for u in self.uploads if u.phone_number_id == phone_number_id]

    def handle_upload(
        self, handler: _Handler, phone_number_id: str, content_type: str, raw: bytes
    ) -> tuple[int, Any]:
        """`POST /{phone-number-id}/media`: multipart `messaging_product`, `type`, `file`."""
        if phone_number_id not in self._tokens:
            return 400, _error(
                100, f"Unsupported post request. Object with ID '{phone_number_id}' does not exist"
            )
        if not self._authorised(handler, phone_number_id):
            return 401, _error(190, ERROR_TITLES[190], subcode=463)
        failure = self._next_failure(self._upload_failures)
        if failure is not None:
            return failure.http_status, _error(
                failure.code, ERROR_TITLES.get(failure.code, "Error")
            )
        try:
            form = parse_multipart(content_type, raw)
        except ValueError:
            return 400, _error(100, "Param file must be a file sent as multipart/form-data")
        if "messaging_product" not in form or form["messaging_product"].value != b"whatsapp":
            return 400, _error(100, "The parameter messaging_product is required.")
        upload = form.get("file")
        if upload is None or upload.filename is None or not upload.value:
            return 400, _error(100, "The parameter file is required.")
        mime = form["type"].value.decode() if "type" in form else upload.content_type
        limit = UPLOAD_LIMITS.get(mime)
        if limit is None:
            return 400, _error(131053, f"Unsupported file type: {mime}")
        if len(upload.value) > limit:
            return 400, _error(
                131053,
                f"Media file size too big. Max file size we currently support: "
                f"{limit // (1024 * 1024) or 0.5}MB. Please choose a smaller file.",
            )
        media_id = f"{random.getrandbits(52)}"
        self.add_media(media_id, upload.value, mime)
        with self._lock:
            self.uploads.append(
                Upload(phone_number_id, media_id, upload.value, mime, upload.filename)
            )
        return 200, {"id": media_id}

    def handle_media_info(self, handler: _Handler, media_id: str) -> tuple[int, Any]:
        if not self._authorised(handler, None):
            return 401, _error(190, ERROR_TITLES[190], subcode=463)
        media = self._media.get(media_id)
        if media is None:
            return 400, _error(
                100, f"Unsupported get request. Object with ID '{media_id}' does not exist"
            )
        token = f"{random.getrandbits(64):016x}"
        self._downloads[token] = (media_id, time.monotonic() + self.media_url_ttl)
        return 200, {
            "messaging_product": "whatsapp",
            "url": f"{self.base_url}/whatsapp_business/attachments/?mid={token}",
            "mime_type": media.mime_type,
            "sha256": media.sha256_b64,
            "file_size": str(len(media.content)),
            "id": media_id,
        }

    def handle_templates(self, handler: _Handler, waba_id: str) -> tuple[int, Any]:
        if not self._authorised(handler, None):
            return 401, _error(190, ERROR_TITLES[190], subcode=463)
        if not self.templates.has_waba(waba_id):
            return 400, _error(
                100, f"Unsupported get request. Object with ID '{waba_id}' does not exist"
            )
        return self.templates.handle_list(self.base_url, handler.path, waba_id)

    def handle_download(self, handler: _Handler, token: str) -> tuple[int, bytes, str]:
        if not self._authorised(handler, None):
            return 401, b"", "text/plain"
        entry = self._downloads.get(token)
        if entry is None or entry[1] < time.monotonic():
            return 404, b"", "text/plain"
        media = self._media[entry[0]]
        return 200, media.content, media.mime_type


def _error(code: int, message: str, subcode: int | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {
        "message": f"(#{code}) {message}",
        "type": "OAuthException",
        "code": code,
        "error_data": {"messaging_product": "whatsapp", "details": message},
        "fbtrace_id": f"A{random.getrandbits(64):x}",
    }
    if subcode is not None:
        error["error_subcode"] = subcode
    return {"error": error}


_SEND = re.compile(rf"^/{VERSION}/(\d+)/messages$")
_UPLOAD = re.compile(rf"^/{VERSION}/(\d+)/media$")
_MEDIA = re.compile(rf"^/{VERSION}/(\d+)$")
_TEMPLATES = re.compile(rf"^/{VERSION}/(\d+)/message_templates$")


class _Handler(BaseHTTPRequestHandler):
    emulator: GraphApiEmulator

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:
        self.emulator.requests.append(("POST", self.path))
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        upload = _UPLOAD.match(self.path)
        if upload:
            content_type = self.headers.get("Content-Type", "")
            self._json(*self.emulator.handle_upload(self, upload.group(1), content_type, raw))
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, _error(100, "Invalid JSON"))
            return
        match = _SEND.match(self.path)
        if not match:
            self._json(404, _error(100, "Unknown path"))
            return
        self._json(*self.emulator.handle_send(self, match.group(1), body))

    def do_GET(self) -> None:
        self.emulator.requests.append(("GET", self.path))
        if self.path.startswith("/whatsapp_business/attachments/"):
            token = self.path.split("mid=", 1)[-1]
            status, content, mime = self.emulator.handle_download(self, token)
            self.send_response(status)
            self.send_header("Content-Type", mime)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content)
            return
        listing = _TEMPLATES.match(self.path.split("?")[0])
        if listing:
            self._json(*self.emulator.handle_templates(self, listing.group(1)))
            return
        match = _MEDIA.match(self.path.split("?")[0])
        if not match:
            self._json(404, _error(100, "Unknown path"))
            return
        self._json(*self.emulator.handle_media_info(self, match.group(1)))
