"""Who is responsible for a chat: the one place that sets `Chat.assigned_to`.

Separate from the owner (`inbox.conversations.ownership`): the owner says who speaks (bot or
human), the assignee which manager looks after the chat. Every change tells the dashboards; a new
assignee also reaches the CRM (`hooks.chat_assigned`).
"""

from __future__ import annotations

from django.db import transaction

from inbox.conversations import hooks
from inbox.conversations.models import Chat


def assign(chat_id: int, assignee_id: int | None, *, only_if_unassigned: bool = False) -> bool:
    """Set the chat's assignee (None: nobody). With `only_if_unassigned`, a chat someone already
    has stays theirs. Returns False when nothing changed."""
    chats = Chat.objects.filter(pk=chat_id)
    if only_if_unassigned:
        chats = chats.filter(assigned_to__isnull=True)
    elif assignee_id is None:
        chats = chats.filter(assigned_to__isnull=False)
    else:
        chats = chats.exclude(assigned_to_id=assignee_id)
    with transaction.atomic():
        changed = chats.update(assigned_to_id=assignee_id) == 1
        if changed and assignee_id is not None:
            hooks.chat_assigned(chat_id, assignee_id=assignee_id)
        if changed:
            hooks.chat_updated(chat_id)
    return changed


def unassign(chat_id: int) -> bool:
    return assign(chat_id, None)
