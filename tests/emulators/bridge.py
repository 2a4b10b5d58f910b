"""An emulator of a linked-device bridge (the HTTP service around a whatsmeow or Baileys
session), speaking the format documented in integrations/whatsapp/bridge.py over real HTTP.

It accepts sends (`POST /send`, keeping the id the inbox chose; `POST /send-media` for an image or
document, multipart), serves media, and posts events
to the inbox: customer messages, messages typed on the phone (`from_me`), and — like Baileys —
the echo of every message sent through it when `echo_own_sends` is on. It can also replay a
backlog after a "reconnect", duplicates included.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from tests.emulators.http import EmulatorServer, parse_multipart


@dataclass
class BridgeSent:
    chat_id: str
    text: str
    id: str
    kind: str = "text"
    content: bytes = b""
    mime_type: str = ""
    filename: str = ""


@dataclass
class BridgeEmulator:
    token: str
    inbox_url: str = ""  # the inbox's /webhooks/bridge/<channel id>/
    echo_own_sends: bool = False
    fail_sends_with: int | None = None
    host: str = "127.0.0.1"
    sent: list[BridgeSent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.media: dict[str, tuple[bytes, str]] = {}
        self._server: EmulatorServer | None = None
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self.base_url = ""

    def __enter__(self) -> BridgeEmulator:
        emulator = self

        class Handler(_Handler):
            pass

        Handler.emulator = emulator
        self._server = EmulatorServer((self.host, 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.base_url = f"http://{self.host}:{self._server.server_address[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        for thread in self._threads:
            thread.join(timeout=10)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def add_media(self, name: str, content: bytes, mime: str) -> str:
        self.media[name] = (content, mime)
        return f"{self.base_url}/media/{name}"

    def event(self, chat_id: str, text: str = "", *, from_me: bool = False, kind: str = "text",
              id: str | None = None, **extra: Any) -> dict[str, Any]:  # fmt: skip
        return {"id": id or uuid.uuid4().hex[:20].upper(), "chat_id": chat_id, "from_me": from_me,
                "kind": kind, "text": text, "timestamp": int(time.time()), **extra}  # fmt: skip

    def post(self, *events: dict[str, Any]) -> int:
        response = httpx.post(
            self.inbox_url,
            json={"events": list(events)},
            headers={"Authorization": f"Bearer {self.token}"},
            timeout=10,
        )
        return response.status_code

    def sent_to(self, chat_id: str) -> list[BridgeSent]:
        with self._lock:
            return [s for s in self.sent if s.chat_id == chat_id]

    def handle_send(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.fail_sends_with is not None:
            return self.fail_sends_with, {"error": "send failed"}
        message_id = str(body.get("id") or uuid.uuid4().hex[:20].upper())
        sent = BridgeSent(str(body.get("chat_id")), str(body.get("text")), message_id)
        with self._lock:
            self.sent.append(sent)
        if self.echo_own_sends and self.inbox_url:
            echo = self.event(sent.chat_id, sent.text, from_me=True, id=message_id)
            thread = threading.Thread(target=self.post, args=(echo,), daemon=True)
            self._threads.append(thread)
            thread.start()
        return 200, {"id": message_id}

    def handle_send_media(self, content_type: str, raw: bytes) -> tuple[int, dict[str, Any]]:
        if self.fail_sends_with is not None:
            return self.fail_sends_with, {"error": "send failed"}
        try:
            form = parse_multipart(content_type, raw)
        except ValueError:
            return 400, {"error": "multipart/form-data expected"}
        upload = form.get("file")
        kind = form["kind"].value.decode() if "kind" in form else ""
        if upload is None or not upload.value or kind not in ("image", "document"):
            return 400, {"error": "file and kind (image or document) are required"}

        def field_text(name: str) -> str:
            return form[name].value.decode() if name in form else ""

        message_id = field_text("id") or uuid.uuid4().hex[:20].upper()
        sent = BridgeSent(field_text("chat_id"), field_text("caption"), message_id, kind,
                          upload.value, upload.content_type, field_text("filename"))  # fmt: skip
        with self._lock:
            self.sent.append(sent)
        if self.echo_own_sends and self.inbox_url:
            echo = self.event(sent.chat_id, sent.text, from_me=True, id=message_id, kind=kind)
            thread = threading.Thread(target=self.post, args=(echo,), daemon=True)
            self._threads.append(thread)
            thread.start()
        return 200, {"id": message_id}


class _Handler(BaseHTTPRequestHandler):
    emulator: BridgeEmulator

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _authorised(self) -> bool:
        return self.headers.get("Authorization", "") == f"Bearer {self.emulator.token}"

    def _reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        if not self._authorised():
            self._reply(401, b'{"error": "unauthorised"}')
            return
        length = int(self.headers.get("Content-Length") or 0)
        if self.path.rstrip("/") == "/send-media":
            status, answer = self.emulator.handle_send_media(
                self.headers.get("Content-Type", ""), self.rfile.read(length)
            )
            self._reply(status, json.dumps(answer).encode())
            return
        if self.path.rstrip("/") != "/send":
            self._reply(404, b"{}")
            return
        status, body = self.emulator.handle_send(json.loads(self.rfile.read(length) or b"{}"))
        self._reply(status, json.dumps(body).encode())

    def do_GET(self) -> None:
        if not self._authorised():
            self._reply(401, b"")
            return
        name = self.path.removeprefix("/media/")
        if name not in self.emulator.media:
            self._reply(404, b"")
            return
        content, mime = self.emulator.media[name]
        self._reply(200, content, mime)
