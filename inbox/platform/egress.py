"""Which addresses the inbox may send requests to when a URL comes from a business's settings.

A business admin types URLs (a channel's bridge, the Bitrix24 webhook or portal); the server
then sends requests there, with stored secrets. Such a URL may name only a public address,
unless the operator allowed the host in `OUTBOUND_ALLOWED_HOSTS` (host names or networks, e.g.
a bridge on this machine: `127.0.0.1`, or `10.0.5.0/24`). Loopback, private, link-local
(169.254.169.254, the cloud metadata service), shared, reserved and multicast addresses are
refused otherwise, whatever name resolves to them.

An IPv6 address that carries an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, SIIT
`::ffff:0:a.b.c.d`, IPv4-compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`,
Teredo `2001::/32`) is judged as the IPv4 address it carries: on a network with a NAT64 gateway
or a 6to4/Teredo relay, `64:ff9b::10.0.0.1` reaches 10.0.0.1. The local-use NAT64 prefix
`64:ff9b:1::/48` is refused outright: where it is routed, the operator picked what it reaches.

The check runs when the URL is saved (a clear form error) and again before every request. The
requests themselves go through a pinned client (`inbox.platform.http.client(pinned=True)`, whose
transport is `PinnedTransport` below): its connections resolve the host once, refuse it unless
every address passes the same rule, and connect to the address that was checked, so a name that
answers a public address to the check and 127.0.0.1 a moment later (DNS rebinding) gets no
connection. Redirects are not followed, and would be checked per hop if a caller asked for them.
URLs the operator sets in the environment (the model server, the speech server, S3, the alert
webhook) are theirs and are not checked.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import httpcore
import httpx
from django.conf import settings
from django.utils.translation import gettext

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class EgressRefused(ValueError):
    """The URL names an address the operator did not allow. `host` is the refused host (empty
    when the URL has none or is not http(s)); `explain` words the refusal for a page."""

    host = ""

    def __init__(self, message: str, host: str = "") -> None:
        super().__init__(message)
        self.host = host


def explain(refused: EgressRefused) -> str:
    """The refusal in the reader's language (the exception's own text, for logs, is English)."""
    if refused.host:
        return gettext(
            "%(host)s is a private or local address; the operator can allow it in "
            "OUTBOUND_ALLOWED_HOSTS"
        ) % {"host": refused.host}
    return gettext("only http and https URLs with a host name can be used")


def _allowed_entries() -> tuple[set[str], list[ipaddress.IPv4Network | ipaddress.IPv6Network]]:
    hosts: set[str] = set()
    networks = []
    for entry in getattr(settings, "OUTBOUND_ALLOWED_HOSTS", []):
        entry = entry.strip().lower()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            hosts.add(entry.rstrip("."))
    return hosts, networks


def _public(address: IpAddress) -> bool:
    return address.is_global and not address.is_multicast


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL_USE = ipaddress.IPv6Network("64:ff9b:1::/48")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_IPV4_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # SIIT (RFC 2765)


def embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[ipaddress.IPv4Address, ...]:
    """The IPv4 addresses a packet to `address` may end up at (both ends of a Teredo address),
    or () when it carries none."""
    if address.ipv4_mapped is not None:
        return (address.ipv4_mapped,)
    if address.sixtofour is not None:
        return (address.sixtofour,)
    if address.teredo is not None:
        return address.teredo
    if any(address in prefix for prefix in (_NAT64, _IPV4_COMPATIBLE, _IPV4_TRANSLATED)):
        return (ipaddress.IPv4Address(int(address) & 0xFFFFFFFF),)
    return ()


def _permitted(
    address: IpAddress, allowed_networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network]
) -> bool:
    if any(address in network for network in allowed_networks):
        return True
    if isinstance(address, ipaddress.IPv6Address):
        if address in _NAT64_LOCAL_USE:
            return False
        carried = embedded_ipv4(address)
        if carried:
            return all(_permitted(inner, allowed_networks) for inner in carried)
    return _public(address)


def _refusal(host: str, addresses: Iterable[IpAddress]) -> EgressRefused | None:
    """The one rule: a host the operator listed, or only public or listed addresses."""
    allowed_hosts, allowed_networks = _allowed_entries()
    if host.lower().rstrip(".") in allowed_hosts:
        return None
    for address in addresses:
        if _permitted(address, allowed_networks):
            continue
        return EgressRefused(
            f"{host} is a private or local address; the operator can allow it in "
            "OUTBOUND_ALLOWED_HOSTS",
            host,
        )
    return None


def _ip(sockaddr_host: str) -> IpAddress:
    return ipaddress.ip_address(sockaddr_host.split("%")[0])


def check(url: str) -> None:
    """Raise EgressRefused unless `url` is http(s) and every address its host resolves to is
    public or allowed by the operator."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EgressRefused("only http and https URLs with a host name can be used")
    host = parts.hostname.lower().rstrip(".")
    if host in _allowed_entries()[0]:
        return  # a listed name is trusted whatever it resolves to; no lookup needed
    try:
        addresses = {ipaddress.ip_address(host)}
    except ValueError:
        try:
            found = socket.getaddrinfo(host, parts.port or 443, proto=socket.IPPROTO_TCP)
        except (socket.gaierror, UnicodeError):
            return  # nothing to connect to: the request itself fails, as a network error
        addresses = {_ip(str(info[4][0])) for info in found}
    refused = _refusal(host, addresses)
    if refused is not None:
        raise refused


