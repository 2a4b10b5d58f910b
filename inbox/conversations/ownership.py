"""The ownership state machine: the only code that changes `Chat.owner`.

    BOT ──request_human (assistant hands off)──────────▶ PENDING_HUMAN
    BOT | PENDING_HUMAN ──manager_replied / take_over──▶ HUMAN
    HUMAN | PENDING_HUMAN ──release (manual)──────────▶ BOT
    HUMAN ──idle_release (no manager message for the channel's idle hours)──▶ BOT
    HUMAN | PENDING_HUMAN ──resolved (the business returns resolved chats to the bot)──▶ BOT
    HUMAN ──resolved (the business returns them to the queue)──────────▶ PENDING_HUMAN

Every transition locks the chat row, checks the current state, bumps `Chat.version` (so a reply
generated before it is never sent), writes a `ChatTransition` row (`audit.record`, cause an
`OwnershipCause`) and, after commit, tells the open dashboards. A transition to the state the
chat is already in changes nothing and returns `False`; a transition that is not allowed from
the current state raises `InvalidTransition` and changes nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from inbox.conversations import audit, auto_assign, hooks
from inbox.conversations.models import Chat, Message, Owner, OwnershipCause

log = logging.getLogger(__name__)


class InvalidTransition(Exception):
    """The chat is in a state this transition does not start from."""

    def __init__(self, chat: Chat, cause: OwnershipCause, detail: str = "") -> None:
        self.chat = chat
        self.cause = cause
        message = f"cannot {cause} chat #{chat.pk} while its owner is {chat.owner}"
        super().__init__(f"{message}: {detail}" if detail else message)


@dataclass(frozen=True)
class Result:
    chat: Chat
    changed: bool


def _transition(
    chat_id: int,
    *,
    cause: OwnershipCause,
    allowed_from: Iterable[str],
    to: str,
    actor: User | None = None,
    actor_label: str = "",
    reason: str = "",
    at: datetime | None = None,
) -> Result:
    at = at or timezone.now()
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        if chat.owner == to:
            return Result(chat, changed=False)
        if chat.owner not in allowed_from:
            raise InvalidTransition(chat, cause)
        _apply(chat, cause=cause, to=to, actor=actor, actor_label=actor_label, reason=reason, at=at)
    return Result(chat, changed=True)


def _apply(
    chat: Chat,
    *,
    cause: OwnershipCause,
    to: str,
    actor: User | None,
    actor_label: str,
    reason: str,
    at: datetime,
) -> None:
    """Write the new owner, the audit row and the dashboard push. Caller holds the row lock."""
    from_owner = chat.owner
    chat.owner = to
    chat.version += 1
    chat.owner_changed_at = at
    fields = ["owner", "version", "owner_changed_at"]
    if to == Owner.BOT:
        # Whatever the customer wrote while a human owned the chat was the human's to answer:
        # the bot starts from the next customer message and writes nothing before it.
        latest = chat.messages.filter(direction=Message.Direction.INBOUND).aggregate(m=Max("id"))
        chat.answered_up_to = max(chat.answered_up_to, latest["m"] or 0)
        fields.append("answered_up_to")
    chat.save(update_fields=fields)
    audit.record(
        chat, cause, actor=actor, actor_label=actor_label, from_owner=from_owner, reason=reason
    )
    log.info(
        "ownership.changed",
        extra={"chat_id": chat.pk, "from": from_owner, "to": to, "cause": cause, "reason": reason},
    )
    hooks.chat_changed(chat.pk)


def request_human(chat_id: int, *, reason: str) -> Result:
    """The assistant hands the chat to a human (BOT → PENDING_HUMAN); with auto-assignment
    on, the next manager in turn gets it in the same transaction."""
    result = _transition(
        chat_id,
        cause=OwnershipCause.REQUEST_HUMAN,
        allowed_from=[Owner.BOT],
        to=Owner.PENDING_HUMAN,
        actor_label="bot",
        reason=reason,
    )
    if result.changed:
        auto_assign.assign_waiting_chat(chat_id)
    return result


def take_over(chat_id: int, *, manager: User) -> Result:
    """A manager takes the chat from the inbox before writing (BOT | PENDING_HUMAN → HUMAN)."""
    return _transition(
        chat_id,
        cause=OwnershipCause.TAKE_OVER,
        allowed_from=[Owner.BOT, Owner.PENDING_HUMAN],
        to=Owner.HUMAN,
        actor=manager,
        actor_label=audit.label_for(manager, "manager"),
    )


def manager_replied(
    chat_id: int, *, manager: User | None = None, at: datetime | None = None
) -> Result:
    """A manager wrote to the customer: from the inbox (`manager` given) or from the phone.

    Moves the chat to HUMAN from any state and restarts the idle-release clock, which is
    measured from the last manager message."""
    at = at or timezone.now()
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        changed = chat.owner != Owner.HUMAN
        if changed:
            _apply(
                chat,
                cause=OwnershipCause.MANAGER_REPLIED,
                to=Owner.HUMAN,
                actor=manager,
                actor_label=audit.label_for(manager, "phone"),
                reason="",
                at=at,
            )
        if chat.last_manager_at is None or at > chat.last_manager_at:
            chat.last_manager_at = at
            chat.save(update_fields=["last_manager_at"])
    return Result(chat, changed=changed)


def release(chat_id: int, *, manager: User | None) -> Result:
    """A manager gives the chat back to the bot (HUMAN | PENDING_HUMAN → BOT).
    The bot stays silent until the customer writes again."""
    return _transition(
        chat_id,
        cause=OwnershipCause.RELEASE,
        allowed_from=[Owner.HUMAN, Owner.PENDING_HUMAN],
        to=Owner.BOT,
        actor=manager,
        actor_label=audit.label_for(manager, "system"),
    )


def resolved(chat_id: int, *, manager: User | None, to_bot: bool) -> Result:
    """A manager resolved the chat: nobody in particular speaks for it any more. To the bot
    (HUMAN | PENDING_HUMAN → BOT), which answers the customer's next message; or, where the
    business says so, back to waiting for a human (HUMAN → PENDING_HUMAN). A chat the bot has
    stays the bot's. Never raises: any state is a valid start."""
    to = Owner.BOT if to_bot else Owner.PENDING_HUMAN
    cause = OwnershipCause.RESOLVED if to_bot else OwnershipCause.RESOLVED_UNASSIGNED
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        if chat.owner == to or (not to_bot and chat.owner == Owner.BOT):
            return Result(chat, changed=False)
        _apply(
            chat,
            cause=cause,
            to=to,
            actor=manager,
            actor_label=audit.label_for(manager, "system"),
            reason="",
            at=timezone.now(),
        )
    return Result(chat, changed=True)


