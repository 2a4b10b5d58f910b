"""The ingest consumer: reads the Redis stream the webhooks write, runs `ingest.accept` for each
event, and acknowledges an entry only after its transaction committed.

Several consumers may run (one consumer group). An entry whose consumer died is reclaimed by
another after `claim_idle_ms`; an entry that keeps failing goes to a dead-letter stream after
`max_attempts`, where it stays for an operator (it is never silently dropped).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

import redis
from django.db import close_old_connections

from inbox import ingest, logs
from inbox.events import event_from_json
from inbox.redis import get_redis

log = logging.getLogger(__name__)

FAILURES_KEY = "ingest:failures"


def ensure_group(client: redis.Redis) -> None:
    try:
        client.xgroup_create(ingest.STREAM, ingest.GROUP, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


def consumer_name() -> str:
    return f"{socket.gethostname()}-{os.getpid()}"


class IngestWorker:
    def __init__(
        self,
        *,
        name: str | None = None,
        batch: int = 100,
        block_ms: int = 1000,
        claim_idle_ms: int = 30_000,
        max_attempts: int = 5,
    ) -> None:
        self.name = name or consumer_name()
        self.batch = batch
        self.block_ms = block_ms
        self.claim_idle_ms = claim_idle_ms
        self.max_attempts = max_attempts
        self.stop_event = threading.Event()
        self.redis = get_redis()
        self._last_claim = 0.0
        self._group_ready = False

    def run(self) -> None:
        log.info("ingest.worker_started", extra={"consumer": self.name})
        while not self.stop_event.is_set():
            try:
                self.step()
            except (redis.ConnectionError, redis.TimeoutError):
                log.warning("ingest.redis_unavailable", exc_info=True)
                self.stop_event.wait(1.0)
            except redis.ResponseError:
                # NOGROUP / UNBLOCKED: the stream or its group vanished (Redis restarted without
                # its append-only file, or someone deleted the key). Recreate and carry on.
                log.warning("ingest.stream_reset", exc_info=True)
                self._group_ready = False
                self.stop_event.wait(0.2)

    def step(self) -> int:
        """Process what is waiting (reclaimed entries first). Returns how many were handled."""
        handled = 0
        if not self._group_ready:
            ensure_group(self.redis)
            self._group_ready = True
        if time.monotonic() - self._last_claim > self.claim_idle_ms / 2000:
            self._last_claim = time.monotonic()
            handled += self._reclaim()
        response: Any = self.redis.xreadgroup(
            ingest.GROUP, self.name, {ingest.STREAM: ">"}, count=self.batch, block=self.block_ms
        )
        for _stream, entries in response or []:
            for entry_id, fields in entries:
                self.process(entry_id, fields)
                handled += 1
        return handled

    def _reclaim(self) -> int:
        """Take over entries another (dead) consumer read but never acknowledged."""
        handled = 0
        start = "0-0"
        while True:
            result: Any = self.redis.xautoclaim(
                ingest.STREAM,
                ingest.GROUP,
                self.name,
                min_idle_time=self.claim_idle_ms,
                start_id=start,
                count=self.batch,
            )
            start, entries = result[0], result[1]
            for entry_id, fields in entries:
                if fields is None:  # deleted while pending
                    self.redis.xack(ingest.STREAM, ingest.GROUP, entry_id)
                    continue
                self.process(entry_id, fields)
                handled += 1
            if not entries or start in (b"0-0", "0-0"):
                return handled

    def process(self, entry_id: Any, fields: dict[bytes, bytes]) -> None:
        close_old_connections()
        raw = fields.get(b"e", b"")
        try:
            event = event_from_json(raw)
        except (ValueError, TypeError):
            log.error("ingest.unreadable_event", extra={"entry": str(entry_id)})
            self._dead_letter(entry_id, raw, "unreadable")
            return
        try:
            with logs.bound(event.correlation_id):
                ingest.accept(event)
        except Exception:
            attempts = int(self.redis.hincrby(FAILURES_KEY, entry_id, 1))
            log.exception(
                "ingest.accept_failed", extra={"entry": str(entry_id), "attempts": attempts}
            )
            if attempts >= self.max_attempts:
                self._dead_letter(entry_id, raw, "failed")
            # Otherwise left pending: reclaimed and retried after claim_idle_ms.
            return
        self._ack(entry_id)

    def _ack(self, entry_id: Any) -> None:
        pipe = self.redis.pipeline(transaction=True)
        pipe.xack(ingest.STREAM, ingest.GROUP, entry_id)
        pipe.xdel(ingest.STREAM, entry_id)
        pipe.hdel(FAILURES_KEY, entry_id)
        pipe.execute()

    def _dead_letter(self, entry_id: Any, raw: bytes, why: str) -> None:
        self.redis.xadd(ingest.DEAD_LETTER_STREAM, {"e": raw, "why": why, "entry": entry_id})
        self._ack(entry_id)


def oldest_pending_age_seconds(client: redis.Redis | None = None) -> float:
    """Age of the oldest event not yet accepted (stream ids start with a ms timestamp)."""
    client = client or get_redis()
    first: Any = client.xrange(ingest.STREAM, count=1)
    if not first:
        return 0.0
    entry_id = first[0][0]
    text = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    millis = int(text.split("-")[0])
    return max(0.0, time.time() - millis / 1000)
