"""Delivery statuses of our outbound messages (sent, delivered, read, played, failed), as the
provider reports them: at least once, in any order, and sometimes before the send's own
response has told us the message's id. A status only moves a message forward; one that arrives
early is kept in Redis for an hour and applied when the send is recorded (`apply_early`)."""

from __future__ import annotations

import json

from django.utils import timezone

from inbox.conversations import hooks
from inbox.conversations.events import StatusEvent, provider_datetime
from inbox.conversations.models import Message
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


def apply(event: StatusEvent) -> Message | None:
    """Record a delivery status on our outbound message. None when we do not know the message
    id yet (the status is kept and applied once the send's response is recorded)."""
    message = (
        Message.objects.filter(
            channel_id=event.channel_id, provider_message_id=event.provider_message_id
        )
        .only("id", "status", "chat_id")
        .first()
    )
    if message is None:
        # The status can beat our own record of the wamid (the send's response): keep it.
        _keep_early(event)
        return None
    _apply_to(message.pk, event)
    return message


def _apply_to(message_id: int, event: StatusEvent) -> None:
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
    updated = Message.objects.filter(pk=message_id, status__in=lower).update(**fields)
    if updated:
        hooks.message_changed(message_id)


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
        _apply_to(message.pk, StatusEvent(**data))
