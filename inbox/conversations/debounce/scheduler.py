"""The loop that hands due debounce timers to the assistant queue (`timers` holds them).

Each pass claims the due chats (atomically, leased), publishes one `assistant.run_turn` per chat
with the token it had, then releases the leases. Between passes it sleeps until the earliest
timer (or lease) in the set, at most `idle_seconds`, and wakes early when `schedule` publishes
that a new timer became the earliest: dispatch follows the due time within a millisecond or
two rather than a poll interval. Any number may run (every assistant Celery worker runs one,
`assistant/tasks.py`; `manage.py debounce_scheduler` runs one on its own): the claim never
hands one timer to two of them, and a scheduler that dies loses nothing (its leases run out).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from typing import Any

from celery import current_app
from django.conf import settings
from redis.exceptions import RedisError

from inbox.conversations.debounce.timers import (
    TURN_TASK,
    WAKE_CHANNEL,
    DueChat,
    claim_due,
    correlation_ids,
    release,
)
from inbox.platform import logs
from inbox.platform.redis import get_redis

log = logging.getLogger(__name__)

BATCH = 200
RETRY_SECONDS = 0.5


class DebounceScheduler:
    """One scheduler loop; `run` returns once `stop_event` is set."""

    def __init__(
        self,
        *,
        lease_seconds: float | None = None,
        idle_seconds: float | None = None,
        batch: int = BATCH,
    ) -> None:
        self.lease_seconds = (
            settings.DEBOUNCE_LEASE_SECONDS if lease_seconds is None else lease_seconds
        )
        self.idle_seconds = settings.DEBOUNCE_IDLE_SECONDS if idle_seconds is None else idle_seconds
        self.batch = batch
        self.stop_event = threading.Event()
        self._pubsub: Any = None

    def run(self) -> None:
        log.info("debounce.scheduler_started", extra={"lease_s": self.lease_seconds})
        while not self.stop_event.is_set():
            try:
                self._subscribe()
                wait = self.run_once()
                if wait > 0:
                    self._sleep(wait)
            except RedisError as exc:
                # Redis away: nothing is lost (the timers are in Redis); try again shortly.
                log.warning("debounce.scheduler_redis_error", extra={"error": str(exc)[:200]})
                self._close()
                self.stop_event.wait(RETRY_SECONDS)
        self._close()
        log.info("debounce.scheduler_stopped")

    def run_once(self) -> float:
        """Dispatch what is due now. Returns how long to sleep before the next pass."""
        claim = claim_due(self.batch, self.lease_seconds)
        sent: list[DueChat] = []
        cids = correlation_ids([due.chat_id for due in claim.chats])
        for due in claim.chats:
            try:
                with logs.bound(cids.get(due.chat_id)):
                    current_app.send_task(TURN_TASK, args=[due.chat_id, due.token])
            except Exception as exc:
                # The broker is likely away: stop here. The leases of this chat and the rest of
                # the batch run out, and a scheduler (maybe this one) dispatches them then.
                log.warning(
                    "debounce.dispatch_failed",
                    extra={"chat_id": due.chat_id, "error": str(exc)[:200]},
                )
                if sent:
                    release(sent)
                return RETRY_SECONDS
            sent.append(due)
        if sent:
            release(sent)
            log.debug("debounce.dispatched", extra={"chats": len(sent)})
        if len(claim.chats) >= self.batch:
            return 0.0
        if claim.next_due_ms is None:
            return self.idle_seconds
        return min(self.idle_seconds, max(0.0, (claim.next_due_ms - claim.now_ms) / 1000))

    def _subscribe(self) -> None:
        if self._pubsub is None:
            pubsub = get_redis().pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call, unused-ignore]  # typed from redis 8.2
            pubsub.subscribe(WAKE_CHANNEL)
            self._pubsub = pubsub

    def _sleep(self, seconds: float) -> None:
        """Sleep up to `seconds`, or until a new earliest timer is published."""
        deadline = time.monotonic() + seconds
        while not self.stop_event.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            # Short slices so a stop request is seen promptly.
            if self._pubsub.get_message(timeout=min(left, 0.5)) is not None:
                # Drain the rest: one pass serves every wake-up queued so far.
                while self._pubsub.get_message(timeout=0) is not None:
                    pass
                return

    def _close(self) -> None:
        if self._pubsub is not None:
            with contextlib.suppress(RedisError):
                self._pubsub.close()
            self._pubsub = None


def start_in_thread(**kwargs: Any) -> DebounceScheduler:
    """A scheduler on a daemon thread of this process (a Celery worker's main process)."""
    scheduler = DebounceScheduler(**kwargs)
    threading.Thread(target=scheduler.run, name="debounce-scheduler", daemon=True).start()
    return scheduler
