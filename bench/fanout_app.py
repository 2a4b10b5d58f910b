"""Stand-in for the dashboard's websocket consumer, for `bench/fanout.py --mode layer`.

It keeps the contract of `inbox/web/live/consumers.py` that fan-out depends on (join the
business group over the channel layer, forward every `inbox.event` as `{"type": "event", "seq",
"event", "chat", "data"}` after a `hello`, and a batch's `inbox.events` as one `batch` frame of
those) without its session auth and per-event permission checks. The HTTP side is the product's own
(`inbox.site.asgi.http`: the webhook in front of Django), so events come from the real ingest
path: webhook → stream → consumer → `inbox.web.live.realtime.publish`.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from channels.routing import ProtocolTypeRouter, URLRouter
from django.urls import path

from inbox.conversations import online
from inbox.site.asgi import http
from inbox.web.live import realtime


class StandInConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode())
        self.business_id = int(query.get("business", ["0"])[0])
        await self.channel_layer.group_add(
            realtime.business_group(self.business_id), self.channel_name
        )
        await self.accept()
        # Counted as an open inbox, or the live push renders nothing for this business.
        await sync_to_async(online.socket_open)([self.business_id], 0, self.channel_name)
        await self.send_json({"type": "hello", "seq": {}})

    async def disconnect(self, code: int) -> None:
        await sync_to_async(online.socket_closed)([self.business_id], 0, self.channel_name)
        await self.channel_layer.group_discard(
            realtime.business_group(self.business_id), self.channel_name
        )

    async def inbox_event(self, message: dict[str, Any]) -> None:
        await self.send_json(_frame(message))

    async def inbox_events(self, message: dict[str, Any]) -> None:
        """A publisher batch's events in one message: one `batch` frame, as the product sends."""
        await self.send_json({"type": "batch", "events": [_frame(e) for e in message["events"]]})


def _frame(message: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "event",
        "seq": message.get("seq"),
        "event": message.get("event"),
        "chat": message.get("chat_id"),
        "data": message.get("data", {}),
    }


application = ProtocolTypeRouter(
    {"http": http, "websocket": URLRouter([path("ws/inbox/", StandInConsumer.as_asgi())])}
)
