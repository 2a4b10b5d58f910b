"""The one place that pushes to open dashboards (Channels groups over Redis pub/sub).

Groups: one per business (its events), one per open chat view (who views and types) and one
per user (notifications). An event is sent once, with every fragment, to its business's group
(the events of one batch together, as one message in sequence order); each server process
receives it once there and gives each page its copy: the chat-list fragments, or all of them
where the page has the event's chat open (`inbox/web/fanout.py`).
Fragments are the page's own template partials (`inbox/web/fragments.py`); which events are
pushed, and when, is `inbox/web/live.py`.

Every event carries a per-business sequence number. The number and a copy of the event go into
a capped Redis log in one atomic script, so a page that sees a gap (or reconnects after a
laptop slept) asks `replay(since)` for exactly what it missed; when the log no longer reaches
back that far the page re-renders its regions instead. No silent gaps.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from channels.layers import get_channel_layer

from inbox.conversations import online
from inbox.platform.redis import ScriptCall, get_redis, run

if TYPE_CHECKING:
    from inbox.web.fragments import Fragment

log = logging.getLogger(__name__)

LOG_LENGTH = 500
LOG_TTL_SECONDS = 86400

# INCR and the log entry together: the log's order is the sequence order, whoever publishes.
_PUBLISH_SCRIPT = """
local seq = redis.call('INCR', KEYS[1])
local member = '{"seq":' .. seq .. ',' .. string.sub(ARGV[1], 2)
redis.call('ZADD', KEYS[2], seq, member)
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -(tonumber(ARGV[2]) + 1))
redis.call('EXPIRE', KEYS[2], ARGV[3])
return seq
"""


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


class _Batch(threading.local):
    bodies: list[dict[str, Any]] | None = None


_batch = _Batch()


def business_group(business_id: int) -> str:
    return f"business.{business_id}"


def chat_group(chat_id: int) -> str:
    return f"chat.{chat_id}"


def _seq_key(business_id: int) -> str:
    return f"rt:seq:{business_id}"


def _log_key(business_id: int) -> str:
    return f"rt:log:{business_id}"


def current_sequence(business_id: int) -> int:
    value = get_redis().get(_seq_key(business_id))
    return int(value) if value else 0


def _log_and_number(business_id: int, event: dict[str, Any]) -> int:
    client = get_redis()
    script = client.register_script(_PUBLISH_SCRIPT)
    raw = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return int(
        script(
            keys=[_seq_key(business_id), _log_key(business_id)],
            args=[raw, LOG_LENGTH, LOG_TTL_SECONDS],
        )
    )


def publish(
    business_id: int,
    event: str,
    data: dict[str, Any],
    chat_id: int | None = None,
    *,
    channel_id: int | None = None,
    fragments: list[Fragment] | None = None,
) -> None:
    """Number, log and send one event. Never raises: a dashboard that misses an event finds
    the gap by its sequence number and re-fetches."""
    try:
        fragments = fragments or []
        body: dict[str, Any] = {
            "event": event,
            "business_id": business_id,
            "chat_id": chat_id,
            "channel_id": channel_id,
            "data": data,
            "fragments": fragments,
        }
        if _batch.bodies is not None:
            _batch.bodies.append(body)
            return
        seq = _log_and_number(business_id, body)
        layer = get_channel_layer()
        if layer is None:
            return
        # One message per event, to the business: each server process receives it once and
        # builds the frames its pages get (inbox/web/fanout.py).
        message = {"type": "inbox.event", "seq": seq, **body}
        _group_send_all(layer, [(business_group(business_id), message)])
    except Exception:
        log.warning("realtime.publish_failed", extra={"event": event}, exc_info=True)


@contextmanager
def batched() -> Iterator[None]:
    """Publishes inside are numbered, logged and sent together at the end: one Redis pipeline
    for the numbers and the log, then one channel-layer message per business carrying its
    events in sequence order."""
    if _batch.bodies is not None:
        yield
        return
    _batch.bodies = []
    try:
        yield
    finally:
        bodies, _batch.bodies = _batch.bodies, None
        if bodies:
            _publish_all(bodies)


def _publish_all(bodies: list[dict[str, Any]]) -> None:
    try:
        client = get_redis()
        script = client.register_script(_PUBLISH_SCRIPT)
        pipe = client.pipeline(transaction=False)
        for body in bodies:
            raw = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
            business_id = body["business_id"]
            script(keys=[_seq_key(business_id), _log_key(business_id)],
                   args=[raw, LOG_LENGTH, LOG_TTL_SECONDS], client=pipe)  # fmt: skip
        seqs = pipe.execute()
        layer = get_channel_layer()
        if layer is None:
            return
        by_business: dict[int, list[dict[str, Any]]] = {}
        for body, seq in zip(bodies, seqs, strict=True):
            by_business.setdefault(body["business_id"], []).append({"seq": int(seq), **body})
        _group_send_all(
            layer,
            [(business_group(business_id), _message(business_id, events))
             for business_id, events in by_business.items()],
        )  # fmt: skip
    except Exception:
        log.warning("realtime.publish_failed", extra={"events": len(bodies)}, exc_info=True)


def _message(business_id: int, events: list[dict[str, Any]]) -> dict[str, Any]:
    """A batch's events of one business as one channel-layer message (in sequence order):
    each server process gets one message per batch, and each page one frame, instead of one
    per event (a burst of 20 chats was 20 × sockets frames)."""
    if len(events) == 1:
        return {"type": "inbox.event", **events[0]}
    return {"type": "inbox.events", "business_id": business_id, "events": events}


def skip(business_id: int, count: int = 1) -> None:
    """Move the sequence number past `count` events that were not rendered (no page of the
    business was open) and leave them out of the log: a page that reconnects with an older
    number is told the log no longer reaches back (`replay` → incomplete) and re-renders."""
    try:
        get_redis().incrby(_seq_key(business_id), count)
    except Exception:
        log.warning("realtime.skip_failed", extra={"business_id": business_id}, exc_info=True)


# KEYS: per business, its presence set and its sequence key. ARGV: now (Unix s), then per
# business the pushes to skip if no socket of it is open. Returns 1 or 0 per business: open.
_OPEN_OR_SKIP_SCRIPT = """
local out = {}
for i = 1, #KEYS, 2 do
  local j = (i + 1) / 2
  if redis.call('ZCOUNT', KEYS[i], ARGV[1], '+inf') > 0 then
    out[j] = 1
  else
    local count = tonumber(ARGV[j + 1])
    if count > 0 then
      redis.call('INCRBY', KEYS[i + 1], count)
    end
    out[j] = 0
  end
