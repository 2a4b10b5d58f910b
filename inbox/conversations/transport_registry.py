"""Which transport sends for a channel: the implementations, by channel kind.

The site shell registers the implementations at start (`inbox/site/apps.py`); the core asks
`transport_for(channel)` and never imports an integration.
"""

from __future__ import annotations

from collections.abc import Callable

from inbox.conversations.models import Channel
from inbox.conversations.transports import Transport

TransportFactory = Callable[[Channel], Transport]

_factories: dict[str, TransportFactory] = {}


def register(kind: str, factory: TransportFactory) -> None:
    _factories[kind] = factory


def transport_for(channel: Channel) -> Transport:
    factory = _factories.get(channel.kind)
    if factory is None:
        raise ValueError(f"channel #{channel.pk} has unknown kind {channel.kind!r}")
    return factory(channel)


# A linked-device gateway's own status endpoint (Evolution API's connection state, WAHA's
# session): whether the channel page's "Test connection" finds the number linked, and what the
# gateway said. Kinds without one (the sandbox, the Cloud API) have none.
ConnectionCheck = Callable[[Channel], tuple[bool, str]]

_checks: dict[str, ConnectionCheck] = {}


def register_check(kind: str, check: ConnectionCheck) -> None:
    _checks[kind] = check


def check_connection(channel: Channel) -> tuple[bool, str] | None:
    """(linked, what the gateway said), or None for a kind with nothing to test."""
    check = _checks.get(channel.kind)
    return check(channel) if check is not None else None
