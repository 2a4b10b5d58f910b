"""Which addresses the inbox may send requests to when a URL comes from a business's settings.

A business admin types URLs (a channel's bridge, the Bitrix24 webhook or portal); the server
then sends requests there, with stored secrets. Such a URL may name only a public address,
unless the operator allowed the host in `OUTBOUND_ALLOWED_HOSTS` (host names or networks, e.g.
a bridge on this machine: `127.0.0.1`, or `10.0.5.0/24`). Loopback, private, link-local
(169.254.169.254, the cloud metadata service), shared, reserved and multicast addresses are
refused otherwise, whatever name resolves to them.

The check runs when the URL is saved (a clear form error) and again before every request (the
name may resolve elsewhere by then). URLs the operator sets in the environment (the model
server, the speech server, the alert webhook) are theirs and are not checked.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class EgressRefused(ValueError):
    """The URL names an address the operator did not allow."""


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


def check(url: str) -> None:
    """Raise EgressRefused unless `url` is http(s) and every address its host resolves to is
    public or allowed by the operator."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EgressRefused("only http and https URLs with a host name can be used")
    host = parts.hostname.lower().rstrip(".")
    allowed_hosts, allowed_networks = _allowed_entries()
    if host in allowed_hosts:
        return
    try:
        addresses = {ipaddress.ip_address(host)}
    except ValueError:
        try:
            found = socket.getaddrinfo(host, parts.port or 443, proto=socket.IPPROTO_TCP)
        except (socket.gaierror, UnicodeError):
            return  # nothing to connect to: the request itself fails, as a network error
        addresses = {ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found}
    for address in addresses:
        if _public(address) or any(address in network for network in allowed_networks):
            continue
        raise EgressRefused(
            f"{host} is a private or local address; the operator can allow it in "
            "OUTBOUND_ALLOWED_HOSTS"
        )
