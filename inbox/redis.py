"""The shared Redis connection for dedup, debounce, bot-sent ids, breaker and limiter state."""

from __future__ import annotations

from functools import cache

import redis
from django.conf import settings


@cache
def _pool(url: str) -> redis.ConnectionPool:
    return redis.ConnectionPool.from_url(
        url, socket_timeout=5, socket_connect_timeout=2, health_check_interval=30
    )


def get_redis() -> redis.Redis:
    """A client on a per-process pool (safe across Celery prefork children: pools are per pid)."""
    return redis.Redis(connection_pool=_pool(settings.REDIS_URL))
