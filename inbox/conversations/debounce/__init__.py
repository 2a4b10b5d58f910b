"""Debounce: the per-chat timers (`timers`) and the loop that dispatches them (`scheduler`)."""

from inbox.conversations.debounce.scheduler import DebounceScheduler, start_in_thread
from inbox.conversations.debounce.timers import (
    DUE_KEY,
    TURN_TASK,
    WAKE_CHANNEL,
    Claim,
    DueChat,
    claim_due,
    correlation_ids,
    finish,
    is_current,
    release,
    schedule,
    schedule_many,
    schedule_many_on_commit,
    schedule_on_commit,
)

__all__ = [
    "DUE_KEY",
    "TURN_TASK",
    "WAKE_CHANNEL",
    "Claim",
    "DebounceScheduler",
    "DueChat",
    "claim_due",
    "correlation_ids",
    "finish",
    "is_current",
    "release",
    "schedule",
    "schedule_many",
    "schedule_many_on_commit",
    "schedule_on_commit",
    "start_in_thread",
]
