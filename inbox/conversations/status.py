"""The conversation status: the only code that changes `Chat.status`.

    OPEN ──resolve──▶ RESOLVED          OPEN | RESOLVED ──snooze(until)──▶ SNOOZED
    SNOOZED | RESOLVED ──reopen (a manager)───────────────────────────▶ OPEN
    SNOOZED ──wake (beat: `snoozed_until` passed)─────────────────────▶ OPEN
    SNOOZED | RESOLVED ──customer_wrote (ingest)──────────────────────▶ OPEN

Separate from the owner (`inbox.conversations.ownership`: who speaks) and from the assignee
(`inbox.conversations.assignment`: who looks after it): the status says whether a manager still
has work to do. Each change locks the chat row, writes a `ChatTransition` audit row
(`audit.record`, cause a `StatusCause`: who, when, from and to which status) and tells the
dashboards through `hooks.chat_status_changed`.
`Chat.version` is not bumped: a status change does not make a prepared reply stale.
A manager's Resolve goes through `inbox.conversations.lifecycle.resolve`, which also ends the
person's ownership and assignment.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from inbox.conversations import audit, hooks
from inbox.conversations.models import Chat, ChatStatus, StatusCause

log = logging.getLogger(__name__)


class InvalidStatusChange(Exception):
    """The chat is in a status this change does not start from, or the snooze time is past."""


@dataclass(frozen=True)
class Result:
    chat: Chat
    changed: bool


def _record(
    chat: Chat,
    *,
    to: str,
    cause: StatusCause,
    actor: User | None,
    actor_label: str,
    until: datetime | None,
    at: datetime,
) -> None:
    """Write the new status and its audit row. The caller holds the row lock (or, in ingest,
    saves the chat itself: `chat` then carries the new fields for its own save)."""
    from_status = chat.status
    chat.status = to
    chat.snoozed_until = until
    chat.status_changed_at = at
    audit.record(chat, cause, actor=actor, actor_label=actor_label, from_status=from_status)
    log.info(
        "status.changed",
        extra={"chat_id": chat.pk, "from": from_status, "to": to, "cause": cause},
    )


STATUS_FIELDS = ["status", "snoozed_until", "status_changed_at"]


def _change(
    chat_id: int,
    *,
    to: str,
    cause: StatusCause,
    allowed_from: tuple[str, ...],
    actor: User | None,
    actor_label: str,
    until: datetime | None = None,
    woke: bool = False,
) -> Result:
    now = timezone.now()
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        if chat.status == to and chat.snoozed_until == until:
            return Result(chat, changed=False)
        if chat.status not in allowed_from:
            raise InvalidStatusChange(f"cannot {cause} chat #{chat.pk} while it is {chat.status}")
        _record(chat, to=to, cause=cause, actor=actor, actor_label=actor_label, until=until, at=now)
        chat.save(update_fields=STATUS_FIELDS)
        hooks.chat_status_changed(chat.pk, woke=woke)
    return Result(chat, changed=True)


def resolve(chat_id: int, *, manager: User | None) -> Result:
    """The manager's work on the chat is done: it leaves the Open list until the customer
    writes again."""
    return _change(
        chat_id,
        to=ChatStatus.RESOLVED,
        cause=StatusCause.RESOLVE,
        allowed_from=(ChatStatus.OPEN, ChatStatus.SNOOZED),
        actor=manager,
        actor_label=audit.label_for(manager, "system"),
    )


def snooze(chat_id: int, *, until: datetime, manager: User | None) -> Result:
    """Put the chat aside until `until`; it comes back (with a notification) then, or sooner
    when the customer writes."""
    if until <= timezone.now():
        raise InvalidStatusChange("a snooze must end in the future")
    return _change(
        chat_id,
        to=ChatStatus.SNOOZED,
        cause=StatusCause.SNOOZE,
        allowed_from=(ChatStatus.OPEN, ChatStatus.SNOOZED, ChatStatus.RESOLVED),
        actor=manager,
        actor_label=audit.label_for(manager, "system"),
        until=until,
    )


def reopen(chat_id: int, *, manager: User | None) -> Result:
    """A manager brings a resolved or snoozed chat back to the Open list."""
    return _change(
        chat_id,
        to=ChatStatus.OPEN,
        cause=StatusCause.REOPEN,
        allowed_from=(ChatStatus.SNOOZED, ChatStatus.RESOLVED),
        actor=manager,
        actor_label=audit.label_for(manager, "system"),
    )


def wake(chat_id: int, *, now: datetime | None = None) -> Result:
    """A snoozed chat whose time has come is open again. Does nothing (changed=False) when the
    chat was reopened, resolved or snoozed later meanwhile."""
    now = now or timezone.now()
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        due = chat.snoozed_until is not None and chat.snoozed_until <= now
        if chat.status != ChatStatus.SNOOZED or not due:
            return Result(chat, changed=False)
        _record(
            chat, to=ChatStatus.OPEN, cause=StatusCause.SNOOZE_ENDED, actor=None,
            actor_label="system", until=None, at=now,
        )  # fmt: skip
        chat.save(update_fields=STATUS_FIELDS)
        hooks.chat_status_changed(chat.pk, woke=True)
    return Result(chat, changed=True)


def due_snoozed_ids(now: datetime | None = None) -> list[int]:
    """Snoozed chats whose time has come (the index on status, snoozed_until serves this)."""
    now = now or timezone.now()
    return list(
        Chat.objects.filter(status=ChatStatus.SNOOZED, snoozed_until__lte=now).values_list(
            "pk", flat=True
        )[:1000]
    )


def reopen_on_customer_message(chat: Chat, at: datetime) -> list[str]:
    """The customer wrote: a resolved or snoozed chat is open again. For the ingest hot path:
    the caller holds the row lock and saves the chat; returns the fields it must add to that
    save. An open chat (the common case) costs nothing: no query."""
    if chat.status == ChatStatus.OPEN:
        return []
    _record(
        chat, to=ChatStatus.OPEN, cause=StatusCause.CUSTOMER_WROTE, actor=None,
        actor_label="customer", until=None, at=at,
    )  # fmt: skip
    hooks.chat_status_changed(chat.pk, woke=False)
    return STATUS_FIELDS
