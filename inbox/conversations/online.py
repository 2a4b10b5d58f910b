"""Who is online: which members of a business have an inbox page open right now.

The web layer writes it (`inbox/web/live/consumers.py`: on connect, every `HEARTBEAT_SECONDS` while
the socket is open, and on disconnect); the core reads it (`inbox/conversations/auto_assign.py`).
This module is the one place that knows the key format, so neither side imports the other.

Key format, one Redis sorted set per business:

    inbox:online:<business id>    member "<user id>:<socket name>", score = expiry (unix s)

A member is online while at least one of their sockets has a score in the future. A socket
that vanishes without a disconnect (a killed server) drops out after `TTL_SECONDS`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from inbox.platform.redis import get_redis

HEARTBEAT_SECONDS = 20.0
TTL_SECONDS = 60.0


def online_key(business_id: int) -> str:
    return f"inbox:online:{business_id}"


def _member(user_id: int, socket: str) -> str:
    return f"{user_id}:{socket}"


def socket_open(business_ids: Iterable[int], user_id: int, socket: str) -> None:
    """Mark this socket (a channel-layer name) online for each business; also the heartbeat."""
    now = time.time()
    pipe = get_redis().pipeline()
    for business_id in business_ids:
        key = online_key(business_id)
        pipe.zadd(key, {_member(user_id, socket): now + TTL_SECONDS})
        pipe.zremrangebyscore(key, "-inf", now)
        pipe.expire(key, int(TTL_SECONDS * 2))
    pipe.execute()


def socket_closed(business_ids: Iterable[int], user_id: int, socket: str) -> None:
    pipe = get_redis().pipeline()
    for business_id in business_ids:
        pipe.zrem(online_key(business_id), _member(user_id, socket))
    pipe.execute()


def online_user_ids(business_id: int) -> set[int]:
    """Users with at least one live inbox socket for this business."""
    members = get_redis().zrangebyscore(online_key(business_id), time.time(), "+inf")
    users: set[int] = set()
    for raw in members:
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        user_id, _, _ = text.partition(":")
        if user_id.isdigit():
            users.add(int(user_id))
    return users


def any_socket_open(business_ids: Iterable[int]) -> set[int]:
    """The businesses of these that have at least one live inbox socket (one round trip): the
    live push renders nothing for the others. A crashed socket counts until its entry expires."""
    ids = list(business_ids)
    if not ids:
        return set()
    now = time.time()
    pipe = get_redis().pipeline(transaction=False)
    for business_id in ids:
        pipe.zcount(online_key(business_id), now, "+inf")
    return {b for b, count in zip(ids, pipe.execute(), strict=True) if int(count) > 0}
