"""Optional auto-assignment: a chat that starts waiting for a human goes to the next manager.

Off unless the business turns it on (`Business.auto_assign`, on the Team page). Round robin over
the members who may see the chat's channel (`access.assignable_memberships`), are online
(`online`) and hold fewer open chats (HUMAN or PENDING_HUMAN, assigned to them) than their
`Membership.chat_cap` (empty = no cap, 0 = never). The cursor is the user id the last chat
went to (`Business.auto_assign_cursor`), read and moved under the business row's lock, so two
handoffs at once never both pick the same turn.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Count, Q

from inbox.conversations import access, assignment, online
from inbox.conversations.models import Business, Chat, Owner

log = logging.getLogger(__name__)

OPEN_OWNERS = (Owner.HUMAN, Owner.PENDING_HUMAN)


def open_chat_counts(business_id: int, user_ids: list[int]) -> dict[int, int]:
    """How many open chats of this business each user is assigned."""
    rows = (
        Chat.objects.filter(
            channel__business_id=business_id, assigned_to_id__in=user_ids, owner__in=OPEN_OWNERS
        )
        .values("assigned_to_id")
        .annotate(n=Count("id"))
    )
    return {row["assigned_to_id"]: row["n"] for row in rows}


def candidates(chat: Chat) -> list[int]:
    """User ids that may take this chat now, in round-robin order (by user id)."""
    business_id = chat.channel.business_id
    present = online.online_user_ids(business_id)
    if not present:
        return []
    members = list(
        access.assignable_memberships(chat)
        .filter(user_id__in=present, user__is_active=True)
        .filter(Q(chat_cap__isnull=True) | Q(chat_cap__gt=0))
    )
    counts = open_chat_counts(business_id, [m.user_id for m in members])
    return sorted(
        m.user_id for m in members if m.chat_cap is None or counts.get(m.user_id, 0) < m.chat_cap
    )


def next_in_turn(user_ids: list[int], cursor: int) -> int:
    """The first user id after the cursor, wrapping around."""
    return next((user_id for user_id in user_ids if user_id > cursor), user_ids[0])


def assign_waiting_chat(chat_id: int) -> int | None:
    """Give a chat that now waits for a human to the next manager in turn, when its business
    turned auto-assignment on and the chat has nobody yet. Returns the assignee's user id."""
    chat = Chat.objects.select_related("channel__business").filter(pk=chat_id).first()
    if chat is None or chat.owner != Owner.PENDING_HUMAN or chat.assigned_to_id is not None:
        return None
    if not chat.channel.business.auto_assign:
        return None  # the common case: no business row lock taken
    with transaction.atomic():
        business = Business.objects.select_for_update().filter(pk=chat.channel.business_id).first()
        if business is None or not business.auto_assign:
            return None
        ids = candidates(chat)
        if not ids:
            log.info("auto_assign.nobody", extra={"chat_id": chat_id})
            return None
        user_id = next_in_turn(ids, business.auto_assign_cursor)
        if not assignment.assign(chat_id, user_id, only_if_unassigned=True):
            return None
        Business.objects.filter(pk=business.pk).update(auto_assign_cursor=user_id)
    log.info("auto_assign.assigned", extra={"chat_id": chat_id, "user_id": user_id})
    return user_id