def customer_returned(chat: Chat, at: datetime) -> list[str]:
    """The customer wrote to a chat resolved into waiting for a human (`resolved` with
    `to_bot=False`): it waits from now, not from the resolve, and auto-assignment (where the
    business has it on) gives it to the next manager once the message is stored. For the ingest
    hot path, like `status.reopen_on_customer_message`: the caller holds the row lock and saves
    the chat; returns the fields it must add to that save."""
    if chat.owner != Owner.PENDING_HUMAN or chat.assigned_to_id is not None:
        return []
    chat.owner_changed_at = at
    transaction.on_commit(partial(auto_assign.assign_waiting_chat, chat.pk), robust=True)
    return ["owner_changed_at"]


def idle_release(chat_id: int, *, now: datetime | None = None) -> Result:
    """Give a HUMAN chat back to the bot once no manager has written for the channel's
    idle-release hours. Raises InvalidTransition if a manager wrote more recently."""
    now = now or timezone.now()
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        if chat.owner == Owner.BOT:
            return Result(chat, changed=False)
        if chat.owner != Owner.HUMAN:
            raise InvalidTransition(chat, OwnershipCause.IDLE_RELEASE)
        idle_since = chat.last_manager_at or chat.owner_changed_at or chat.created_at
        limit = timedelta(hours=chat.channel.idle_release_hours)
        if now - idle_since < limit:
            raise InvalidTransition(
                chat, OwnershipCause.IDLE_RELEASE, f"a manager was active {now - idle_since} ago"
            )
        _apply(
            chat,
            cause=OwnershipCause.IDLE_RELEASE,
            to=Owner.BOT,
            actor=None,
            actor_label="system",
            reason="",
            at=now,
        )
    return Result(chat, changed=True)


def idle_chat_ids(now: datetime | None = None) -> list[int]:
    """HUMAN chats whose manager has been silent past their channel's idle-release hours (not
    one with an answer kept for the customer's return: `pending_replies`)."""
    now = now or timezone.now()
    ids = []
    candidates = Chat.objects.filter(owner=Owner.HUMAN, pending__isnull=True)
    candidates = candidates.select_related("channel")
    for chat in candidates.only(
        "id", "last_manager_at", "owner_changed_at", "created_at", "channel__idle_release_hours"
    ):
        idle_since = chat.last_manager_at or chat.owner_changed_at or chat.created_at
        if now - idle_since >= timedelta(hours=chat.channel.idle_release_hours):
            ids.append(chat.pk)
    return ids
