"""An emulator of WAHA (WhatsApp HTTP API, devlikeapro/waha) over real HTTP, built from its
source (devlikeapro/waha core 2024.10.8, commit 55fc6a42, for the DTOs, the events and the
session states; the GOWS engine's `session.gows.core.ts` of 2025/2026 for its send answers and
message shapes) and its docs (waha.devlike.pro: Events, Receive messages, Sessions, Security).

It speaks, per engine (`GOWS`, `WEBJS`, `NOWEB`):

* `POST /api/sendText` `{session, chatId, text}`, `/api/sendImage` and `/api/sendFile`
  `{session, chatId, caption, file: {mimetype, filename, data}}`, with `X-Api-Key`. The answer
  is the engine's: GOWS `{"id": "true_<chat>_<ID>", "_data": …}`, WEBJS a whatsapp-web.js
  message (`"id": {"_serialized": …}`), NOWEB a Baileys message (`"key": {"id": …}`). Errors as
  WAHA gives them: 401 `{"message": "Unauthorized", "statusCode": 401}`, 404 for an unknown
  session, 422 "Session status is not as expected" (with `status` and `expected`) when the
  session is not WORKING, and whatever `fail_sends_with` says (a gateway that is down).
* `GET /api/sessions/<session>`: `{name, status, engine, me}`; `GET /api/files/…`: media.
* Webhooks to the inbox, signed like WAHA: `X-Webhook-Hmac` = hex HMAC-SHA512 of the body,
  `X-Webhook-Hmac-Algorithm: sha512`: customer messages (`message` and `message.any`), messages
  typed on the phone (`fromMe`; GOWS: `from` = the chat, `to` null; WEBJS: `from` = the business),
  the echo of every API send (`source: "api"` when `mark_api_sends`), `message.ack`,
  `session.status`, and a history replay.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from tests.emulators.http import EmulatorServer


def sign(key: str, body: bytes) -> str:
    return hmac.new(key.encode(), body, hashlib.sha512).hexdigest()


def new_id() -> str:
    return "3EB0" + uuid.uuid4().hex[:16].upper()


@dataclass
class WahaSent:
    chat_id: str
    text: str
    id: str  # the short id
    kind: str = "text"
    file: dict[str, Any] = field(default_factory=dict)


@dataclass
class WahaEmulator:
    api_key: str
    engine: str = "GOWS"
    session: str = "default"
    me: str = "77010000000@c.us"
    inbox_url: str = ""  # the inbox's /webhooks/waha/<channel id>/
    hmac_key: str = ""  # the session config's hmac.key; the API key when empty
    echo_sends: bool = True
    mark_api_sends: bool = False  # `source: "api"` on the echo (engines that give it)
    fail_sends_with: int | None = None
    answer_delay: float = 0.0  # the echo is posted, then the send answered this much later
    status: str = "WORKING"
    host: str = "127.0.0.1"
    sent: list[WahaSent] = field(default_factory=list)
    # (path, chatId) of each `/api/sendSeen` and `/api/startTyping`, in order.
    presence: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.media: dict[str, tuple[bytes, str]] = {}
        self.media_requests: list[dict[str, str]] = []
        self.send_attempts = 0
        self._server: EmulatorServer | None = None
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.base_url = ""

    def __enter__(self) -> WahaEmulator:
        handler = type("Handler", (_Handler,), {"emulator": self})
        self._server = EmulatorServer((self.host, 0), handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.base_url = f"http://{self.host}:{self._server.server_address[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        self.settle()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def settle(self) -> None:
        """Wait for the echoes in flight to be posted."""
        for thread in list(self._threads):
            thread.join(timeout=10)

    # --- what WAHA posts -------------------------------------------------------------------

    def body(self, event: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"id": "evt_" + uuid.uuid4().hex[:26], "timestamp": int(time.time() * 1000),
                "session": self.session, "engine": self.engine, "event": event,
                "payload": payload, "me": {"id": self.me, "pushName": "Oak & Co"},
                "environment": {"version": "2025.11.2", "engine": self.engine,
                                "tier": "CORE"}}  # fmt: skip

    def post_body(self, body: dict[str, Any] | bytes, *, signature: str | None = None,
                  headers: dict[str, str] | None = None) -> int:  # fmt: skip
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        given = {"Content-Type": "application/json",
                 "X-Webhook-Hmac": signature if signature is not None
                 else sign(self.hmac_key or self.api_key, raw),
                 "X-Webhook-Hmac-Algorithm": "sha512",
                 "X-Webhook-Request-Id": uuid.uuid4().hex, **(headers or {})}  # fmt: skip
        return httpx.post(self.inbox_url, content=raw, headers=given, timeout=10).status_code

    def post(self, event: str, payload: dict[str, Any]) -> int:
        return self.post_body(self.body(event, payload))

    def message(self, chat: str, text: str = "", *, id: str | None = None, from_me: bool = False,
                source: str | None = None, ts: int | None = None, **extra: Any) -> dict[str, Any]:  # fmt: skip
        """A message payload as this engine shapes it."""
        short = id or new_id()
        if from_me and self.engine == "GOWS":
            sender, recipient = chat, None
        elif from_me:
            sender, recipient = self.me, chat
        else:
            sender, recipient = chat, self.me
        payload: dict[str, Any] = {
            "id": f"{'true' if from_me else 'false'}_{chat}_{short}",
            "timestamp": ts or int(time.time()), "from": sender, "fromMe": from_me,
            "to": recipient, "body": text, "hasMedia": False, "media": None, "ack": 1,
            "ackName": "SERVER", "replyTo": None, "_data": {"notifyName": "Dana"},
        }  # fmt: skip
        if source is not None:
            payload["source"] = source
        payload.update(extra)
        return payload

    def media_message(self, chat: str, name: str, content: bytes, mime: str, *,
                      data_type: str = "", filename: str | None = None,
                      caption: str = "") -> dict[str, Any]:  # fmt: skip
        self.media[name] = (content, mime)
        url = f"{self.base_url}/api/files/{self.session}/{name}"
        data: dict[str, Any] = {"notifyName": "Dana"}
        if data_type:
            data["type"] = data_type  # WEBJS's own type: ptt, audio, image, document
        return self.message(chat, caption, hasMedia=True, _data=data,
                            media={"url": url, "mimetype": mime, "filename": filename,
                                   "error": None})  # fmt: skip

    def ack(self, message_id: str, chat: str, ack: int) -> dict[str, Any]:
        names = {-1: "ERROR", 0: "PENDING", 1: "SERVER", 2: "DEVICE", 3: "READ", 4: "PLAYED"}
        return {"id": f"true_{chat}_{message_id}", "from": self.me, "to": chat, "fromMe": True,
                "ack": ack, "ackName": names[ack], "timestamp": int(time.time())}  # fmt: skip

    def set_status(self, status: str) -> int:
        """The session changes state (the phone unlinked, a QR code to scan, back to WORKING)
        and WAHA posts `session.status`."""
        self.status = status
        return self.post("session.status", {"name": self.session, "status": status,
                                            "statuses": [{"status": status,
                                                          "timestamp": int(time.time() * 1000)}]})  # fmt: skip

    # --- what WAHA answers -----------------------------------------------------------------

    def sent_to(self, chat_id: str) -> list[WahaSent]:
        with self._lock:
            return [s for s in self.sent if s.chat_id == chat_id]

    def answer(self, chat: str, short: str, body: dict[str, Any]) -> dict[str, Any]:
        serialized = f"true_{chat}_{short}"
        if self.engine == "WEBJS":
            return {"id": {"fromMe": True, "remote": chat, "id": short, "_serialized": serialized},
                    "body": body.get("text", ""), "fromMe": True, "to": chat, "from": self.me,
                    "ack": 0, "timestamp": int(time.time()), "_data": {}}  # fmt: skip
        if self.engine == "NOWEB":
            jid = chat.replace("@c.us", "@s.whatsapp.net")
            return {"key": {"remoteJid": jid, "fromMe": True, "id": short},
                    "message": {"extendedTextMessage": {"text": body.get("text", "")}},
                    "messageTimestamp": str(int(time.time())), "status": "PENDING"}  # fmt: skip
        return {"id": serialized, "_data": {"Info": {"ID": short, "Chat": chat}}}

    def handle_send(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.send_attempts += 1
        if body.get("session") != self.session:
            return 404, {"statusCode": 404, "error": "Not Found",
                         "message": f"We didn't find a session with name '{body.get('session')}'."}  # fmt: skip
        if self.status != "WORKING":
            return 422, {"statusCode": 422, "error": "Unprocessable Entity",
                         "message": "Session status is not as expected. Try again later or "
                                    "restart the session", "session": self.session,
                         "status": self.status, "expected": ["WORKING"]}  # fmt: skip
        if self.fail_sends_with is not None:
            return self.fail_sends_with, {"statusCode": self.fail_sends_with, "message": "failed"}
        chat, short = str(body.get("chatId") or ""), new_id()
        kind = {"/api/sendImage": "image", "/api/sendFile": "document"}.get(path, "text")
        text = str(body.get("text") if kind == "text" else body.get("caption") or "")
        file = body.get("file") if isinstance(body.get("file"), dict) else {}
        with self._lock:
            self.sent.append(WahaSent(chat, text, short, kind, file or {}))
        if self.echo_sends and self.inbox_url:
            echo = self.message(chat, text, id=short, from_me=True,
                                source="api" if self.mark_api_sends else None)  # fmt: skip
            thread = threading.Thread(target=self.post, args=("message.any", echo), daemon=True)
            self._threads.append(thread)
            thread.start()
        time.sleep(self.answer_delay)
        return 201, self.answer(chat, short, body)


class _Handler(BaseHTTPRequestHandler):
    emulator: WahaEmulator

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _authorised(self) -> bool:
        if self.headers.get("X-Api-Key", "") == self.emulator.api_key:
            return True
        self._reply(401, b'{"message":"Unauthorized","statusCode":401}')
        return False

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self._authorised():
            return
        path = self.path.split("?")[0].rstrip("/")
        if path in ("/api/sendSeen", "/api/startTyping"):
            self._presence(path, raw)
            return
        if path not in ("/api/sendText", "/api/sendImage", "/api/sendFile"):
            self._reply(404, b'{"statusCode":404,"message":"Cannot POST"}')
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._reply(400, b'{"statusCode":400,"message":"Bad Request"}')
            return
        status, answer = self.emulator.handle_send(path, body if isinstance(body, dict) else {})
        self._reply(status, json.dumps(answer).encode())

    def _presence(self, path: str, raw: bytes) -> None:
        """`{session, chatId}` (sendSeen may add `messageIds`): 201 like WAHA's other POSTs,
        400 without a chat, 404 for another session."""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        if not isinstance(body, dict) or not str(body.get("chatId") or ""):
            self._reply(400, b'{"statusCode":400,"message":["chatId should not be empty"]}')
            return
        if body.get("session", "default") != self.emulator.session:
            self._reply(404, b'{"statusCode":404,"message":"Session not found"}')
            return
        with self.emulator._lock:
            self.emulator.presence.append((path, str(body["chatId"])))
        self._reply(201, b"{}")

    def do_GET(self) -> None:
        emulator = self.emulator
        path = self.path.split("?")[0]
        if path.startswith("/api/files/"):
            with emulator._lock:
                emulator.media_requests.append(dict(self.headers.items()))
        if not self._authorised():
            return
        if path.startswith("/api/sessions/"):
            name = path.removeprefix("/api/sessions/").rstrip("/")
            if name != emulator.session:
                self._reply(404, b'{"statusCode":404,"message":"Session not found"}')
                return
            answer = {"name": name, "status": emulator.status, "engine": {"engine": emulator.engine},
                      "me": {"id": emulator.me} if emulator.status == "WORKING" else None}  # fmt: skip
            self._reply(200, json.dumps(answer).encode())
            return
        name = path.rsplit("/", 1)[-1]
        if not path.startswith("/api/files/") or name not in emulator.media:
            self._reply(404, b'{"statusCode":404,"message":"File not found"}')
            return
        content, mime = emulator.media[name]
        self._reply(200, content, mime)
