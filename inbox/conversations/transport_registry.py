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
