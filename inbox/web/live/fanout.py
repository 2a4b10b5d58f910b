"""Delivery to the open pages of one process: once per business, not once per socket.

Each process that serves websockets holds one channel-layer channel per business it has pages
of, in that business's group (`realtime.business_group`). An event arrives there once (a
publisher's batch of events as one message), is decoded once, and each frame a page can get is
serialized once (`Frames`): the chat-list copy, the full copy for pages that have the event's
chat open, and the bare sequence number for pages kept off its channel. Every page of the
business is then handed the same `Frames`, a batch's together so that the page sends them as
one websocket frame; the page's consumer (`inbox.web.live.consumers`) picks its copy of each after
its own permission checks, in order, in its own task, so one slow socket never holds up the
others.

Tenant isolation is the group's: a feed only carries its own business's events, and a page
joins only the feeds of businesses its user may see (re-checked as visibility is re-read).
"""

from __future__ import annotations

import asyncio
import json
import logging
import weakref
from functools import cached_property
from typing import Any, Protocol

from channels.layers import get_channel_layer

from inbox.web.live import realtime

log = logging.getLogger(__name__)


def dumps(frame: dict[str, Any]) -> str:
    # The same encoding as AsyncJsonWebsocketConsumer.send_json.
    return json.dumps(frame)


class Frames:
    """One event and the text frames built from it, each at most once per process."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.message = message
        self.business_id: int = message["business_id"]
        self.chat_id: int | None = message.get("chat_id")
        self.channel_id: int | None = message.get("channel_id")
        self.seq: int = message["seq"]
        self.per_user = bool((message.get("data") or {}).get("owner_changed"))

    def frame(self, *, full: bool) -> dict[str, Any]:
        fragments = self.message.get("fragments") or []
        return {
            "type": "event",
            "seq": self.seq,
            "business": self.business_id,
            "event": self.message["event"],
            "chat": self.chat_id,
            "data": self.message.get("data", {}),
            "fragments": fragments if full else [f for f in fragments if f["scope"] == "list"],
        }

    @cached_property
    def list_text(self) -> str:
        return dumps(self.frame(full=False))

    @cached_property
    def full_text(self) -> str:
        return dumps(self.frame(full=True))

    @cached_property
    def skip_text(self) -> str:
        return dumps({"type": "skip", "seq": self.seq, "business": self.business_id})


class Page(Protocol):
    def deliver(self, batch: tuple[Frames, ...]) -> None:
        """Take events of a business this page joined, in order, to be sent together (one
        publisher batch's); must not block."""


class _Feed:
    def __init__(self, business_id: int) -> None:
        self.business_id = business_id
        self.pages: set[Page] = set()
        self.channel = ""
        self.task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()


class _Hub:
    """The feeds of one event loop (one per server process; one per test)."""

    def __init__(self) -> None:
        self.feeds: dict[int, _Feed] = {}
        self.lock = asyncio.Lock()


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Hub] = weakref.WeakKeyDictionary()


def _hub() -> _Hub:
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = _Hub()
    return hub


async def join(business_id: int, page: Page) -> None:
    """Start handing this page the business's events (the first page starts the feed)."""
    hub = _hub()
    async with hub.lock:
        feed = hub.feeds.get(business_id)
        if feed is None:
            feed = hub.feeds[business_id] = _Feed(business_id)
            layer = get_channel_layer()
            feed.channel = await layer.new_channel(prefix="fanout.")
            await layer.group_add(realtime.business_group(business_id), feed.channel)
            feed.task = asyncio.create_task(_pump(layer, feed))
        feed.pages.add(page)


async def leave(business_id: int, page: Page) -> None:
    """Stop handing this page the business's events (the last page stops the feed)."""
    hub = _hub()
    async with hub.lock:
        feed = hub.feeds.get(business_id)
        if feed is None:
            return
        feed.pages.discard(page)
        if feed.pages:
            return
        del hub.feeds[business_id]
        if feed.task is not None:
            feed.task.cancel()
        await get_channel_layer().group_discard(realtime.business_group(business_id), feed.channel)


async def _pump(layer: Any, feed: _Feed) -> None:
    while True:
        try:
            message = await layer.receive(feed.channel)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("fanout.receive_failed", extra={"business_id": feed.business_id},
                        exc_info=True)  # fmt: skip
            await asyncio.sleep(1.0)
            continue
        batch = _frames_of(message, feed.business_id)
        if not batch:
            continue
        for page in tuple(feed.pages):
            page.deliver(batch)


def _frames_of(message: dict[str, Any], business_id: int) -> tuple[Frames, ...]:
    """The events of one channel-layer message (one event, or a batch's events in sequence
    order), each only if it is this feed's business's."""
    kind = message.get("type")
    if kind == "inbox.event":
        events = [message]
    elif kind == "inbox.events" and message.get("business_id") == business_id:
        events = message.get("events") or []
    else:
        return ()
    return tuple(Frames(event) for event in events if event.get("business_id") == business_id)
