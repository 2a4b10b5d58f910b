"""The HTTP server every emulator runs on: threaded, with a listen backlog big enough for the
concurrency tests and benchmarks (the standard library's default of 5 drops connections), and
the multipart/form-data reader of the emulators that take file uploads."""

from __future__ import annotations

from dataclasses import dataclass
from email.parser import BytesParser
from email.policy import default
from http.server import ThreadingHTTPServer


class EmulatorServer(ThreadingHTTPServer):
    request_queue_size = 128
    daemon_threads = True


@dataclass(frozen=True)
class FormPart:
    value: bytes
    filename: str | None
    content_type: str


def parse_multipart(content_type: str, body: bytes) -> dict[str, FormPart]:
    """A multipart/form-data body as the platforms read it: field name → part (the last one
    wins). Raises ValueError when the body is not multipart."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise ValueError("not multipart/form-data")
    message = BytesParser(policy=default).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    if not message.is_multipart():
        raise ValueError("no parts")
    parts: dict[str, FormPart] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if not isinstance(name, str):
            continue
        payload = part.get_payload(decode=True)
        parts[name] = FormPart(
            payload if isinstance(payload, bytes) else b"",
            part.get_filename(),
            part.get_content_type() if part.get("content-type") else "",
        )
    return parts
