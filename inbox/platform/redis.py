"""The shared Redis connection for dedup, debounce, bot-sent ids, breaker and limiter state,
and the one way to send several scripts in one round trip (`sent_together`)."""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import Any

import redis
from django.conf import settings

log = logging.getLogger(__name__)

_clients: dict[tuple[int, str], redis.Redis] = {}


def get_redis() -> redis.Redis:
    """One client (and connection pool) per process and URL. Building a client costs more
    than a round trip (its response-callback table), so it is never built per call; a forked
    child (Celery prefork) gets its own."""
    key = (os.getpid(), settings.REDIS_URL)
    client = _clients.get(key)
    if client is None:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_timeout=5, socket_connect_timeout=2, health_check_interval=30
        )
        _clients[key] = client
    return client


@dataclass
class ScriptCall:
    """A Lua script with its keys and arguments. `robust`: an error of this script alone (not
    of the connection) is logged under `name` instead of raised, as for an on-commit hook
    that must not stop the work after it."""

    name: str
    script: str
    keys: Sequence[Any]
    args: Sequence[Any]
    robust: bool = False


class _Pending(threading.local):
    calls: list[ScriptCall] | None = None


_pending = _Pending()


@cache
def _sha(script: str) -> str:
    return hashlib.sha1(script.encode()).hexdigest()  # noqa: S324 - Redis names scripts so


@contextmanager
def sent_together() -> Iterator[None]:
    """Scripts given to `run_later` inside the block wait and go to Redis in one pipeline:
    with the next `run` (whose reply someone reads), or at the block's end, in the order they
    were given. The ingest consumer's batch starts its debounce timers, acknowledges its
    entries and asks which dashboards are open in one round trip instead of three: each
    round trip costs the consumer a sleep and a wake-up (docs/performance.md). Nested
    blocks: the outermost sends. What is pending is sent even when the block raises."""
    if _pending.calls is not None:
        yield
        return
    _pending.calls = []
    try:
        yield
    finally:
        calls, _pending.calls = _pending.calls, None
        if calls:
            _send(calls)


def run_later(call: ScriptCall) -> None:
    """Run the script, inside `sent_together` with the next round trip; at once elsewhere."""
    if _pending.calls is None:
        _send([call])
    else:
        _pending.calls.append(call)


def run(call: ScriptCall) -> Any:
    """Run the script now and return its reply; what `run_later` left pending goes first, in
    the same round trip."""
    pending = _pending.calls
    if not pending:
        return _send([call])[-1]
    calls = [*pending, call]
    pending.clear()
    return _send(calls)[-1]


def _send(calls: list[ScriptCall]) -> list[Any]:
    """EVALSHA each in one pipeline (redis-py's own script pipelining asks SCRIPT EXISTS
    first: a round trip more). A script Redis no longer holds (restarted, flushed) is sent
    again with its source."""
    client = get_redis()
    if len(calls) == 1:
        call = calls[0]
        try:
            replies: list[Any] = [
                client.evalsha(_sha(call.script), len(call.keys), *call.keys, *call.args)
            ]
        except redis.exceptions.NoScriptError:
            replies = [_with_source(client, call)]
        except redis.ResponseError as exc:
            replies = [exc]
    else:
        pipe = client.pipeline(transaction=False)
        for call in calls:
            pipe.evalsha(_sha(call.script), len(call.keys), *call.keys, *call.args)
        replies = pipe.execute(raise_on_error=False)
        replies = [
            _with_source(client, call)
            if isinstance(reply, redis.exceptions.NoScriptError)
            else reply
            for call, reply in zip(calls, replies, strict=True)
        ]
    for call, reply in zip(calls, replies, strict=True):
        if isinstance(reply, redis.ResponseError):
            if not call.robust:
                raise reply
            log.error("redis.script_failed", extra={"script": call.name}, exc_info=reply)
    return replies


def _with_source(client: redis.Redis, call: ScriptCall) -> Any:
    try:
        return client.eval(call.script, len(call.keys), *call.keys, *call.args)
    except redis.ResponseError as exc:
        return exc
