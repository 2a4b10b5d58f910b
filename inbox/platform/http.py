"""Outbound HTTP for every client of an outside system: one client factory, the two kinds of
failure, and one retry rule.

    http.client(timeout=http.timeouts(30.0), pinned=True)    # a URL a business admin typed
    http.shared()                                            # one pooled client per process
    http.retry(lambda: send(...), Backoff(attempts=3, base=0.5, cap=2.0, total=10.0))

`client()` builds an `httpx.Client` with all four timeouts given (connect, read, write, pool:
an unset one would wait forever) and a connection pool. `pinned=True` is for URLs that come
from a business's settings (a bridge, a Bitrix24 portal, a business's own model server): its
connections go through the egress rule (`inbox.platform.egress.PinnedTransport`: the host is
resolved once, refused unless every address is public or allowed by the operator, and the
checked address is the one connected to), no redirect is followed and no proxy is taken from
the environment. Unpinned clients are for the operator's own URLs (the Graph API, the model and
speech servers) and behave as httpx does by default. The `openai` library gets its client from
here too (`OpenAI(http_client=client(...))`).

Failures are `Transient` (the same request may work later: timeouts, dropped connections, 429,
5xx; `retry_after` is the wait the server asked for, in seconds, when it named one) or
`Permanent` (it will fail the same way until someone changes something). Each integration keeps
its own error classes, derived from these two, so callers keep catching what they caught.

`retry()` runs a call again on `Transient` errors: at most `attempts` tries, exponential backoff
with full jitter between them (a random wait between 0 and base·2^(n-1), at most `cap`), the
server's Retry-After instead when it gave one (at most `retry_after_max`), and never past
`total` seconds from the first try: a retry that could not start in time is not made and the
last error is raised. A `Permanent` error is never retried, even one that is also a
`Transient` by inheritance. `sleep` and `clock` are injectable for tests. Work that runs in a
Celery task retries with the task's own countdown instead of sleeping (`Backoff.delay` gives
the countdown), so a worker is never held by a wait.
"""

from __future__ import annotations

import email.utils
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

import httpx

from inbox.platform.egress import PinnedTransport

T = TypeVar("T")

CONNECT_TIMEOUT = 5.0
POOL_TIMEOUT = 5.0
MAX_CONNECTIONS = 100
MAX_KEEPALIVE_CONNECTIONS = 20
KEEPALIVE_EXPIRY = 5.0


def timeouts(
    read: float,
    *,
    connect: float = CONNECT_TIMEOUT,
    write: float | None = None,
    pool: float = POOL_TIMEOUT,
) -> httpx.Timeout:
    """All four timeouts, in seconds: `write` defaults to `read` (an upload takes as long as
    the answer may), the connect and pool waits are short whatever the request."""
    return httpx.Timeout(
        connect=connect, read=read, write=read if write is None else write, pool=pool
    )


DEFAULT_TIMEOUT = timeouts(15.0)


def client(
    *,
    timeout: httpx.Timeout = DEFAULT_TIMEOUT,
    headers: Mapping[str, str] | None = None,
    pinned: bool = False,
) -> httpx.Client:
    """A new pooled client (close it, or use it in a `with`). `pinned`: connections only to
    addresses the egress rule passes, no redirects, no proxy from the environment."""
    missing = [
        name for name in ("connect", "read", "write", "pool") if getattr(timeout, name) is None
    ]
    if missing:
        raise ValueError(f"every timeout must be set; missing: {', '.join(missing)}")
    if pinned:
        return httpx.Client(
            transport=PinnedTransport(),
            timeout=timeout,
            headers=headers,
            follow_redirects=False,
            trust_env=False,
        )
    return httpx.Client(
        timeout=timeout,
        headers=headers,
        limits=httpx.Limits(
            max_connections=MAX_CONNECTIONS,
            max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS,
            keepalive_expiry=KEEPALIVE_EXPIRY,
        ),
    )


_shared: dict[tuple[int, bool], httpx.Client] = {}


