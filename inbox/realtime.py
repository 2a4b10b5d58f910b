"""The one place that pushes to open dashboards (Channels groups over Redis pub/sub).

Groups: one per business (chat list, notifications) and one per open chat view. Every event
carries a per-business sequence number from Redis, so a page that sees a gap (or reconnects)
knows to re-fetch instead of silently missing something.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from typing import TYPE_CHECKING, Any

from channels.layers import get_channel_layer
from django.db import transaction

from inbox.redis import get_redis

if TYPE_CHECKING:
    from inbox.models import Chat

log = logging.getLogger(__name__)


PUBLISH_TIMEOUT_SECONDS = 5.0

_loop: asyncio.AbstractEventLoop | None = None
_loop_pid = 0
_loop_lock = threading.Lock()


def _publisher_loop() -> asyncio.AbstractEventLoop:
    """One event loop per process, in a daemon thread, for sends from synchronous code (the
    ingest consumer, Celery tasks, views). `async_to_sync` from a plain thread starts a thread,
    an event loop and a new Redis connection for every call; this keeps one of each. Recreated
    after a fork (Celery's prefork children)."""
    global _loop, _loop_pid
    with _loop_lock:
        if _loop is None or _loop_pid != os.getpid() or _loop.is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="realtime-publisher", daemon=True
            ).start()
            _loop, _loop_pid = loop, os.getpid()
        return _loop


def _group_send_all(layer: Any, sends: list[tuple[str, dict[str, Any]]]) -> None:
    """Send to every group in one hop to the publisher loop; waits until Redis took them."""

    async def send_all() -> None:
        await asyncio.gather(*(layer.group_send(group, message) for group, message in sends))

    future = asyncio.run_coroutine_threadsafe(send_all(), _publisher_loop())
    future.result(timeout=PUBLISH_TIMEOUT_SECONDS)


def business_group(business_id: int) -> str:
    return f"business.{business_id}"


def chat_group(chat_id: int) -> str:
    return f"chat.{chat_id}"


def next_sequence(business_id: int) -> int:
    return int(get_redis().incr(f"rt:seq:{business_id}"))


def current_sequence(business_id: int) -> int:
    value = get_redis().get(f"rt:seq:{business_id}")
    return int(value) if value else 0


def publish(business_id: int, event: str, data: dict[str, Any], chat_id: int | None = None) -> None:
    """Send one event to the business group (and the chat group when given). Never raises:
    a dashboard that misses an event finds the gap by its sequence number and re-fetches."""
    try:
        layer = get_channel_layer()
        if layer is None:
            return
        message = {
            "type": "inbox.event",
            "event": event,
            "seq": next_sequence(business_id),
            "business_id": business_id,
            "chat_id": chat_id,
            "data": data,
        }
        sends = [(business_group(business_id), message)]
        if chat_id is not None:
            sends.append((chat_group(chat_id), message))
        _group_send_all(layer, sends)
    except Exception:
        log.warning("realtime.publish_failed", extra={"event": event}, exc_info=True)


def chat_changed(chat_id: int) -> None:
    """A chat's owner, version or messages changed: refresh its row and open views."""
    from inbox.models import Chat

    chat = Chat.objects.select_related("channel").filter(pk=chat_id).first()
    if chat is None:
        return
    publish(
        chat.channel.business_id,
        "chat.changed",
        {"owner": chat.owner, "version": chat.version},
        chat_id=chat.pk,
    )


def chat_changed_on_commit(chat_id: int) -> None:
    transaction.on_commit(lambda: chat_changed(chat_id), robust=True)


def message_changed(message_id: int) -> None:
    """A message was added or changed (status, transcript, edit): refresh it where shown."""
    from inbox.models import Message

    message = Message.objects.select_related("channel").filter(pk=message_id).first()
    if message is None:
        return
    publish(
        message.channel.business_id,
        "message.changed",
        {"message_id": message.pk, "status": message.status, "kind": message.kind},
        chat_id=message.chat_id,
    )


def message_created_on_commit(message_id: int) -> None:
    transaction.on_commit(lambda: message_changed(message_id), robust=True)


def message_changed_on_commit(message_id: int) -> None:
    transaction.on_commit(lambda: message_changed(message_id), robust=True)


def handoff_created(handoff_id: int) -> None:
    """A chat now waits for a human: every open dashboard of the business is notified."""
    from inbox.models import Handoff

    handoff = Handoff.objects.select_related("chat__channel").filter(pk=handoff_id).first()
    if handoff is None:
        return
    publish(
        handoff.chat.channel.business_id,
        "handoff.created",
        {"handoff_id": handoff.pk, "reason": handoff.reason},
        chat_id=handoff.chat_id,
    )


def handoff_created_on_commit(handoff_id: int) -> None:
    transaction.on_commit(lambda: handoff_created(handoff_id), robust=True)


def publish_turn(chat: Chat, *, running: bool) -> None:
    """Show or hide "the assistant is preparing a reply" on the chat."""
    publish(
        chat.channel.business_id, "turn.running" if running else "turn.done", {}, chat_id=chat.pk
    )
