"""The ingest consumer (`manage.py ingest_worker`): reads the Redis stream the webhooks write
(`stream`), runs `accept_batch` (`store`) on each batch of events, and acknowledges an entry
only after its transaction committed.

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
from operator import itemgetter
from typing import Any

import redis
from django.db import close_old_connections

from inbox.conversations import hooks
from inbox.conversations.events import Event, InboundEvent, event_from_json
from inbox.conversations.ingest.store import accept, accept_batch
from inbox.conversations.ingest.stream import DEAD_LETTER_STREAM, GROUP, STREAM
from inbox.platform import logs
from inbox.platform.redis import ScriptCall, get_redis, run_later, sent_together

log = logging.getLogger(__name__)


FAILURES_KEY = "ingest:failures"

# KEYS: the stream, the failure counts. ARGV: the group, '1' to clear failure counts, then the
# entry ids joined by spaces. Acknowledges and deletes the entries (and forgets their failures)
# at once. The ids travel as one argument that Lua splits: redis-py encodes each argument in
# Python, a hundred a batch (docs/performance.md: 7 % of the consumer's instructions, counted
# with this script's and the debounce script's arguments together).
_ACK_SCRIPT = """
local ids = {}
for id in string.gmatch(ARGV[3], '%S+') do ids[#ids + 1] = id end
for i = 1, #ids, 1000 do
  local last = math.min(i + 999, #ids)
  redis.call('XACK', KEYS[1], ARGV[1], unpack(ids, i, last))
  redis.call('XDEL', KEYS[1], unpack(ids, i, last))
  if ARGV[2] == '1' then
    redis.call('HDEL', KEYS[2], unpack(ids, i, last))
  end
end
return #ids
"""


def ensure_group(client: redis.Redis) -> None:
    try:
        client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
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
        coalesce_ms: int = 25,
    ) -> None:
        self.name = name or consumer_name()
        self.batch = batch
        self.block_ms = block_ms
        self.claim_idle_ms = claim_idle_ms
        self.max_attempts = max_attempts
        self.coalesce_ms = coalesce_ms
        self.stop_event = threading.Event()
        self.redis = get_redis()
        self._last_claim = 0.0
        self._db_checked = 0.0
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
        entries = self._read(self.batch, self.block_ms)
        if not entries:
            return handled
        # What arrived while a batch was being stored is stored too before anything is pushed
        # (each batch still one transaction, acknowledged after its commit): a burst that
        # trickles in from the webhooks is pushed to the dashboards once instead of once per
        # read, which is one frame per open socket instead of several. A push waits at most
        # `coalesce_ms` after the first batch committed (plus the batch being stored then),
        # and never for more than `batch` entries in all, so a steady stream still flows.
        # The batch's debounce timers and acknowledgement wait for the push's presence check
        # and go to Redis with it, one round trip (`sent_together`).
        with sent_together(), hooks.batch():
            stored = self.process_batch(entries)
            committed = time.monotonic()
            while stored < self.batch and time.monotonic() - committed < self.coalesce_ms / 1000:
                entries = self._read(self.batch - stored, None)
                if not entries:
                    break
                stored += self.process_batch(entries)
        return handled + stored

    def _read(self, count: int, block_ms: int | None) -> list[tuple[Any, dict[bytes, bytes]]]:
        """New entries for this consumer; `block_ms` None: only what is already waiting."""
        response: Any = self.redis.xreadgroup(
            GROUP, self.name, {STREAM: ">"}, count=count, block=block_ms
        )
        return [entry for _stream, batch in response or [] for entry in batch]

    def _reclaim(self) -> int:
        """Take over entries another (dead) consumer read but never acknowledged."""
        handled = 0
        start = "0-0"
        while True:
            result: Any = self.redis.xautoclaim(
                STREAM,
                GROUP,
                self.name,
                min_idle_time=self.claim_idle_ms,
                start_id=start,
                count=self.batch,
            )
            start, entries = result[0], result[1]
            live = []
            for entry_id, fields in entries:
                if fields is None:  # deleted while pending
                    self.redis.xack(STREAM, GROUP, entry_id)
                else:
                    live.append((entry_id, fields))
            handled += self.process_batch(live, reclaimed=True)
            if not entries or start in (b"0-0", "0-0"):
                return handled

    def process_batch(
        self, entries: list[tuple[Any, dict[bytes, bytes]]], *, reclaimed: bool = False
    ) -> int:
        """Accept a batch of entries in one transaction (`accept_batch`: one commit and a
        few queries instead of several per event), then acknowledge them all.

        Chats are locked in one order in every consumer — sorted by channel and customer, a
        chat's own events keeping their order — so two consumers do not deadlock on them. If
        any event fails, or the batch cannot commit, the batch is rolled back and its events
        are stored one transaction each; a failing one is left pending for a retry.

        `reclaimed`: the entries were pending before (another consumer's, or failed), so their
        failure counts are cleared on success; a new entry has none."""
        self._check_connection()
        keyed: list[tuple[tuple[int, int, str], Any, bytes, Event]] = []
        for entry_id, fields in entries:
            raw = fields.get(b"e", b"")
            try:
                event = event_from_json(raw)
            except (ValueError, TypeError):
                log.error("ingest.unreadable_event", extra={"entry": str(entry_id)})
                self._dead_letter(entry_id, raw, "unreadable")
            else:
                keyed.append((_lock_order(event), entry_id, raw, event))
        if not keyed:
            return 0
        keyed.sort(key=_first)  # stable: a chat's own events keep their order
        batch = [(entry_id, raw, event) for _key, entry_id, raw, event in keyed]
        with sent_together(), hooks.batch():
            return self._store_batch(batch, reclaimed)

    def _check_connection(self) -> None:
        """Django's check between two requests (close a database connection that failed or
        aged out, health-check it before its next use), at most once a second while batches
        keep coming: the health check is a round trip, and a connection that broke since
        fails its batch, whose fallback below checks again before storing one by one."""
        now = time.monotonic()
        if now - self._db_checked >= 1.0:
            close_old_connections()
            self._db_checked = now

    def _store_batch(self, batch: list[tuple[Any, bytes, Event]], reclaimed: bool) -> int:
        if len(batch) == 1:
            self._one_by_one(batch)
            return 1
        try:
            with logs.bound(_batch_correlation(batch)):
                accept_batch([event for _entry_id, _raw, event in batch])
        except Exception:
            # Anything may have failed, the commit included: nothing of the batch is stored.
            # Store its events one transaction each, so a failing one is left pending alone.
            log.warning("ingest.batch_failed", extra={"size": len(batch)}, exc_info=True)
            close_old_connections()
            self._db_checked = time.monotonic()
            self._one_by_one(batch)
            return len(batch)
        self._ack(*[entry_id for entry_id, _raw, _event in batch], failed_before=reclaimed)
        return len(batch)

    def _one_by_one(self, batch: list[tuple[Any, bytes, Event]]) -> None:
        for entry_id, raw, event in batch:
            if self._accept(entry_id, event):
                self._ack(entry_id)
            else:
                self._failed(entry_id, raw)

    def _accept(self, entry_id: Any, event: Event) -> bool:
        try:
            with logs.bound(event.correlation_id):
                accept(event)
        except Exception:
            log.exception("ingest.accept_failed", extra={"entry": str(entry_id)})
            return False
        return True

    def _failed(self, entry_id: Any, raw: bytes) -> None:
        """Left pending (reclaimed and retried after claim_idle_ms) until max_attempts."""
        attempts = int(self.redis.hincrby(FAILURES_KEY, entry_id, 1))
        if attempts >= self.max_attempts:
            self._dead_letter(entry_id, raw, "failed")

    def _ack(self, *entry_ids: Any, failed_before: bool = True) -> None:
        if not entry_ids:
            return
        # After the commit; inside a batch, sent with the batch's next round trip.
        run_later(
            ScriptCall(
                "ingest.ack",
                _ACK_SCRIPT,
                [STREAM, FAILURES_KEY],
                [GROUP, "1" if failed_before else "0", _joined(entry_ids)],
            )
        )

    def _dead_letter(self, entry_id: Any, raw: bytes, why: str) -> None:
        self.redis.xadd(DEAD_LETTER_STREAM, {"e": raw, "why": why, "entry": entry_id})
        self._ack(entry_id)


def _joined(entry_ids: tuple[Any, ...]) -> bytes:
    """Stream entry ids (bytes as read, or str) as one space-separated argument."""
    try:
        return b" ".join(entry_ids)  # as read from the stream: bytes
    except TypeError:
        return b" ".join(i if isinstance(i, bytes) else str(i).encode() for i in entry_ids)


def _batch_correlation(batch: list[tuple[Any, bytes, Event]]) -> str | None:
    """The batch's correlation id for its log lines: the events' one when they share it."""
    ids = {event.correlation_id for _entry_id, _raw, event in batch}
    return ids.pop() if len(ids) == 1 else None


_first = itemgetter(0)


def _lock_order(event: Event) -> tuple[int, int, str]:
    """Messages first, grouped by chat (the rows they lock); statuses after."""
    if isinstance(event, InboundEvent):
        return (0, event.channel_id, event.chat_key)
    return (1, event.channel_id, "")
