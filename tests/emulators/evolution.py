"""An emulator of Evolution API v2 (one instance), over real HTTP.

Built from EvolutionAPI/evolution-api 2.3.6 (commit 3454bec79f514995df9a5ea36a3554ab35cf1c82):
the routes of `src/api/routes/sendMessage.router.ts` and `chat.router.ts` (201 answers), the
`apikey` guard of `src/api/guards/auth.guard.ts` (401 `Unauthorized`), the instance guard's 404
(`The "<name>" instance does not exist`), the error body of `src/main.ts`
(`{"status", "error", "response": {"message": [...]}}`), `sendMessageWithTyping` (400 with the
`onWhatsApp` result for a number not on WhatsApp; 400 `Error: Connection Closed` when the
phone's link is down), `prepareMessage` for the message shapes, and the webhook envelope of
`webhook.controller.ts` (`event`, `instance`, `data`, `apikey` — the instance token, sent with
`AUTHENTICATION_EXPOSE_IN_FETCH_INSTANCES=true`).

It accepts sends, keeps media of customers' messages for `getBase64FromMediaMessage`, answers
`connectionState`, and posts webhook bodies to the inbox: customer messages, messages typed on
the phone (`fromMe`), the `send.message` report of every API send (posted, as Evolution does,
before the send's HTTP answer), status updates, connection updates and history (`messages.set`).
"""

from __future__ import annotations

import base64
import json
import random
import string
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx

from tests.emulators.http import EmulatorServer


def message_id() -> str:
    """A Baileys-style id (`3EB0` + 18 hex digits)."""
    return "3EB0" + "".join(random.choices(string.hexdigits.upper()[:16], k=18))


@dataclass
class EvolutionSent:
    number: str
    text: str
    id: str
    kind: str = "text"
    content: bytes = b""
    mime_type: str = ""
    filename: str = ""


