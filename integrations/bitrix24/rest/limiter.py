"""The client-side leaky bucket every worker process shares, kept in Redis.

Bitrix24 counts requests per portal in a leaky bucket (each request adds 1, the level drains
by `rate` per second, above `burst` it answers 503 QUERY_LIMIT_EXCEEDED). Four processes with
their own in-memory buckets would send four times the allowed rate, so the level lives in one
Redis hash and is updated by one Lua script (atomic, clocked by the Redis server's TIME so
process clocks do not matter). We run below the portal's published figures because telephony,
marketplace apps and other scripts share the same portal bucket.
"""

from __future__ import annotations

import logging
import math
import random
import time

import redis

from inbox.platform.redis import get_redis
from integrations.bitrix24.rest.errors import RateLimited

log = logging.getLogger(__name__)

# Share of the portal's published limits this integration allows itself.
RATE_HEADROOM = 0.9
BURST_HEADROOM = 0.8

_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local rate = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local level = tonumber(redis.call('HGET', KEYS[1], 'level') or '0')
local ts = tonumber(redis.call('HGET', KEYS[1], 'ts') or tostring(now))
level = math.max(0, level - math.max(0, now - ts) * rate)
local granted = 0
local wait = 0
if level + cost <= capacity then
  level = level + cost
  granted = 1
else
  wait = (level + cost - capacity) / rate
end
redis.call('HSET', KEYS[1], 'level', tostring(level), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {granted, tostring(level), tostring(wait)}
"""

_SATURATE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('HSET', KEYS[1], 'level', ARGV[1], 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""


def effective_limits(rate: float, burst: int) -> tuple[float, int]:
    """What we allow ourselves for a portal published at `rate`/s and `burst`."""
    return max(0.05, rate * RATE_HEADROOM), max(1, math.floor(burst * BURST_HEADROOM))


class LeakyBucket:
    """One portal's request bucket. `acquire()` blocks until a request may go out."""

    def __init__(
        self, key: str, rate: float, capacity: int, client: redis.Redis | None = None
    ) -> None:
        if rate <= 0 or capacity < 1:
            raise ValueError("rate must be positive and capacity at least 1")
        self.key = key
        self.rate = rate
        self.capacity = capacity
        self.redis = client or get_redis()
        self._ttl_ms = int((capacity / rate + 60) * 1000)
        self._acquire = self.redis.register_script(_ACQUIRE)
        self._saturate = self.redis.register_script(_SATURATE)

    def try_acquire(self, cost: int = 1) -> float:
        """Take `cost` from the bucket if it fits: returns 0.0, else the seconds to wait."""
        granted, _level, wait = self._acquire(
            keys=[self.key], args=[self.rate, self.capacity, cost, self._ttl_ms]
        )
        return 0.0 if int(granted) else max(0.001, float(wait))

    def acquire(self, *, max_wait: float, cost: int = 1) -> float:
        """Wait until the request fits; returns the seconds waited. Raises RateLimited
        (transient) instead of waiting longer than `max_wait`."""
        waited = 0.0
        while True:
            wait = self.try_acquire(cost)
            if wait == 0.0:
                return waited
            if waited + wait > max_wait:
                raise RateLimited(
                    "CLIENT_BUCKET_FULL", f"would wait more than {max_wait:.0f}s for a slot"
                )
            # A little jitter so processes woken together do not collide on the next slot.
            pause = wait * (1 + random.random() * 0.1)
            time.sleep(pause)
            waited += pause

    def saturate(self) -> None:
        """The portal said 503 although we counted room: assume it is full, so every worker
        slows down instead of retrying into the limit."""
        self._saturate(keys=[self.key], args=[self.capacity, self._ttl_ms])
        log.info("bitrix24.bucket_saturated", extra={"bucket": self.key})

    def level(self) -> float:
        """The current level (drained to now), for tests and metrics."""
        raw = self.redis.hmget(self.key, ["level", "ts"])
        if raw[0] is None or raw[1] is None:
            return 0.0
        seconds, micros = self.redis.time()
        now = seconds + micros / 1_000_000
        return max(0.0, float(raw[0]) - max(0.0, now - float(raw[1])) * self.rate)


def portal_bucket(portal_host: str, rate: float, burst: int) -> LeakyBucket:
    """The bucket for one portal (businesses on the same portal share it), below its limits."""
    our_rate, our_burst = effective_limits(rate, burst)
    return LeakyBucket(f"b24:bucket:{portal_host}", our_rate, our_burst)
