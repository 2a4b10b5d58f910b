"""An IPv6 address that carries an IPv4 address is judged as that IPv4 address: where a NAT64
gateway or a 6to4/Teredo relay routes it, `64:ff9b::10.0.0.1` reaches 10.0.0.1, so a URL naming
it must be refused like `http://10.0.0.1/`, when it is saved and when the pinned client connects.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

import pytest

from inbox.platform import egress, http


def _hex_pair(v4: str) -> str:
    value = int(ipaddress.IPv4Address(v4))
    return f"{value >> 16:x}:{value & 0xFFFF:x}"


def _teredo(client: str, server: str = "65.54.227.120") -> str:
    # The client address is stored with its bits inverted (RFC 4380).
    obfuscated = int(ipaddress.IPv4Address(client)) ^ 0xFFFFFFFF
    return f"2001:0:{_hex_pair(server)}:0:f227:{obfuscated >> 16:x}:{obfuscated & 0xFFFF:x}"


WRAPPINGS: dict[str, Callable[[str], str]] = {
    "nat64": lambda v4: f"64:ff9b::{v4}",
    "ipv4-compatible": lambda v4: f"::{v4}",
    "ipv4-mapped": lambda v4: f"::ffff:{v4}",
    "siit": lambda v4: f"::ffff:0:{v4}",
    "6to4": lambda v4: f"2002:{_hex_pair(v4)}::1",
    "teredo": _teredo,
}

INSIDE = ["127.0.0.1", "10.0.0.1", "169.254.169.254"]


@pytest.fixture(autouse=True)
def production_allow_list(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []  # the tests' settings allow 127.0.0.1


@pytest.mark.parametrize("inside", INSIDE)
@pytest.mark.parametrize("form", sorted(WRAPPINGS))
def test_every_wrapping_of_an_inside_address_is_refused(form: str, inside: str) -> None:
    address = WRAPPINGS[form](inside)
    carried = egress.embedded_ipv4(ipaddress.IPv6Address(address))
    assert carried[-1] == ipaddress.IPv4Address(inside)
    with pytest.raises(egress.EgressRefused):
        egress.check(f"http://[{address}]/latest/meta-data/")


@pytest.mark.parametrize("form", sorted(WRAPPINGS))
def test_a_wrapped_public_address_is_judged_as_that_address(form: str) -> None:
    egress.check(f"https://[{WRAPPINGS[form]('8.8.8.8')}]/rest/1/abc/")


def test_a_wrapped_address_in_a_listed_network_passes_like_the_address(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["10.0.5.0/24"]
    egress.check("http://[64:ff9b::10.0.5.7]/send")
    egress.check("http://[::ffff:10.0.5.7]/send")
    with pytest.raises(egress.EgressRefused):
        egress.check("http://[64:ff9b::10.0.6.7]/send")


def test_a_teredo_address_is_refused_when_its_server_is_inside() -> None:
    with pytest.raises(egress.EgressRefused):
        egress.check(f"http://[{_teredo('8.8.8.8', server='10.0.0.1')}]/")


@pytest.mark.parametrize("v4", [*INSIDE, "8.8.8.8"])
def test_the_local_use_nat64_prefix_is_refused_outright(v4: str) -> None:
    with pytest.raises(egress.EgressRefused):
        egress.check(f"http://[64:ff9b:1::{v4}]/")


def test_the_pinned_client_refuses_a_wrapped_inside_address_at_connect_time() -> None:
    with http.client(pinned=True) as pinned:
        with pytest.raises(egress.ConnectRefused, match="OUTBOUND_ALLOWED_HOSTS"):
            pinned.get("http://[64:ff9b::169.254.169.254]/latest/meta-data/")
