"""Circuit breakers and admission control for model replicas, shared by every worker via Redis.

Breaker per replica (one Redis hash, Lua scripts, Redis's clock so workers on different hosts
agree): CLOSED counts consecutive failures and opens after `failures`; OPEN refuses everything
until `cooldown` has passed; then the first caller becomes the one probe (HALF_OPEN) while all
others are still refused; the probe's success closes the breaker, its failure re-opens it. A
probe whose worker died gives its turn away after `probe_seconds`.

A configuration error (the server answers 401/403/404/400/422: wrong key, unknown model, a
prompt over its context, a schema it refuses) is not a flaky replica: `trip` opens the breaker
at once and stores the cause, which the alert and the handoff card name; it stays open (one
probe per cool-down) until a request succeeds, which clears the cause.

Admission per replica (one sorted set of leases scored by expiry): at most `limit` requests in
flight across all workers; a lease is released when the request ends, or expires by itself if
its worker dies, so a crash never leaks capacity.

`NullGuard` has the same interface with no limits and breakers that never open: the evaluation
uses it to measure the model itself, not the resilience layer.
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

import redis

CLOSED, HALF_OPEN, OPEN = "closed", "half_open", "open"
STATE_VALUES = {CLOSED: 0, HALF_OPEN: 1, OPEN: 2}

_ALLOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HGET', KEYS[1], 'state') or 'closed'
if state == 'closed' then return {'closed', 'normal'} end
if state == 'open' then
  local opened = tonumber(redis.call('HGET', KEYS[1], 'opened_at') or '0')
  if now - opened < tonumber(ARGV[1]) then return {'open', ''} end
  redis.call('HSET', KEYS[1], 'state', 'half_open', 'probe_until', now + tonumber(ARGV[2]))
  redis.call('EXPIRE', KEYS[1], 86400)
  return {'half_open', 'probe'}
end
local probe_until = tonumber(redis.call('HGET', KEYS[1], 'probe_until') or '0')
if now >= probe_until then
  redis.call('HSET', KEYS[1], 'probe_until', now + tonumber(ARGV[2]))
  return {'half_open', 'probe'}
end
return {'half_open', ''}
"""

_SUCCESS = """
redis.call('HSET', KEYS[1], 'state', 'closed', 'failures', 0)
redis.call('HDEL', KEYS[1], 'cause')
redis.call('EXPIRE', KEYS[1], 86400)
return 'closed'
"""

_FAILURE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local state = redis.call('HGET', KEYS[1], 'state') or 'closed'
redis.call('EXPIRE', KEYS[1], 86400)
if state == 'open' then return 'open' end
if state == 'half_open' then
  if ARGV[2] ~= 'probe' then return 'half_open' end
  redis.call('HSET', KEYS[1], 'state', 'open', 'opened_at', now)
  return 'open'
end
local failures = redis.call('HINCRBY', KEYS[1], 'failures', 1)
if failures >= tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 'state', 'open', 'opened_at', now)
  return 'open'
end
return 'closed'
"""

_TRIP = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('HSET', KEYS[1], 'state', 'open', 'opened_at', now, 'cause', ARGV[1])
redis.call('EXPIRE', KEYS[1], 86400)
return 'open'
"""

_RELEASE_PROBE = """
if redis.call('HGET', KEYS[1], 'state') == 'half_open' then
  redis.call('HSET', KEYS[1], 'probe_until', 0)
end
return 1
"""

_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
  redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 60)
  return 1
end
return 0
"""

_COUNT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
return redis.call('ZCOUNT', KEYS[1], '(' .. now, '+inf')
"""


def replica_id(base_url: str) -> str:
    """A short stable id for a base URL (Redis keys); credentials in the URL never leak."""
    return hashlib.sha256(base_url.encode()).hexdigest()[:16]


