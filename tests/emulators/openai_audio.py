"""An OpenAI-compatible speech-to-text server for tests, over real HTTP.

It speaks ``POST /v1/audio/transcriptions`` as vLLM and the OpenAI API do: a multipart form with
``file``, ``model``, ``response_format``, ``timestamp_granularities[]``, ``language``,
``prompt``, ``temperature``; answers ``verbose_json`` (``text``, ``language``, ``duration``,
``segments`` with ``avg_logprob`` / ``no_speech_prob`` and, per segment, ``words`` with
``probability``), or plain ``json`` (``{"text": …}``). Errors use OpenAI's layout
``{"error": {"message", "type", "code"}}``: 400 for a missing field or a file that is not audio
it can read (it reads WAV), 401 for a wrong bearer token, 404 for an unknown model.

    with SpeechEmulator(api_key="k") as emu:      # 127.0.0.1, a free port, a background thread
        emu.script(Step.server_error(503), Step.verbose(verbose_body("two chairs", 0.9)))
        ... emu.base_url ...                      # "http://127.0.0.1:PORT/v1"
        emu.requests[-1].fields["prompt"]          # what the client sent

Answers: scripted steps first (one per request, in order), then `emu.default` (a verbose body
saying "hello"). Failure steps: HTTP status with a message, a slow answer, a body that is not
JSON, a connection closed without an answer.
"""

from __future__ import annotations

import email.parser
import email.policy
import json
import struct
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.emulators.http import EmulatorServer


def verbose_body(
    text: str,
    word_probability: float | list[float] = 0.95,
    *,
    avg_logprob: float = -0.2,
    no_speech_prob: float = 0.01,
    language: str = "en",
    duration: float | None = None,
    layout: str = "vllm",
) -> dict[str, Any]:
    """A verbose_json answer for `text` as one segment, words evenly spaced.

    layout "vllm": words (with probability) inside the segment; "openai": words at the top
    level without probabilities and the language as an English name, as api.openai.com does."""
    tokens = text.split()
    probs = (
        word_probability if isinstance(word_probability, list) else [word_probability] * len(tokens)
    )
    step = 0.4
    words = [
        {"word": " " + w, "start": round(i * step, 2), "end": round((i + 1) * step, 2),
         "probability": p}
        for i, (w, p) in enumerate(zip(tokens, probs, strict=True))
    ]  # fmt: skip
    end = round(len(tokens) * step, 2)
    segment: dict[str, Any] = {
        "id": 0, "seek": 0, "start": 0.0, "end": end, "text": " " + text, "tokens": [],
        "temperature": 0.0, "avg_logprob": avg_logprob, "compression_ratio": 1.1,
        "no_speech_prob": no_speech_prob,
    }  # fmt: skip
    body: dict[str, Any] = {
        "task": "transcribe",
        "language": language,
        "duration": duration if duration is not None else end,
        "text": text,
        "segments": [segment],
    }
    if layout == "openai":
        body["language"] = {"en": "english", "ru": "russian"}.get(language, language)
        body["words"] = [{k: v for k, v in w.items() if k != "probability"} for w in words]
    else:
        segment["words"] = words
    return body


@dataclass
class Step:
    status: int = 200
    body: bytes = b""
    delay: float = 0.0
    drop: bool = False

    @classmethod
    def verbose(cls, body: dict[str, Any], delay: float = 0.0) -> Step:
        return cls(200, json.dumps(body).encode(), delay)

    @classmethod
    def server_error(cls, status: int = 503, message: str = "Service Unavailable") -> Step:
        return cls.error(status, message, "server_error")

    @classmethod
    def error(cls, status: int, message: str, kind: str = "invalid_request_error") -> Step:
        payload = {"error": {"message": message, "type": kind, "param": None, "code": status}}
        return cls(status, json.dumps(payload).encode())

    @classmethod
    def slow(cls, seconds: float, then: Step | None = None) -> Step:
        answer = then or cls.verbose(verbose_body("hello"))
        return cls(answer.status, answer.body, seconds)

    @classmethod
    def invalid_json(cls) -> Step:
        return cls(200, b'{"text": "two chairs", "segments": [{"start": 0.0, "end"')

    @classmethod
    def dropped(cls) -> Step:
        return cls(drop=True)


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    fields: dict[str, list[str]] = field(default_factory=dict)
    file_name: str = ""
    file_type: str = ""
    file: bytes = b""

    def one(self, name: str) -> str | None:
        values = self.fields.get(name)
        return values[0] if values else None


