"""The floor for the webhook benchmark: the least an ASGI app can do for one webhook here.

Per request it reads the body, does one `SET NX EX` (dedup on a digest of the body) and, when the
key was new, one `XADD`, then answers 200. No signature check, no JSON, no Django. Whatever the
product's webhook route costs above this is the product's own work, so `bench/ingest.py` reports
the product as a ratio to this app, measured in the same run under the same server.

    uvicorn bench.floor_app:app    |    daphne bench.floor_app:app
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import redis.asyncio as aioredis

STREAM = "bench:floor:events"
KEY_PREFIX = "bench:floor:seen:"
DEDUP_SECONDS = 86400

_client: aioredis.Redis | None = None


def _redis() -> aioredis.Redis:
    global _client
    if _client is None:
        url = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")
        _client = aioredis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
    return _client


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = b"".join(chunks)
    client = _redis()
    key = KEY_PREFIX + hashlib.blake2b(body, digest_size=16).hexdigest()
    if await client.set(key, b"1", nx=True, ex=DEDUP_SECONDS):
        await client.xadd(STREAM, {"e": body})
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"text/plain"), (b"content-length", b"2")],
        }
    )
    await send({"type": "http.response.body", "body": b"ok"})
