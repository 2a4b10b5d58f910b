"""Debounce: one turn per burst of customer messages. Part of the domain core
(`inbox.conversations`): it imports `inbox.platform`, Django and third-party packages only,
never `inbox.web`, `inbox.site`, `assistant` or `integrations` (pyproject.toml's contracts).

    timers     the per-chat timers and tokens in Redis: schedule, claim, release, finish
    scheduler  the loop that hands due timers to the assistant queue (a thread of every
               assistant Celery worker, or `manage.py debounce_scheduler`)

What callers use is importable from here (`from inbox.conversations import debounce`).
"""

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