end
return out
"""


def open_or_skipped(pushes: dict[int, int]) -> set[int]:
    """Of these businesses (each with the pushes a batch has for it), those with an inbox
    socket open (`online`), to render for; the others' pushes are skipped (`skip`) in the same
    script. One round trip, which also carries what the caller's batch left pending
    (`redis.sent_together`: the consumer's timers and acknowledgement)."""
    ids = list(pushes)
    if not ids:
        return set()
    keys: list[str] = []
    for business_id in ids:
        keys += [online.online_key(business_id), _seq_key(business_id)]
    flags = run(
        ScriptCall(
            "realtime.open_or_skip",
            _OPEN_OR_SKIP_SCRIPT,
            keys,
            [repr(time.time()), *(pushes[business_id] for business_id in ids)],
        )
    )
    return {business_id for business_id, flag in zip(ids, flags, strict=True) if int(flag)}


def replay(business_id: int, since: int) -> tuple[list[dict[str, Any]], int, bool]:
    """Events after `since`, oldest first, the current sequence number, and whether the log
    still holds everything after `since` (False: the caller must re-render instead)."""
    pipe = get_redis().pipeline()
    pipe.get(_seq_key(business_id))
    pipe.zrangebyscore(_log_key(business_id), f"({since}", "+inf")
    raw_current, raw_events = pipe.execute()
    current = int(raw_current) if raw_current else 0
    events = [json.loads(raw) for raw in raw_events]
    if current <= since:
        return [], current, current == since
    complete = bool(events) and int(events[0]["seq"]) == since + 1
    return events, current, complete


def user_group(user_id: int) -> str:
    """One group per signed-in user: what only this person is told (desktop notifications)."""
    return f"user.{user_id}"


def send_to_users(user_ids: list[int], message: dict[str, Any]) -> None:
    """Send one unsequenced message to each user's open pages. Never raises: a notification
    that does not arrive leaves the page's data (sequenced and replayed) intact."""
    try:
        layer = get_channel_layer()
        if layer is None or not user_ids:
            return
        _group_send_all(layer, [(user_group(uid), message) for uid in user_ids])
    except Exception:
        log.warning("realtime.notify_failed", extra={"kind": message.get("kind")}, exc_info=True)