def replica_label(base_url: str) -> str:
    """host:port/path for logs and metric labels, without any user:password@."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{host}{port}{parts.path}".rstrip("/")


@dataclass(frozen=True)
class Permit:
    replica: str
    probe: bool


@dataclass(frozen=True)
class Lease:
    replica: str
    token: str


class Guard(Protocol):
    def allow(self, replica: str) -> Permit | None: ...
    def succeeded(self, permit: Permit) -> str: ...
    def failed(self, permit: Permit) -> str: ...
    def trip(self, permit: Permit, cause: str) -> str: ...
    def cause(self, replica: str) -> str: ...
    def give_back(self, permit: Permit) -> None: ...
    def state(self, replica: str) -> str: ...
    def acquire(self, replica: str) -> Lease | None: ...
    def release(self, lease: Lease) -> None: ...
    def in_flight(self, replica: str) -> int: ...


class RedisGuard:
    """Breakers and admission for replicas, in Redis (see the module docstring)."""

    def __init__(
        self,
        client: redis.Redis,
        *,
        failures: int,
        cooldown_seconds: float,
        max_in_flight: int,
        lease_seconds: float,
        probe_seconds: float | None = None,
        prefix: str = "llm",
    ) -> None:
        self.redis = client
        self.failures = max(1, failures)
        self.cooldown = cooldown_seconds
        self.max_in_flight = max(1, max_in_flight)
        self.lease_seconds = lease_seconds
        self.probe_seconds = probe_seconds if probe_seconds is not None else lease_seconds
        self.prefix = prefix
        self._allow = client.register_script(_ALLOW)
        self._success = client.register_script(_SUCCESS)
        self._failure = client.register_script(_FAILURE)
        self._trip = client.register_script(_TRIP)
        self._release_probe = client.register_script(_RELEASE_PROBE)
        self._acquire = client.register_script(_ACQUIRE)
        self._count = client.register_script(_COUNT)

    def _breaker_key(self, replica: str) -> str:
        return f"{self.prefix}:breaker:{replica_id(replica)}"

    def _inflight_key(self, replica: str) -> str:
        return f"{self.prefix}:inflight:{replica_id(replica)}"

    # breaker
    def allow(self, replica: str) -> Permit | None:
        _state, kind = self._allow(
            keys=[self._breaker_key(replica)], args=[self.cooldown, self.probe_seconds]
        )
        if not kind:
            return None
        return Permit(replica, probe=(kind in (b"probe", "probe")))

    def succeeded(self, permit: Permit) -> str:
        return _text(self._success(keys=[self._breaker_key(permit.replica)]))

    def failed(self, permit: Permit) -> str:
        return _text(
            self._failure(
                keys=[self._breaker_key(permit.replica)],
                args=[self.failures, "probe" if permit.probe else "normal"],
            )
        )

    def trip(self, permit: Permit, cause: str) -> str:
        """Open the breaker now, whatever its count: the replica is misconfigured (`cause`)."""
        return _text(self._trip(keys=[self._breaker_key(permit.replica)], args=[cause[:300]]))

    def cause(self, replica: str) -> str:
        """Why the breaker was tripped open ("" when it opened on failures, or is closed)."""
        raw = self.redis.hget(self._breaker_key(replica), "cause")
        return _text(raw) if raw else ""

    def give_back(self, permit: Permit) -> None:
        """An unused probe (no admission slot): let the next caller probe at once."""
        if permit.probe:
            self._release_probe(keys=[self._breaker_key(permit.replica)])

    def state(self, replica: str) -> str:
        raw = self.redis.hget(self._breaker_key(replica), "state")
        return _text(raw) if raw else CLOSED

    # admission
    def acquire(self, replica: str) -> Lease | None:
        token = uuid.uuid4().hex
        ok = self._acquire(
            keys=[self._inflight_key(replica)],
            args=[self.max_in_flight, self.lease_seconds, token],
        )
        return Lease(replica, token) if int(ok) == 1 else None

    def release(self, lease: Lease) -> None:
        self.redis.zrem(self._inflight_key(lease.replica), lease.token)

    def in_flight(self, replica: str) -> int:
        return int(self._count(keys=[self._inflight_key(replica)]))


class NullGuard:
    """No breaker, no admission limit: every call goes through (evaluation, benchmarks)."""

    def __init__(self) -> None:
        self._in_flight: dict[str, int] = {}

    def allow(self, replica: str) -> Permit | None:
        return Permit(replica, probe=False)

    def succeeded(self, permit: Permit) -> str:
        return CLOSED

    def failed(self, permit: Permit) -> str:
        return CLOSED

    def trip(self, permit: Permit, cause: str) -> str:
        return CLOSED

    def cause(self, replica: str) -> str:
        return ""

    def give_back(self, permit: Permit) -> None:
        return None

    def state(self, replica: str) -> str:
        return CLOSED

    def acquire(self, replica: str) -> Lease | None:
        self._in_flight[replica] = self._in_flight.get(replica, 0) + 1
        return Lease(replica, "")

    def release(self, lease: Lease) -> None:
        self._in_flight[lease.replica] = max(0, self._in_flight.get(lease.replica, 1) - 1)

    def in_flight(self, replica: str) -> int:
        return self._in_flight.get(replica, 0)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