def wav_format(data: bytes) -> tuple[int, int, int] | None:
    """(channels, sample rate, bits per sample) of a PCM WAV file, or None if it is not one."""
    if len(data) < 44 or data[:4] != b"RIFF" or data[8:12] != b"WAVE" or data[12:16] != b"fmt ":
        return None
    audio_format, channels, rate = struct.unpack("<HHI", data[20:28])
    bits = struct.unpack("<H", data[34:36])[0]
    return (channels, rate, bits) if audio_format == 1 else None


class SpeechEmulator:
    def __init__(self, api_key: str = "", models: tuple[str, ...] = ()) -> None:
        self.api_key = api_key
        self.models = models
        self.requests: list[Received] = []
        self.default = Step.verbose(verbose_body("hello"))
        self._script: deque[Step] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._server = EmulatorServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script(self, *steps: Step) -> None:
        with self._lock:
            self._script.extend(steps)

    def __enter__(self) -> SpeechEmulator:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()

    def _next_step(self) -> Step:
        with self._lock:
            return self._script.popleft() if self._script else self.default

    def _answer(self, received: Received) -> Step:
        """What a real server checks before it transcribes, then the scripted answer."""
        expected = f"Bearer {self.api_key}"
        if self.api_key and received.headers.get("authorization") != expected:
            return Step.error(401, "Incorrect API key provided.", "invalid_api_key")
        if received.path != "/v1/audio/transcriptions":
            return Step.error(404, f"Not found: {received.path}")
        if not received.file:
            return Step.error(400, "Missing required parameter: 'file'.")
        model = received.one("model")
        if not model:
            return Step.error(400, "Missing required parameter: 'model'.")
        if self.models and model not in self.models:
            return Step.error(404, f"The model `{model}` does not exist.", "NotFoundError")
        if wav_format(received.file) is None:
            return Step.error(400, "Invalid file format: could not decode the audio file.")
        step = self._next_step()
        if step.status == 200 and received.one("response_format") == "json" and step.body:
            text = json.loads(step.body).get("text", "")
            return Step(200, json.dumps({"text": text}).encode(), step.delay)
        return step

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        emulator = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                received = parse_multipart(
                    self.path, {k.lower(): v for k, v in self.headers.items()}, raw
                )
                with emulator._lock:
                    emulator.requests.append(received)
                step = emulator._answer(received)
                if step.delay and emulator._closing.wait(step.delay):
                    return
                if step.drop:
                    self.close_connection = True
                    self.connection.close()
                    return
                self.send_response(step.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(step.body)))
                self.end_headers()
                try:
                    self.wfile.write(step.body)
                except (BrokenPipeError, ConnectionResetError):
                    return

        return Handler


def parse_multipart(path: str, headers: dict[str, str], body: bytes) -> Received:
    received = Received(path=path, headers=headers)
    content_type = headers.get("content-type", "")
    if not content_type.startswith("multipart/form-data"):
        return received
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if not isinstance(name, str) or not isinstance(payload, bytes):
            continue
        if part.get_filename() is not None:
            received.file_name = part.get_filename() or ""
            received.file_type = part.get_content_type()
            received.file = payload
        else:
            received.fields.setdefault(name, []).append(payload.decode())
    return received


def refused_base_url() -> str:
    """A base URL where nothing listens (a server that is down)."""
    from inbox.site.embedded_redis import free_port

    return f"http://127.0.0.1:{free_port()}/v1"


__all__ = ["Received", "SpeechEmulator", "Step", "refused_base_url", "verbose_body"]
