"""The inbox page's websocket: thin, and permission-checked on connect and on every subscription.

One socket per open page. On connect the consumer joins the feeds of the user's businesses
(`inbox.web.live.fanout`: one per business per process) and the group of the chat named in
`?chat=` (when the user may see it), and says hello with each business's current sequence
number. It forwards events whose channel the user may see, as frames the feed serialized once
for every page; for any other it forwards only the sequence number (`skip`), so the page never
mistakes the filtering for a gap. Events go out in order from the socket's own task, so a slow
socket delays only itself. What a user may see is re-read every `VISIBILITY_TTL` seconds (the
sockets of one user in one process share a fresh read), so a membership removed while a page
is open stops the pushes within that time. While a socket is
open its user counts as online for auto-assignment (`inbox.conversations.online`, refreshed
every `online.HEARTBEAT_SECONDS`).

However the consumer ends (a disconnect, an error in any handler), `_release` cancels its
tasks and takes it off the online set and the chat's viewers, so presence never outlives the
socket. A frame the consumer fails on gets an error frame; any other failure closes the socket
(1011) cleanly, and the page reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from inbox.conversations import access, names, online, reading
from inbox.conversations.models import Chat
from inbox.web import dashboard
from inbox.web.live import fanout, presence, realtime
from inbox.web.params import parse_id

log = logging.getLogger(__name__)

P = ParamSpec("P")
R = TypeVar("R")

VISIBILITY_TTL = 30.0
TYPING_MIN_INTERVAL = 1.0
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
CLOSE_SERVER_ERROR = 1011
SHARED_VISIBILITY_SECONDS = 1.0
MAX_BATCH = 200

Visibility = tuple[set[int], set[int]]
# Per event loop and user: the latest visibility read and when it started, so the tabs of one
# user (or a herd of sockets refreshing together) share one query.
_recent_visibility: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[int, tuple[float, asyncio.Future[Visibility]]]
] = weakref.WeakKeyDictionary()


def _db(func: Callable[P, R]) -> Callable[P, Awaitable[R]]:
    """channels' database_sync_to_async (closes stale connections), typed."""
    return database_sync_to_async(func)  # type: ignore[no-any-return]


class InboxConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.user: Any = None
        self.chat_id: int | None = None
        # The name the open chat's business shows of this user ("Also viewing: …").
        self.shown_name = ""
        self.businesses: set[int] = set()
        self.channels_visible: set[int] = set()
        self.heartbeat: asyncio.Task[None] | None = None
        self.sender: asyncio.Task[None] | None = None
        self.outbox: asyncio.Queue[tuple[fanout.Frames, ...]] = asyncio.Queue()
        self.joined: set[int] = set()
        self.in_user_group = False
        self.present = False
        self.released = False
        self.typing_at = 0.0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """The consumer's whole life: whatever ends it, `_release` runs. An exception in a
        handler closes the socket with 1011 instead of leaving it to the server."""
        try:
            await super().__call__(scope, receive, send)
        except Exception:
            log.exception("ws.consumer_failed", extra={"user_id": getattr(self.user, "pk", None)})
            with contextlib.suppress(Exception):
                await self.close(code=CLOSE_SERVER_ERROR)
        finally:
            await self._release()

    async def connect(self) -> None:
        self.user = self.scope.get("user")
        if self.user is None or not self.user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        await self._load_visibility()
        if not self.businesses:
            await self.close(code=CLOSE_FORBIDDEN)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode(errors="replace"))
        requested = query.get("chat", [""])[0]
        chat_id = None
        if requested:
            chat_id = parse_id(requested)
            if chat_id is None or not await self._can_see(chat_id):
                log.info("ws.denied", extra={"user_id": self.user.pk, "chat_id": requested[:40]})
                await self.close(code=CLOSE_FORBIDDEN)
                return
        self.sender = asyncio.create_task(self._send_events())
        for business_id in self.businesses:
            await fanout.join(business_id, self)
            self.joined.add(business_id)
        self.in_user_group = True
        await self.channel_layer.group_add(realtime.user_group(self.user.pk), self.channel_name)
        if chat_id is not None:
            await self._subscribe(chat_id)
        await self.accept()
        self.present = True
        await self._mark_present()
        self.heartbeat = asyncio.create_task(self._keep_present())
        await self.send_json({"type": "hello", "seq": await self._sequences()})

    async def disconnect(self, code: int) -> None:
        await self._release()

    async def _release(self) -> None:
        """Undo what the socket started, once: its tasks first (nothing may re-mark it
        online), then each registration, every step tried even when one before it fails."""
        if self.released:
            return
        self.released = True
        for task in (self.heartbeat, self.sender):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self.present:
            await self._quietly(
                sync_to_async(online.socket_closed, thread_sensitive=False),
                set(self.businesses), int(self.user.pk), self.channel_name,
            )  # fmt: skip
        if self.in_user_group:
            await self._quietly(
                self.channel_layer.group_discard, realtime.user_group(self.user.pk),
                self.channel_name,
            )  # fmt: skip
        for business_id in self.joined:
            await self._quietly(fanout.leave, business_id, self)
        self.joined = set()
        await self._quietly(self._unsubscribe)

    async def _quietly(self, step: Callable[..., Awaitable[Any]], *args: Any) -> None:
        try:
            await step(*args)
        except Exception:
            log.warning("ws.release_step_failed", exc_info=True)

    async def receive(
        self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: Any
    ) -> None:
        """A frame that is not a JSON object (binary, broken or absurdly nested JSON) gets an
        error reply and is otherwise ignored: one misbehaving client must not crash its socket
        with a 1011 and a traceback in the log."""
        try:
            content = json.loads(text_data) if text_data is not None else None
        except (ValueError, RecursionError):
            content = None
        if not isinstance(content, dict):
            await self.send_json({"type": "error", "error": "bad_frame"})
            return
        try:
            await self.receive_json(content, **kwargs)
        except Exception:
            log.warning("ws.frame_failed", extra={"user_id": self.user.pk}, exc_info=True)
            await self.send_json({"type": "error", "error": "server_error"})

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """`{"action": "subscribe", "chat": ID}` switches the open chat; `unsubscribe` closes
        it. Every subscription is checked against the user's access, like a page load."""
        if not isinstance(content, dict):
            return
        action = content.get("action")
        if action == "subscribe":
            chat_id = parse_id(content.get("chat"))
            if chat_id is None or not await self._can_see(chat_id):
                await self.send_json({"type": "error", "error": "not_found"})
                return
            await self._unsubscribe()
            await self._subscribe(chat_id)
            await self.send_json({"type": "subscribed", "chat": chat_id})
        elif action == "unsubscribe":
            await self._unsubscribe()
            await self.send_json({"type": "unsubscribed"})
        elif action == "heartbeat" and self.chat_id is not None:
            if await self._join(self.chat_id):
                await self._tell_viewers(self.chat_id)
        elif action == "typing" and self.chat_id is not None:
            now = time.monotonic()
            if now - self.typing_at < TYPING_MIN_INTERVAL:
                return
            self.typing_at = now
            await self.channel_layer.group_send(
                realtime.chat_group(self.chat_id),
                {"type": "presence.event", "kind": "typing", "chat_id": self.chat_id,
                 "user": {"id": self.user.pk, "name": self._name()}},
            )  # fmt: skip
        elif action == "read":
            # The page has this chat open and saw a new message: this manager's marker moves.
            chat_id = parse_id(content.get("chat"))
            if chat_id is None or chat_id != self.chat_id or not await self._mark_read(chat_id):
                await self.send_json({"type": "error", "error": "not_found"})

    async def presence_event(self, message: dict[str, Any]) -> None:
        """Who views or types in the open chat. Only a page subscribed to that chat (checked
        against the user's access when it subscribed, and again as visibility is re-read) gets
        it, so another business's managers, or those kept off the chat's channel, never do."""
        if message.get("chat_id") != self.chat_id or self.chat_id is None:
            return
        await self._refresh_visibility_if_stale()
        if message.get("chat_id") != self.chat_id:
            return
        if message["kind"] == "typing":
            await self.send_json({"type": "typing", "chat": self.chat_id, "user": message["user"]})
        else:
            await self.send_json(
                {"type": "presence", "chat": self.chat_id, "viewers": message["viewers"]}
            )

    async def inbox_event(self, message: dict[str, Any]) -> None:
        """Ignored: events come through the business's feed (`deliver`). A publisher of the
        previous release (mid-deploy) still sends a copy to the chat's group; dropping it here
        keeps the socket alive, and the feed's copy of the same event arrives anyway."""

    def deliver(self, batch: tuple[fanout.Frames, ...]) -> None:
        """Events of a business this page joined (`inbox.web.live.fanout`), one publisher batch's;
        sent by `_send_events`."""
        self.outbox.put_nowait(batch)

    async def _send_events(self) -> None:
        """Forward events in order. The events of one publisher batch (a burst the ingest
        consumer stored together) go out as one `batch` frame of the same prebuilt frames, and
        so does everything queued behind it when the socket is behind: one send instead of
        dozens (each costs the server far more than its bytes), and nothing waits for it; the
        page applies them in order as if they came one by one."""
        while True:
            queued = list(await self.outbox.get())
            while not self.outbox.empty() and len(queued) < MAX_BATCH:
                queued.extend(self.outbox.get_nowait())
            texts: list[str] = []
            for frames in queued:
                try:
                    text = await self._frame_for(frames)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.warning("ws.forward_failed", extra={"seq": frames.seq}, exc_info=True)
                    continue
                if text is not None:
                    texts.append(text)
            for start in range(0, len(texts), MAX_BATCH):
                await self._send_texts(texts[start : start + MAX_BATCH])

    async def _send_texts(self, texts: list[str]) -> None:
        if len(texts) == 1:
            await self.send(text_data=texts[0])
        elif texts:
            await self.send(text_data='{"type": "batch", "events": [' + ", ".join(texts) + "]}")

    async def _frame_for(self, frames: fanout.Frames) -> str | None:
        """This page's frame of an event: None when it gets nothing (closed for it)."""
        business_id = frames.business_id
        if business_id not in self.businesses:
            return None
        await self._refresh_visibility_if_stale()
        if business_id not in self.businesses:
            await self.close(code=CLOSE_FORBIDDEN)
            return None
        if frames.channel_id is not None and frames.channel_id not in self.channels_visible:
            return frames.skip_text
        # The page with the event's chat open gets every fragment; the others the list's.
        full = frames.chat_id is not None and frames.chat_id == self.chat_id
        if frames.per_user:
            out = frames.frame(full=full)
            out["pending"] = await self._pending()
            return fanout.dumps(out)
        return frames.full_text if full else frames.list_text

    async def inbox_notify(self, message: dict[str, Any]) -> None:
        """A desktop notification for this user (inbox/web/notify.py chose them); forwarded
        only while they still see its business and channel."""
        await self._refresh_visibility_if_stale()
        if (
            message.get("business_id") not in self.businesses
            or message.get("channel_id") not in self.channels_visible
        ):
            return
        await self.send_json(
            {
                "type": "notify",
                "kind": message["kind"],
                "business": message["business_id"],
                "chat": message["chat_id"],
                "title": message["title"],
                "body": message["body"],
                "url": message["url"],
            }
        )

    # --- helpers ---------------------------------------------------------------------------

    async def _keep_present(self) -> None:
        """Online for auto-assignment while this socket lives (the businesses it still sees)."""
        while True:
            await asyncio.sleep(online.HEARTBEAT_SECONDS)
            try:
                await self._mark_present()
            except Exception:  # a Redis blip: the next beat tries again, the entry's TTL runs
                log.warning("ws.heartbeat_failed", exc_info=True)

    async def _mark_present(self) -> None:
        await sync_to_async(online.socket_open, thread_sensitive=False)(
            set(self.businesses), int(self.user.pk), self.channel_name
        )

    async def _subscribe(self, chat_id: int) -> None:
        self.shown_name = await self._name_in(chat_id)
        await self.channel_layer.group_add(realtime.chat_group(chat_id), self.channel_name)
        self.chat_id = chat_id
        await self._join(chat_id)
        await self._tell_viewers(chat_id)

    async def _unsubscribe(self) -> None:
        if self.chat_id is None:
            return
        chat_id, self.chat_id = self.chat_id, None
        await self.channel_layer.group_discard(realtime.chat_group(chat_id), self.channel_name)
        await sync_to_async(presence.leave)(chat_id, self.user.pk, self._name(), self.channel_name)
        await self._tell_viewers(chat_id)

    def _name(self) -> str:
        return self.shown_name or names.default_name(self.user)

    @_db
    def _name_in(self, chat_id: int) -> str:
        business_id = (
            Chat.objects.filter(pk=chat_id).values_list("channel__business_id", flat=True).first()
        )
        if business_id is None:
            return names.default_name(self.user)
        return names.display_name(self.user, business_id)

    async def _join(self, chat_id: int) -> bool:
        joined: bool = await sync_to_async(presence.join)(
            chat_id, self.user.pk, self._name(), self.channel_name
        )
        return joined

    async def _tell_viewers(self, chat_id: int) -> None:
        viewers = await sync_to_async(presence.viewers)(chat_id)
        await self.channel_layer.group_send(
            realtime.chat_group(chat_id),
            {"type": "presence.event", "kind": "viewers", "chat_id": chat_id, "viewers": viewers},
        )

    async def _load_visibility(self) -> None:
        first = not self.businesses and not self.channels_visible
        businesses, channels = await self._shared_visibility()
        self.businesses = businesses
        self.channels_visible = channels
        self.visibility_at = time.monotonic()
        if first:
            # Spread the re-reads of sockets opened together over the interval.
            self.visibility_at -= random.uniform(0, VISIBILITY_TTL / 3)

    async def _shared_visibility(self) -> Visibility:
        """This user's visibility, read at most once per `SHARED_VISIBILITY_SECONDS` per
        process (their other sockets' read, started that recently, is as fresh)."""
        recent = _recent_visibility.setdefault(asyncio.get_running_loop(), {})
        user_id = int(self.user.pk)
        now = time.monotonic()
        known = recent.get(user_id)
        if known is not None and now - known[0] < SHARED_VISIBILITY_SECONDS:
            businesses, channels = await asyncio.shield(known[1])
            return set(businesses), set(channels)
        future: asyncio.Future[Visibility] = asyncio.ensure_future(self._visibility())
        recent[user_id] = (now, future)
        try:
            return await asyncio.shield(future)
        except Exception:
            recent.pop(user_id, None)
            raise

    async def _refresh_visibility_if_stale(self) -> None:
        if time.monotonic() - self.visibility_at < VISIBILITY_TTL:
            return
        await self._load_visibility()
        if self.chat_id is not None and not await self._can_see(self.chat_id):
            await self._unsubscribe()

    @_db
    def _visibility(self) -> tuple[set[int], set[int]]:
        return set(access.visible_business_ids(self.user)), access.visible_channel_ids(self.user)

    @_db
    def _can_see(self, chat_id: int) -> bool:
        return access.can_see_chat(self.user, chat_id)

    @_db
    def _mark_read(self, chat_id: int) -> bool:
        if not access.can_see_chat(self.user, chat_id):
            return False
        reading.mark_read(int(self.user.pk), chat_id)
        return True

    @_db
    def _pending(self) -> int:
        return dashboard.pending_count(self.user)

    @_db
    def _sequences(self) -> dict[str, int]:
        return {str(b): realtime.current_sequence(b) for b in sorted(self.businesses)}