class ConnectRefused(EgressRefused, httpx.ConnectError):
    """A connection the pinned client refused: its host resolved to an address the operator did
    not allow at connect time. It is an `httpx.ConnectError` too, so callers that treat a failed
    connection as "nothing was sent" keep doing so."""

    def __init__(self, message: str) -> None:
        httpx.ConnectError.__init__(self, message)


class PinnedBackend(httpcore.NetworkBackend):
    """httpcore's own sync backend, except that it resolves the host itself, refuses it by the
    rule above, and connects to the checked address. TLS still names the host (httpcore wraps
    the stream with the origin's host name for SNI and certificate checks), and so does `Host`."""

    def __init__(self) -> None:
        self._backend = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise httpcore.ConnectError(f"{host}: {exc}") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
        refused = _refusal(host, [_ip(address) for address in addresses])
        if refused is not None:
            raise ConnectRefused(str(refused))
        error: Exception = httpcore.ConnectError(f"{host}: no address")
        for address in addresses:
            try:
                return self._backend.connect_tcp(
                    address, port, timeout, local_address, socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                error = exc
        raise error

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not used for URLs typed by admins")

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


# httpx 0.28's HTTPTransport takes no network backend, so this transport drives httpcore's
# ConnectionPool itself and maps its exceptions to httpx's, as HTTPTransport does.
_EXCEPTIONS: dict[type[Exception], type[httpx.TransportError]] = {
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.ProxyError: httpx.ProxyError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
    httpcore.ProtocolError: httpx.ProtocolError,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
}


@contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except ConnectRefused:
        raise
    except Exception as exc:
        mapped: type[httpx.TransportError] | None = None
        for source, target in _EXCEPTIONS.items():
            if isinstance(exc, source) and (mapped is None or issubclass(target, mapped)):
                mapped = target
        if mapped is None:
            raise
        raise mapped(str(exc)) from exc


class _ResponseStream(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            with _httpx_errors():
                close()


class PinnedTransport(httpx.BaseTransport):
    """An httpx transport whose connections all come from PinnedBackend (pooled, so a process
    keeps its connections to a bridge or portal open between requests)."""

    def __init__(self, *, ssl_context: ssl.SSLContext | None = None) -> None:
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(trust_env=False),
            max_connections=100,
            max_keepalive_connections=20,
            keepalive_expiry=5.0,
            network_backend=PinnedBackend(),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, httpx.SyncByteStream)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = self._pool.handle_request(core_request)
        assert isinstance(response.stream, Iterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        with _httpx_errors():
            self._pool.close()
