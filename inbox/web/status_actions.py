"""Resolve, snooze and reopen a chat, from the inbox page or the JSON API.

Like `inbox.web.actions`: the user must see the chat (else `ChatNotFound`), the rule is in
`inbox.conversations.status`, and the loser of a race gets the current state and a notice.
"""

from __future__ import annotations

import logging
import zoneinfo
from datetime import datetime, time, timedelta

from django.contrib.auth.models import User
from django.utils import timezone
from django.utils.translation import gettext, gettext_noop
from django.utils.translation import gettext_lazy as _

from inbox.conversations import access, lifecycle, status
from inbox.web.actions import ActionResult, ChatNotFound, reload_chat

log = logging.getLogger(__name__)

# The snooze choices of the inbox page: a label and how to compute the end from now.
SNOOZE_CHOICES = [("1h", _("1 hour")), ("3h", _("3 hours")), ("tomorrow", _("Tomorrow 9:00"))]
MAX_SNOOZE = timedelta(days=365)
CHANGED = gettext_noop("The chat changed meanwhile.")
ALREADY_OPEN = gettext_noop("The chat is already open.")
BAD_TIME = gettext_noop("Choose a time in the future, within a year.")


def snooze_end(choice: str, business_timezone: str, now: datetime | None = None) -> datetime | None:
    """When a snooze chosen on the page ends (tomorrow: 9:00 in the business's time zone)."""
    now = now or timezone.now()
    if choice == "1h":
        return now + timedelta(hours=1)
    if choice == "3h":
        return now + timedelta(hours=3)
    if choice == "tomorrow":
        try:
            zone = zoneinfo.ZoneInfo(business_timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            zone = zoneinfo.ZoneInfo("UTC")
        local = now.astimezone(zone).date() + timedelta(days=1)
        return datetime.combine(local, time(9, 0), tzinfo=zone)
    return None


def _visible(user: User, chat_id: int) -> int:
    chat = access.visible_chat(user, chat_id)
    if chat is None:
        raise ChatNotFound(chat_id)
    return chat.pk


def resolve(user: User, chat_id: int) -> ActionResult:
    chat_id = _visible(user, chat_id)
    try:
        result = lifecycle.resolve(chat_id, manager=user)
    except status.InvalidStatusChange:
        return ActionResult(
            reload_chat(chat_id), False, notice=gettext("The chat changed meanwhile.")
        )
    if not result.changed:
        return ActionResult(reload_chat(chat_id), False, notice=gettext("Already resolved."))
    log.info("inbox.resolved", extra={"chat_id": chat_id, "user_id": user.pk})
    return ActionResult(reload_chat(chat_id), True, notice=gettext("Resolved."))


def snooze(user: User, chat_id: int, until: datetime | None) -> ActionResult:
    chat_id = _visible(user, chat_id)
    now = timezone.now()
    if until is None or until <= now or until > now + MAX_SNOOZE:
        return ActionResult(
            reload_chat(chat_id),
            False,
            error=gettext("Choose a time in the future, within a year."),
        )
    try:
        result = status.snooze(chat_id, until=until, manager=user)
    except status.InvalidStatusChange:
        return ActionResult(
            reload_chat(chat_id), False, notice=gettext("The chat changed meanwhile.")
        )
    log.info("inbox.snoozed", extra={"chat_id": chat_id, "user_id": user.pk})
    return ActionResult(reload_chat(chat_id), result.changed)


def reopen(user: User, chat_id: int) -> ActionResult:
    chat_id = _visible(user, chat_id)
    try:
        result = status.reopen(chat_id, manager=user)
    except status.InvalidStatusChange:
        return ActionResult(
            reload_chat(chat_id), False, notice=gettext("The chat is already open.")
        )
    if not result.changed:
        return ActionResult(
            reload_chat(chat_id), False, notice=gettext("The chat is already open.")
        )
    return ActionResult(reload_chat(chat_id), True)
