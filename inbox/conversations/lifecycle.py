"""Resolve as the managers mean it: the work is done *and* nobody in particular has the chat.

`status.resolve` alone only moved the chat off the Open list; the manager stayed its owner and
assignee, so when the customer came back the bot kept silent and no one was waiting for them.
Here, in one transaction, the status becomes RESOLVED (`status`), the person's ownership ends
(`ownership.resolved`: to the bot, or to waiting for a human where the business's
`resolve_returns_to` says so) and the assignee is cleared (`assignment`). Each field keeps its
one writer and its own audit row. The inbox page and the JSON API both resolve through here
(`inbox.web.status_actions.resolve`).
"""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction

from inbox.conversations import assignment, ownership, status
from inbox.conversations.models import Business, Chat


def returns_to_bot(chat: Chat) -> bool:
    """Whether a resolved chat of this chat's business goes back to the bot."""
    business = Business.objects.only("resolve_returns_to").get(pk=chat.channel.business_id)
    return business.resolve_returns_to == Business.ResolveReturnsTo.BOT


def resolve(chat_id: int, *, manager: User | None) -> status.Result:
    """Resolve the chat and end whoever's ownership it was. A chat already resolved changes
    nothing (`changed=False`); raises `status.InvalidStatusChange` like `status.resolve`."""
    with transaction.atomic():
        result = status.resolve(chat_id, manager=manager)
        if not result.changed:
            return result
        ownership.resolved(chat_id, manager=manager, to_bot=returns_to_bot(result.chat))
        assignment.unassign(chat_id)
    return status.Result(Chat.objects.select_related("channel").get(pk=chat_id), changed=True)
