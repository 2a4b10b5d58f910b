"""The Redis leaky bucket is shared by processes: together they never exceed it."""

from __future__ import annotations

import multiprocessing
import time

import pytest
import redis
from django.conf import settings

from integrations.bitrix24.rest.errors import RateLimited
from integrations.bitrix24.rest.limiter import LeakyBucket, effective_limits

RATE, CAPACITY = 20.0, 6


def _hammer(url: str, start_at: float, seconds: float, out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    """One process taking slots for `seconds` from `start_at` (the same moment for all)."""
    try:
        bucket = LeakyBucket("b24:bucket:shared-test", RATE, CAPACITY, redis.Redis.from_url(url))
        time.sleep(max(0.0, start_at - time.time()))  # start together, not a wait for work
        grants = []
        deadline = time.time() + seconds
        while time.time() < deadline:
            bucket.acquire(max_wait=5)
            seconds_, micros = bucket.redis.time()
            grants.append(seconds_ + micros / 1_000_000)
        out.put(grants)
    except Exception as exc:  # the parent reports it, instead of waiting for nothing
        out.put(repr(exc))


def test_four_processes_together_stay_inside_one_bucket() -> None:
    # Spawned, not forked: a fork copies whatever locks the test process's threads hold.
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    start_at = time.time() + 8
    workers = [
        context.Process(target=_hammer, args=(settings.REDIS_URL, start_at, 1.5, out))
        for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    reports = [out.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=10)
    assert all(isinstance(r, list) for r in reports), reports
    grants = sorted(t for report in reports for t in report)

    # Replay the grants through an exact leaky bucket: the level never goes above capacity
    # (one slot of slack: a grant's timestamp is read just after the script ran).
    level, previous, peak = 0.0, grants[0], 0.0
    for moment in grants:
        level = max(0.0, level - (moment - previous) * RATE) + 1
        previous = moment
        peak = max(peak, level)
    assert peak <= CAPACITY + 1
    # ...and the bucket was the limit, not the processes: they got about rate × time + burst.
    elapsed = grants[-1] - grants[0]
    assert len(grants) >= RATE * elapsed * 0.8


def test_acquire_refuses_to_wait_longer_than_allowed() -> None:
    bucket = LeakyBucket("b24:bucket:short", 1.0, 1)
    bucket.acquire(max_wait=1)

    with pytest.raises(RateLimited):
        bucket.acquire(max_wait=0.2)


def test_we_run_below_the_published_portal_limits() -> None:
    assert effective_limits(2.0, 50) == (1.8, 40)
    assert effective_limits(5.0, 250) == (4.5, 200)
