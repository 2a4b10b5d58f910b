"""Delivery statuses of our outbound messages (sent, delivered, read, played, failed), as the
provider reports them: at least once, in any order, and sometimes before the send's own
response has told us the message's id. A status only moves a message forward; one that arrives
early is kept in Redis for an hour and applied when the send is recorded (`apply_early`).

A message a manager or the bot sent that fails is counted (`metrics.REPLIES_FAILED`, by code) and
told to its listeners (`hooks.message_failed`: the notice to the chat's owner, the CRM). A
131026 ("cannot receive messages") marks the customer undeliverable on the chat until they
write again (`undeliverable`), and the bot stops answering the chat meanwhile."""

from __future__ import annotations

import json
from datetime import datetime

from django.db.models import Q
from django.utils import timezone

from inbox.conversations import hooks
from inbox.conversations.delivery_errors import Code
from inbox.conversations.events import StatusEvent, provider_datetime
from inbox.conversations.models import Chat, Message
from inbox.platform import metrics
from inbox.platform.redis import get_redis

# How long a status that beat the send's response waits for it.
EARLY_STATUS_TTL_SECONDS = 3600

# A status only moves forward; statuses are at-least-once and arrive in any order.
_RANK = {
    Message.Status.SENDING: 0,
    Message.Status.SENT: 1,
    Message.Status.DELIVERED: 2,
    Message.Status.READ: 3,
    Message.Status.PLAYED: 4,
    Message.Status.FAILED: 5,
}
# Whose failed messages raise a notice (a customer's own messages never get statuses; a
# message typed on the phone is the phone's to report).
NOTICE_AUTHORS = frozenset({Message.Author.MANAGER, Message.Author.BOT})


def apply(event: StatusEvent) -> Message | None:
    """Record a delivery status on our outbound message. None when we do not know the message
    id yet (the status is kept and applied once the send's response is recorded)."""
    message = (
        Message.objects.filter(
            channel_id=event.channel_id, provider_message_id=event.provider_message_id
        )
        .only("id", "status", "chat_id", "author")
        .first()
    )
    if message is None:
        # The status can beat our own record of the wamid (the send's response): keep it.
        _keep_early(event)
        return None
    _apply_to(message, event)
    return message


def _apply_to(message: Message, event: StatusEvent) -> None:
    at = provider_datetime(event.provider_ts) or timezone.now()
    if event.status == "deleted":
        return
    new = Message.Status(event.status)
    lower = [status for status, rank in _RANK.items() if rank < _RANK[new]]
    fields: dict[str, object] = {"status": new, "status_at": at}
    if new == Message.Status.FAILED:
        fields.update(error_code=event.error_code[:32], error_title=event.error_title[:500])
        # A failure never overrides proof that the customer read the message.
        lower = [s for s in lower if s not in (Message.Status.READ, Message.Status.PLAYED)]
    updated = Message.objects.filter(pk=message.pk, status__in=lower).update(**fields)
    if not updated:
        return
    hooks.message_changed(message.pk)
    if new == Message.Status.FAILED:
        _failed(message, event.error_code, at)


def _failed(message: Message, code: str, at: datetime) -> None:
    """What a message's failure changes besides its row (the caller holds the transaction)."""
    metrics.REPLIES_FAILED.labels(author=message.author, code=code[:32] or "none").inc()
    if code == Code.UNDELIVERABLE:
        mark_undeliverable(message.chat_id, at)
    if message.author in NOTICE_AUTHORS:
        hooks.message_failed(message.pk)


def mark_undeliverable(chat_id: int, at: datetime) -> None:
    """WhatsApp said (131026, at `at` by its clock) that the customer cannot receive messages.
    A later customer message lifts it; an older failure never moves it back in time."""
    marked = (
        Chat.objects.filter(pk=chat_id)
        .filter(Q(undeliverable_at__isnull=True) | Q(undeliverable_at__lt=at))
        .update(undeliverable_at=at)
    )
    if marked:
        hooks.chat_updated(chat_id)


def undeliverable(chat: Chat) -> bool:
    """WhatsApp said the customer cannot receive messages, and they have not written since."""
    if chat.undeliverable_at is None:
        return False
    return chat.last_customer_at is None or chat.last_customer_at <= chat.undeliverable_at


def _early_key(channel_id: int, provider_message_id: str) -> str:
    return f"early_status:{channel_id}:{provider_message_id}"


def _keep_early(event: StatusEvent) -> None:
    key = _early_key(event.channel_id, event.provider_message_id)
    pipe = get_redis().pipeline()
    pipe.rpush(key, event.to_json())
    pipe.expire(key, EARLY_STATUS_TTL_SECONDS)
    pipe.execute()


def apply_early(channel_id: int, provider_message_id: str) -> None:
    """Apply the statuses that arrived before the send's response named the message."""
    key = _early_key(channel_id, provider_message_id)
    pipe = get_redis().pipeline()
    pipe.lrange(key, 0, -1)
    pipe.delete(key)
    raw_events, _ = pipe.execute()
    if not raw_events:
        return
    message = Message.objects.filter(
        channel_id=channel_id, provider_message_id=provider_message_id
    ).first()
    if message is None:
        return
    for raw in raw_events:
        data = json.loads(raw)
        data.pop("type", None)
        _apply_to(message, StatusEvent(**data))
