"""How far each manager has read each chat: the per-manager unread count.

A `ReadMarker` per (manager, chat) holds the chat's `customer_messages` counter (and the last
customer message id) as of the manager's last look; the manager's unread count is the counter
minus the marker. The counter is bumped in the ingest's own save of the chat row, so counting
costs no query per message; a marker only moves when a manager looks (opens the chat, or has it
open when a message arrives).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import (
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Coalesce, Greatest

from inbox.conversations.models import Chat, Message, ReadMarker


def with_unread(chats: QuerySet[Chat], user_id: int) -> QuerySet[Chat]:
    """Annotate `my_read` (the marker's count, 0 without one) and `my_unread` for this user."""
    read = ReadMarker.objects.filter(chat=OuterRef("pk"), user_id=user_id).values("read_count")[:1]
    return chats.annotate(
        my_read=Coalesce(Subquery(read, output_field=IntegerField()), Value(0))
    ).annotate(
        my_unread=Greatest(
            Value(0),
            ExpressionWrapper(F("customer_messages") - F("my_read"), output_field=IntegerField()),
            output_field=IntegerField(),
        )
    )


def read_counts(user_id: int, chat_ids: list[int]) -> dict[int, int]:
    """The user's read count per chat (0 for a chat never read)."""
    found = dict(
        ReadMarker.objects.filter(user_id=user_id, chat_id__in=chat_ids).values_list(
            "chat_id", "read_count"
        )
    )
    return {chat_id: found.get(chat_id, 0) for chat_id in chat_ids}


def mark_read(user_id: int, chat_id: int) -> int:
    """The manager has seen everything in the chat so far. Returns their read count. A marker
    never moves back (two tabs, a late websocket frame)."""
    row = Chat.objects.filter(pk=chat_id).values_list("customer_messages", flat=True).first()
    if row is None:
        return 0
    count = int(row)
    last_id = (
        Message.objects.filter(chat_id=chat_id, direction=Message.Direction.INBOUND)
        .order_by("-pk")
        .values_list("pk", flat=True)
        .first()
    ) or 0
    updated = ReadMarker.objects.filter(
        user_id=user_id, chat_id=chat_id, read_count__lt=count
    ).update(read_count=count, last_read_id=last_id)
    if updated:
        return count
    try:
        with transaction.atomic():
            ReadMarker.objects.create(
                user_id=user_id, chat_id=chat_id, read_count=count, last_read_id=last_id
            )
    except IntegrityError:
        pass  # the marker exists and is already at (or past) this count
    return count
