"""The HTTP client for URLs business admins type (`http.client(pinned=True)`) connects only to an address that passed the
egress rule at connect time, whatever `check()` said earlier: a name that resolves to 127.0.0.1
gets no connection unless the operator listed it, and a redirect into the network is not
followed. Real sockets, a real HTTP server on loopback; nothing of ours is replaced."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest

from inbox.platform import egress, http
from tests.emulators.http import EmulatorServer


@dataclass
class Seen:
    """What a server got: one entry per request (its Host header and the client's port)."""

    requests: list[tuple[str, int]] = field(default_factory=list)
    base_url: str = ""


@contextmanager
def server(host: str = "127.0.0.1", redirect_to: str = "") -> Iterator[Seen]:
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse is visible

        def do_GET(self) -> None:
            seen.requests.append((self.headers.get("Host", ""), self.client_address[1]))
            if redirect_to:
                self.send_response(302)
                self.send_header("Location", redirect_to)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = b"inside"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = EmulatorServer((host, 0), Handler)
    seen.base_url = f"http://{host}:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_name_that_resolves_to_loopback_gets_no_connection_unless_listed(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    with server() as inside, http.client(pinned=True) as pinned:
        port = inside.base_url.rsplit(":", 1)[1]
        for url in (f"http://localhost:{port}/", f"{inside.base_url}/"):
            with pytest.raises(egress.ConnectRefused, match="OUTBOUND_ALLOWED_HOSTS"):
                pinned.get(url)
    assert inside.requests == []


def test_a_refused_connection_reads_as_a_failed_connect_to_callers(settings: Any) -> None:
    """Callers that catch httpx.ConnectError (nothing sent, retry later) keep working."""
    settings.OUTBOUND_ALLOWED_HOSTS = []
    with server() as inside, http.client(pinned=True) as pinned:
        with pytest.raises(httpx.ConnectError):
            pinned.get(f"{inside.base_url}/")


def test_a_listed_host_connects_with_its_own_name_in_host_and_keeps_the_connection(
    settings: Any,
) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["localhost"]
    with server() as inside, http.client(pinned=True) as pinned:
        port = inside.base_url.rsplit(":", 1)[1]
        first = pinned.get(f"http://localhost:{port}/a")
        second = pinned.get(f"http://localhost:{port}/b")
    assert (first.status_code, first.text, second.text) == (200, "inside", "inside")
    assert [host for host, _ in inside.requests] == [f"localhost:{port}"] * 2
    assert inside.requests[0][1] == inside.requests[1][1]  # one connection, reused


def test_a_listed_network_connects(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.0/8"]
    with server() as inside, http.client(pinned=True) as pinned:
        assert pinned.get(f"{inside.base_url}/").text == "inside"


def test_a_redirect_into_the_network_is_not_followed(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    with server(host="127.0.0.2") as private:
        with server(redirect_to=f"{private.base_url}/latest/meta-data/") as allowed:
            with http.client(pinned=True) as pinned:
                reply = pinned.get(f"{allowed.base_url}/")
                assert reply.status_code == 302  # handed back, not followed
                # A caller that asks to follow gets each hop checked, and this one refused.
                with pytest.raises(egress.ConnectRefused):
                    pinned.get(f"{allowed.base_url}/", follow_redirects=True)
    assert len(allowed.requests) == 2
    assert private.requests == []


def test_the_shared_client_is_one_per_process_and_pinned(settings: Any) -> None:
    assert http.shared(pinned=True) is http.shared(pinned=True)
    assert http.shared(pinned=True) is not http.shared()
    settings.OUTBOUND_ALLOWED_HOSTS = []
    with server() as inside:
        with pytest.raises(egress.ConnectRefused):
            http.shared(pinned=True).get(f"{inside.base_url}/")
    assert inside.requests == []
