"""The webhook half of ingest: dedup and the durable queue (a Redis stream).

`enqueue` / `aenqueue` run inside the webhook request (the web process). Per event, one Lua
script in Redis drops a duplicate (key per channel + provider message id, kept a day) or appends
the event to the stream. The 200 goes back only after that, so an acknowledged event is in the
queue (Redis runs with an append-only file; see docs/ingest.md for the durability trade-off).
The consumer (`worker`) reads the stream as the consumer group `GROUP`.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings

from inbox.conversations.events import Event, StatusEvent
from inbox.conversations.ingest.cleaning import utf8_safe
from inbox.platform.redis import get_redis

STREAM = "ingest:events"
DEAD_LETTER_STREAM = "ingest:dead"
GROUP = "ingest"
DEDUP_SECONDS = 86400


# XADD before SET: if appending fails nothing is marked seen, so the provider's retry gets in.
_ENQUEUE_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('XADD', KEYS[2], '*', 'e', ARGV[1])
redis.call('SET', KEYS[1], '1', 'EX', ARGV[2])
return 1
"""


@dataclass(frozen=True)
class EnqueueResult:
    accepted: int
    duplicates: int


def dedup_key(event: Event) -> str:
    if isinstance(event, StatusEvent):
        # Statuses are at-least-once too; the same status for the same message is one event.
        return utf8_safe(f"seen:{event.channel_id}:{event.provider_message_id}:{event.status}")
    return utf8_safe(f"seen:{event.channel_id}:{event.provider_message_id}")


def enqueue(events: Sequence[Event], client: redis.Redis | None = None) -> EnqueueResult:
    """Dedup and queue events (synchronous callers: the sandbox page, management commands)."""
    if not events:
        return EnqueueResult(0, 0)
    client = client or get_redis()
    script = client.register_script(_ENQUEUE_SCRIPT)
    pipe = client.pipeline(transaction=False)
    for event in events:
        script(
            keys=[dedup_key(event), STREAM],
            args=[utf8_safe(event.to_json()), DEDUP_SECONDS],
            client=pipe,
        )
    results = pipe.execute()
    accepted = sum(1 for r in results if r == 1)
    return EnqueueResult(accepted, len(results) - accepted)


_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, aioredis.Redis]] = (
    weakref.WeakKeyDictionary()
)


def _async_client() -> aioredis.Redis:
    """One async client per event loop (a connection pool cannot cross loops)."""
    clients = _async_clients.setdefault(asyncio.get_running_loop(), {})
    url = settings.REDIS_URL
    if url not in clients:
        clients[url] = aioredis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
    return clients[url]


async def aenqueue(events: Sequence[Event]) -> EnqueueResult:
    """`enqueue` for the webhook endpoints: no thread hop, one round trip for the whole body."""
    if not events:
        return EnqueueResult(0, 0)
    client = _async_client()
    script = client.register_script(_ENQUEUE_SCRIPT)
    if len(events) == 1:
        # The usual body (one message): EVALSHA straight away. A pipeline would first ask the
        # server whether the script is loaded (SCRIPT EXISTS), a second round trip per webhook.
        event = events[0]
        result = await script(
            keys=[dedup_key(event), STREAM], args=[utf8_safe(event.to_json()), DEDUP_SECONDS]
        )
        return EnqueueResult(1, 0) if result == 1 else EnqueueResult(0, 1)
    pipe = client.pipeline(transaction=False)
    for event in events:
        await script(
            keys=[dedup_key(event), STREAM],
            args=[utf8_safe(event.to_json()), DEDUP_SECONDS],
            client=pipe,
        )
    results = await pipe.execute()
    accepted = sum(1 for r in results if r == 1)
    return EnqueueResult(accepted, len(results) - accepted)


def oldest_pending_age_seconds(client: redis.Redis | None = None) -> float:
    """Age of the oldest event not yet accepted (stream ids start with a ms timestamp)."""
    client = client or get_redis()
    first: Any = client.xrange(STREAM, count=1)
    if not first:
        return 0.0
    entry_id = first[0][0]
    text = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    millis = int(text.split("-")[0])
    return max(0.0, time.time() - millis / 1000)