def shared(*, pinned: bool = False) -> httpx.Client:
    """One client per process (and per kind): pooled connections and one TLS context, instead
    of a new one per request (building a TLS context costs milliseconds). The pid keeps a forked
    Celery child from using its parent's sockets. Pass the call's own timeout per request when
    it differs from the default."""
    key = (os.getpid(), pinned)
    found = _shared.get(key)
    if found is None:
        found = _shared[key] = client(pinned=pinned)
    return found


# --- failures --------------------------------------------------------------------------------


class Transient(Exception):
    """The same request may work later. `retry_after`: seconds the server asked us to wait,
    None when it did not say."""

    retry_after: float | None = None

    def __init__(self, *args: object, retry_after: float | None = None) -> None:
        super().__init__(*args)
        if retry_after is not None:
            self.retry_after = retry_after


class Permanent(Exception):
    """Trying again will fail the same way until someone changes the configuration or the data."""


def retry_after(
    headers: Mapping[str, str] | httpx.Headers | None, *, now: float | None = None
) -> float | None:
    """A Retry-After header (delay in seconds, or an HTTP date) as seconds from now; None when
    absent or unreadable. A date in the past is 0."""
    if headers is None:
        return None
    value = str(headers.get("retry-after") or headers.get("Retry-After") or "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return max(0.0, seconds) if seconds == seconds else None  # NaN is unreadable
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)  # HTTP dates are GMT
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def http_date(seconds_from_now: float, *, now: float | None = None) -> str:
    """The HTTP date `seconds_from_now` ahead (for servers and tests that answer Retry-After)."""
    current = time.time() if now is None else now
    return email.utils.format_datetime(
        datetime.fromtimestamp(current + seconds_from_now, UTC), usegmt=True
    )


# --- retrying --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Backoff:
    """How a call is retried. `attempts` counts every try, the first included; `base` is the
    longest wait before the first retry, doubled for each next one up to `cap`; `total` bounds
    the whole call from its first try; `retry_after_max` bounds a server's Retry-After."""

    attempts: int = 3
    base: float = 0.5
    cap: float = 30.0
    total: float = 60.0
    retry_after_max: float = 30.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts counts the first try: at least 1")
        if min(self.base, self.cap, self.total, self.retry_after_max) < 0:
            raise ValueError("waits cannot be negative")

    def delay(
        self,
        retry: int,
        retry_after: float | None = None,
        *,
        rng: Callable[[], float] = random.random,
    ) -> float:
        """Seconds to wait before retry number `retry` (1 is the first retry): the server's
        Retry-After when it gave one (bounded), else full jitter over the exponential step."""
        if retry_after is not None:
            return min(max(0.0, retry_after), self.retry_after_max)
        step = min(self.cap, self.base * 2.0 ** max(0, retry - 1))
        return rng() * step

    def allows(self, retry: int, elapsed: float, delay: float) -> bool:
        """Whether retry number `retry` may start after waiting `delay`, `elapsed` seconds after
        the first try began."""
        return retry < self.attempts and elapsed + delay <= self.total


def retry(
    call: Callable[[], T],
    policy: Backoff,
    *,
    on: type[BaseException] | tuple[type[BaseException], ...] = Transient,
    retry_if: Callable[[BaseException], bool] | None = None,
    before_retry: Callable[[int, BaseException, float], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    rng: Callable[[], float] = random.random,
) -> T:
    """`call()`, tried again on the errors in `on` (Transient by default) under `policy`.

    `retry_if(error)` may refuse a retry for an error of those classes (a write whose outcome is
    unknown, a wait longer than the caller accepts): the error is raised at once.
    `before_retry(retry, error, delay)` runs before each wait (logs, metrics, choosing another
    replica). After the last attempt, or when the next could not start within `total`, the last
    error is raised as it was."""
    started = clock()
    retries = 0
    while True:
        try:
            return call()
        except on as error:
            if isinstance(error, Permanent):
                raise
            if retry_if is not None and not retry_if(error):
                raise
            retries += 1
            delay = policy.delay(retries, getattr(error, "retry_after", None), rng=rng)
            if not policy.allows(retries, clock() - started, delay):
                raise
            if before_retry is not None:
                before_retry(retries, error, delay)
            if delay > 0:
                sleep(delay)
