"""Ingest: from a normalised event to a stored message (`store`), its SQL (`sql`) and the
consumer loop (`worker`)."""

from inbox.conversations.ingest.store import (
    DEAD_LETTER_STREAM,
    GROUP,
    STREAM,
    TURN_KINDS,
    VOICE_KINDS,
    Accepted,
    EnqueueResult,
    accept,
    accept_batch,
    aenqueue,
    capped_text,
    enqueue,
    storable,
)

__all__ = [
    "DEAD_LETTER_STREAM",
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
    "enqueue",
    "storable",
]
