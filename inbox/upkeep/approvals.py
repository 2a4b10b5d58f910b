"""Drafts no one approved in time: the customer is told a person will confirm, and a person
gets the chat (`inbox.conversations.drafts.expire`). The channel's `approval_timeout_minutes`
counts only working time when the channel has working hours (the alerts' own reckoning)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from assistant import approval
from inbox.conversations import drafts
from inbox.conversations.models import Draft
from inbox.upkeep.alerts import business_zone, working_time_between

log = logging.getLogger(__name__)


def overdue(now: datetime) -> list[Draft]:
    """Current pending drafts that have waited longer than their channel allows."""
    found = []
    waiting = drafts.current().select_related("chat__channel__business").order_by("created_at")
    for draft in waiting[:500]:
        channel = draft.chat.channel
        limit = timedelta(minutes=channel.approval_timeout_minutes)
        try:
            waited = working_time_between(
                draft.created_at,
                now,
                channel.working_hours or {},
                business_zone(channel.business.timezone),
            )
        except (ValueError, TypeError, IndexError, AttributeError):
            waited = now - draft.created_at  # unreadable hours: count all of the time
        if waited > limit:
            found.append(draft)
    return found


def expire_overdue(now: datetime) -> int:
    """Supersede drafts whose chat moved on, expire those past their time; how many expired."""
    drafts.supersede_stale()
    expired = 0
    for draft in overdue(now):
        notice = approval.timeout_notice(draft.chat.channel)
        expired += drafts.expire(draft.pk, notice=notice).ok
    if expired:
        log.info("draft.expired_overdue", extra={"count": expired})
    return expired
