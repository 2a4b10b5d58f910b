"""The few settings of a channel the consumer needs, cached per process, and its last-event
time (written at most every 30 s).

The consumer handles hundreds of events a second for a handful of channels: each channel is
read at most once every `_CHANNEL_TTL_SECONDS` per process (`channel_info`), not once per event,
so a change to a channel (switched off, its debounce) reaches the consumer within that time.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

from django.db import transaction
from django.utils import timezone

from inbox.conversations.models import Channel


@dataclass(frozen=True)
class ChannelInfo:
    business_id: int
    debounce_seconds: float
    # The channel as loaded (its token decrypted once), for the chats and messages of a batch:
    # what listeners read of it (the business, the name) without a query per chat.
    channel: Channel


_CHANNEL_TTL_SECONDS = 5.0
_channels: dict[int, tuple[float, ChannelInfo | None]] = {}
_touched: dict[int, float] = {}


def channel_info(channel_id: int) -> ChannelInfo | None:
    """The few channel settings accept needs, cached for a few seconds per process: the
    consumer handles hundreds of events a second for a handful of channels."""
    now = time.monotonic()
    cached = _channels.get(channel_id)
    if cached is not None and cached[0] > now:
        return cached[1]
    channel = Channel.objects.filter(pk=channel_id, is_active=True).first()
    info = (
        ChannelInfo(channel.business_id, channel.debounce_seconds, channel)
        if channel is not None
        else None
    )
    _channels[channel_id] = (now + _CHANNEL_TTL_SECONDS, info)
    return info


def touch_channel_on_commit(channel_id: int) -> None:
    """Last-event time per channel feeds the silent-number alert; written at most every 30 s
    (per process, and in the database), after the commit: inside the consumer's batch the
    update would hold the channel's row lock, shared by every consumer, until the batch ends."""
    if _touched.get(channel_id, 0.0) > time.monotonic() - 30:
        return
    _touched[channel_id] = time.monotonic()
    transaction.on_commit(partial(_touch_channel, channel_id))


def _touch_channel(channel_id: int) -> None:
    now = timezone.now()
    Channel.objects.filter(pk=channel_id, last_event_at__isnull=True).update(last_event_at=now)
    Channel.objects.filter(pk=channel_id, last_event_at__lt=now - timedelta(seconds=30)).update(
        last_event_at=now
    )
