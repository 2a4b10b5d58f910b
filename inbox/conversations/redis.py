"""The shared Redis connection for dedup, debounce, bot-sent ids, breaker and limiter state."""

from __future__ import annotations

import os

import redis
from django.conf import settings

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
