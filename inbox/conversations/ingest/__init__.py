"""Ingest: from a normalised event to a stored message. Part of the domain core
(`inbox.conversations`): it imports `inbox.platform`, Django and third-party packages only,
never `inbox.web`, `inbox.site`, `assistant` or `integrations` (pyproject.toml's contracts).

Two processes, split by the one hot path of the product:

* The web process (the webhook request): `enqueue` / `aenqueue` (`stream`) drop a duplicate or
  append the event to a Redis stream, one Lua script per event, and the 200 goes back only
  after that. Text Redis cannot take is made safe first (`cleaning.utf8_safe`).
* The consumer (`manage.py ingest_worker`, `worker`): reads the stream and stores each batch
  of events in one transaction with `accept_batch` (`store`), acknowledging an entry only
  after its batch committed. Storing is idempotent, so a replayed event is stored once.

The modules, by responsibility:

    stream     the webhook half: stream names, dedup, enqueue, the backlog's age
    cleaning   what an event's text must not hold (lone surrogates, NUL) and its length cap
    store      accept / accept_batch: the domain function that stores events
    chats      the batch's chat row locks, their counters, what a customer message does to a chat
    messages   the batch's message rows: columns, the insert, what follows a stored message
    channels   the per-process cache of channel settings, the channel's last-event time
    sql        the consumer's fixed statements on PostgreSQL (SQLite takes the ORM path)
    worker     the consumer loop: read, store, acknowledge, reclaim, dead-letter

What callers use is importable from here (`from inbox.conversations import ingest`); the
consumer loop from `inbox.conversations.ingest.worker` (the webhook's path does not import it).
"""

from inbox.conversations.ingest.chats import TURN_KINDS, VOICE_KINDS
from inbox.conversations.ingest.cleaning import (
    FULL_TEXT_FILENAME,
    capped_text,
    storable,
    utf8_safe,
)
from inbox.conversations.ingest.store import Accepted, accept, accept_batch
from inbox.conversations.ingest.stream import (
    DEAD_LETTER_STREAM,
    DEDUP_SECONDS,
    GROUP,
    STREAM,
    EnqueueResult,
    aenqueue,
    dedup_key,
    enqueue,
    oldest_pending_age_seconds,
)

__all__ = [
    "DEAD_LETTER_STREAM",
    "DEDUP_SECONDS",
    "FULL_TEXT_FILENAME",
    "GROUP",
    "STREAM",
    "TURN_KINDS",
    "VOICE_KINDS",
    "Accepted",
    "EnqueueResult",
    "accept",
    "accept_batch",
    "aenqueue",
    "capped_text",
    "dedup_key",
    "enqueue",
    "oldest_pending_age_seconds",
    "storable",
    "utf8_safe",
]
