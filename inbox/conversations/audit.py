"""The audit trail of a chat's owner and status: the one place a `ChatTransition` row is written.

`inbox/conversations/ownership.py` (who speaks) and `inbox/conversations/status.py` (whether a
manager still has work) each change their field, under the chat's row lock, then call `record`
with what the field was before; the row takes the rest from the chat as it is now.
"""

from __future__ import annotations

from django.contrib.auth.models import User

from inbox.conversations import names
from inbox.conversations.models import (
    Chat,
    ChatStatus,
    ChatTransition,
    Owner,
    OwnershipCause,
    StatusCause,
)


def label_for(actor: User | None, fallback: str) -> str:
    """Who did it, as the history shows it: the manager's name, else `fallback` (bot, phone,
    system, customer)."""
    if actor is None:
        return fallback
    full_name = getattr(actor, "get_full_name", lambda: "")()
    return str(full_name or actor.get_username())


def record(
    chat: Chat,
    cause: OwnershipCause | StatusCause,
    *,
    actor: User | None,
    actor_label: str,
    from_owner: Owner | str | None = None,
    from_status: ChatStatus | str | None = None,
    reason: str = "",
) -> ChatTransition:
    """Write the audit row of the change just made to `chat` (its new owner or status already
    set on the instance, saved or about to be by the caller, who holds the row lock).

    An owner change passes `from_owner`; a status change passes `from_status`, and the row then
    carries the chat's new status and its snooze time. An unsaved actor (a user object without a
    primary key) is kept by its label only; a saved one by the name the chat's business shows
    of them (`names.display_name`), so the history reads as the team speaks."""
    status_change = from_status is not None
    if actor is not None and actor.pk:
        actor_label = names.display_name(actor, chat.channel.business_id, actor_label)
    return ChatTransition.objects.create(
        chat=chat,
        from_owner=chat.owner if from_owner is None else from_owner,
        to_owner=chat.owner,
        from_status=from_status or "",
        to_status=chat.status if status_change else "",
        snoozed_until=chat.snoozed_until if status_change else None,
        cause=cause,
        reason=reason,
        actor=actor if actor is not None and actor.pk else None,
        actor_label=actor_label,
        version=chat.version,
    )
