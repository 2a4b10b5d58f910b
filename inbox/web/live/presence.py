"""Who has a chat open right now, so two managers do not answer the same customer unawares.

One Redis sorted set per chat: a member per open page (a socket), scored with the moment it
expires. The page's socket joins when it opens the chat, leaves when it closes or switches, and
refreshes its entry with a heartbeat; a page that vanished without a goodbye (a laptop shut)
drops out once its entry expires. Typing is not stored: the socket forwards "typing" to the
chat's other pages and they show it for a few seconds. The consumer only touches the set of a
chat the user may see (`inbox.web.live.consumers`), so presence follows chat visibility.
"""

from __future__ import annotations

import json
import time
from typing import TypedDict, cast

from inbox.platform.redis import get_redis

VIEWER_TTL_SECONDS = 45  # the page's heartbeat comes every 15 s
KEY_TTL_SECONDS = 3600


class Viewer(TypedDict):
    id: int
    name: str


def _key(chat_id: int) -> str:
    return f"presence:chat:{chat_id}"


def _member(user_id: int, name: str, connection: str) -> str:
    return json.dumps([user_id, name, connection], ensure_ascii=False)


def viewers(chat_id: int) -> list[Viewer]:
    """The managers with the chat open, each once however many tabs they have, by name."""
    client = get_redis()
    key = _key(chat_id)
    client.zremrangebyscore(key, "-inf", time.time())
    seen: dict[int, Viewer] = {}
    for raw in client.zrange(key, 0, -1):
        user_id, name, _ = json.loads(cast(bytes, raw))
        seen.setdefault(int(user_id), {"id": int(user_id), "name": str(name)})
    return sorted(seen.values(), key=lambda v: (v["name"], v["id"]))


def join(chat_id: int, user_id: int, name: str, connection: str) -> bool:
    """Mark this page as viewing the chat (or refresh it). True when the page was not listed
    yet (a new viewer, or one whose entry had expired): the others are then told."""
    client = get_redis()
    key = _key(chat_id)
    client.zremrangebyscore(key, "-inf", time.time())
    added = client.zadd(key, {_member(user_id, name, connection): time.time() + VIEWER_TTL_SECONDS})
    client.expire(key, KEY_TTL_SECONDS)
    return bool(added)


def leave(chat_id: int, user_id: int, name: str, connection: str) -> None:
    get_redis().zrem(_key(chat_id), _member(user_id, name, connection))