@dataclass
class EvolutionEmulator:
    token: str  # the instance token: the `apikey` header it accepts and the webhook's `apikey`
    instance: str = "shop"
    inbox_url: str = ""  # the inbox's /webhooks/evolution/<channel id>/
    state: str = "open"  # connectionState: open | connecting | close
    fail_sends_with: int | None = None  # an HTTP status every send answers with
    not_on_whatsapp: set[str] = field(default_factory=set)
    expose_apikey: bool = True  # AUTHENTICATION_EXPOSE_IN_FETCH_INSTANCES
    # The phone comes back after this many sends were refused while the link was down.
    relink_after_refusals: int | None = None
    host: str = "127.0.0.1"
    sent: list[EvolutionSent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.media: dict[str, tuple[bytes, str]] = {}
        self.send_attempts = 0
        self.refused = 0
        self._threads: list[threading.Thread] = []
        self._server: EmulatorServer | None = None
        self._lock = threading.Lock()
        self.base_url = ""

    def __enter__(self) -> EvolutionEmulator:
        class Handler(_Handler):
            pass

        Handler.emulator = self
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

    # --- webhook bodies, as webhook.controller.ts posts them ------------------------------

    def envelope(self, event: str, data: Any, *, apikey: str | None = None) -> dict[str, Any]:
        return {
            "event": event,
            "instance": self.instance,
            "data": data,
            "destination": self.inbox_url,
            "date_time": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
            "sender": "77000000000@s.whatsapp.net",
            "server_url": self.base_url,
            "apikey": apikey
            if apikey is not None
            else (self.token if self.expose_apikey else None),
        }

    def message(
        self,
        jid: str,
        text: str = "",
        *,
        from_me: bool = False,
        id: str | None = None,
        push_name: str = "Aigerim",
        timestamp: int | None = None,
        quoted: str = "",
        **content: Any,
    ) -> dict[str, Any]:
        """`prepareMessage`'s shape; `content` replaces the text with e.g. `audioMessage=…`."""
        body = content or {"conversation": text}
        data: dict[str, Any] = {
            "key": {"remoteJid": jid, "fromMe": from_me, "id": id or message_id()},
            "pushName": "Você" if from_me else push_name,
            "status": "SERVER_ACK" if from_me else "DELIVERY_ACK",
            "message": body,
            "contextInfo": {"stanzaId": quoted, "participant": jid} if quoted else None,
            "messageType": next(iter(body)),
            "messageTimestamp": timestamp or int(time.time()),
            "instanceId": "0b6b2f3c-8d0e-4c4e-9a4c-3b9d2b1b7c11",
            "source": "android",
        }
        return data

    def voice(self, jid: str, audio: bytes, *, webhook_base64: bool = False) -> dict[str, Any]:
        data = self.message(
            jid,
            audioMessage={
                "url": "https://mmg.whatsapp.net/v/t62.7117-24/voice.enc",
                "mimetype": "audio/ogg; codecs=opus",
                "seconds": 1,
                "ptt": True,
                "fileLength": str(len(audio)),
            },
        )
        self.media[data["key"]["id"]] = (audio, "audio/ogg; codecs=opus")
        if webhook_base64:
            data["message"]["base64"] = base64.b64encode(audio).decode()
        return data

    def post(self, event: str, data: Any, *, apikey: str | None = None) -> int:
        response = httpx.post(
            self.inbox_url, json=self.envelope(event, data, apikey=apikey), timeout=30
        )
        return response.status_code

    def customer_says(self, jid: str, text: str, **kw: Any) -> dict[str, Any]:
        data = self.message(jid, text, **kw)
        assert self.post("messages.upsert", data) == 200
        return data

    def status(self, message_id: str, jid: str, status: str) -> int:
        update = {"keyId": message_id, "remoteJid": jid, "fromMe": True, "status": status,
                  "instanceId": "0b6b2f3c-8d0e-4c4e-9a4c-3b9d2b1b7c11"}  # fmt: skip
        return self.post("messages.update", update)

    def connection(self, state: str, status_reason: int = 200) -> int:
        self.state = state
        return self.post("connection.update", {"instance": self.instance, "state": state,
                                               "statusReason": status_reason})  # fmt: skip

    def sent_to(self, jid: str) -> list[EvolutionSent]:
        with self._lock:
            return [s for s in self.sent if s.number == jid]

    # --- the REST API ------------------------------------------------------------------------

    def error(self, status: int, message: Any) -> tuple[int, dict[str, Any]]:
        names = {400: "Bad Request", 401: "Unauthorized", 404: "Not Found"}
        return status, {"status": status, "error": names.get(status, "Internal Server Error"),
                        "response": {"message": message}}  # fmt: skip

    def handle_send(self, kind: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        self.send_attempts += 1
        if self.fail_sends_with is not None:
            return self.error(self.fail_sends_with, ["send failed"])
        number = str(body.get("number") or "")
        if self.state != "open":
            self.refused += 1
            if self.refused == self.relink_after_refusals:
                self.state = "open"
                relink = threading.Thread(target=self.connection, args=("open",), daemon=True)
                self._threads.append(relink)
                relink.start()
            return self.error(400, ["Error: Connection Closed"])
        if number in self.not_on_whatsapp:
            return self.error(400, [{"jid": number, "exists": False, "number": number}])
        sent = EvolutionSent(number, str(body.get("text") or body.get("caption") or ""),
                             message_id(), kind)  # fmt: skip
        if kind == "text":
            content: dict[str, Any] = {"conversation": sent.text}
        else:
            sent.content = base64.b64decode(str(body.get("media") or ""))
            sent.mime_type = str(body.get("mimetype") or "")
            sent.filename = str(body.get("fileName") or "")
            content = {f"{body.get('mediatype')}Message": {"caption": sent.text,
                                                           "mimetype": sent.mime_type}}  # fmt: skip
        with self._lock:
            self.sent.append(sent)
        data = self.message(sent.number, from_me=True, id=sent.id, **content)
        data["status"] = "PENDING"
        if self.inbox_url:
            # sendDataWebhook(SEND_MESSAGE) runs before the HTTP answer is returned.
            self.post("send.message", data)
        return 201, data

    def handle_media(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        key_id = str(((body.get("message") or {}).get("key") or {}).get("id") or "")
        if key_id not in self.media:
            return self.error(400, ["Error: Message not found"])
        content, mime = self.media[key_id]
        return 201, {"mediaType": "audioMessage", "fileName": f"{key_id}.oga", "caption": None,
                     "size": {"fileLength": len(content)}, "mimetype": mime,
                     "base64": base64.b64encode(content).decode()}  # fmt: skip


class _Handler(BaseHTTPRequestHandler):
    emulator: EvolutionEmulator

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        raw = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def _route(self) -> str | None:
        """The route's name, after the apikey and instance guards (None: answered here)."""
        emulator = self.emulator
        if self.headers.get("apikey", "") != emulator.token:
            self._reply(*emulator.error(401, "Unauthorized"))
            return None
        parts = self.path.strip("/").split("/")
        if len(parts) != 3:
            self._reply(404, {"status": 404, "error": "Not Found", "response": {"message": []}})
            return None
        if parts[2] != emulator.instance:
            self._reply(*emulator.error(404, [f'The "{parts[2]}" instance does not exist']))
            return None
        return f"{parts[0]}/{parts[1]}"

    def do_POST(self) -> None:
        route = self._route()
        if route is None:
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        if route == "message/sendText":
            self._reply(*self.emulator.handle_send("text", body))
        elif route == "message/sendMedia":
            self._reply(*self.emulator.handle_send(str(body.get("mediatype")), body))
        elif route == "chat/getBase64FromMediaMessage":
            self._reply(*self.emulator.handle_media(body))
        else:
            self._reply(*self.emulator.error(404, [f"Cannot POST {self.path}"]))

    def do_GET(self) -> None:
        route = self._route()
        if route is None:
            return
        if route == "instance/connectionState":
            state = {"instanceName": self.emulator.instance, "state": self.emulator.state}
            self._reply(200, {"instance": state})
        else:
            self._reply(*self.emulator.error(404, [f"Cannot GET {self.path}"]))
