"""`accept`: from a normalised event to a stored message, on the consumer's side.

`accept_batch` runs in the ingest consumer (`worker`): a batch of events in one transaction
(`accept` is the batch of one). It is idempotent (the message table's unique constraint is the
durable second line of dedup), so an event delivered twice after a crash is stored once. The
consumer acknowledges a stream entry only after its batch committed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import transaction

from inbox.conversations import (
    debounce,
    delivery_status,
    hooks,
    identity,
    opt_outs,
    outbound,
    ownership,
)
from inbox.conversations.events import Event, InboundEvent, StatusEvent
from inbox.conversations.ingest.channels import (
    ChannelInfo,
    channel_info,
    touch_channel_on_commit,
)
from inbox.conversations.ingest.chats import (
    ChatKey,
    customer_wrote,
    locked_chats,
    rearm_unanswered,
    save_counters,
)
from inbox.conversations.ingest.cleaning import capped_text, storable
from inbox.conversations.ingest.messages import (
    after_stored,
    insert_messages,
    keep_full_text,
    new_message,
    provider_time,
    store_plain,
)
from inbox.conversations.models import Chat, Message

log = logging.getLogger(__name__)


@dataclass(slots=True)
class Accepted:
    message_id: int | None
    chat_id: int | None
    outcome: str  # stored | duplicate | status | status_early | edit | revoke | ignored


def accept(event: Event) -> Accepted:
    """Store one event. Safe to call twice with the same event (the second is a no-op)."""
    return accept_batch([event])[0]


def accept_batch(events: Sequence[Event]) -> list[Accepted]:
    """Store a batch of events in one transaction; the outcomes in the events' order.

    The same rules as one event at a time, at a per-batch cost: one locking query resolves
    every chat of the batch, one multi-row insert stores the plain customer messages, one save
    per touched chat. Events that need more (from the phone, edits and deletions, replays of
    a stored message) take the per-event path under the same row locks. Chats are locked in
    one order (channel, customer), so consumers do not deadlock on them. Statuses go last."""
    cleaned = [storable(event) for event in events]
    outcomes: list[Accepted | None] = [None] * len(cleaned)
    with transaction.atomic():
        inbound = [(i, e) for i, e in enumerate(cleaned) if isinstance(e, InboundEvent)]
        for i, accepted in _accept_messages(inbound):
            outcomes[i] = accepted
        for i, event in enumerate(cleaned):
            if isinstance(event, StatusEvent):
                outcomes[i] = _accept_status(event)
    return [a if a is not None else Accepted(None, None, "ignored") for a in outcomes]


def _accept_status(event: StatusEvent) -> Accepted:
    message = delivery_status.apply(event)
    opt_outs.from_status(event, message)  # WhatsApp says the customer stopped our messages
    if message is None:
        return Accepted(None, None, "status_early")
    return Accepted(message.pk, message.chat_id, "status")


def _is_plain(event: InboundEvent) -> bool:
    """A customer message that needs nothing but storing: the batched insert (a message
    without a provider id is never a duplicate, so it takes the per-event path)."""
    return (
        not event.from_me
        and bool(event.provider_message_id)
        and "revoke_of" not in event.extra
        and "edit_of" not in event.extra
        and "history" not in event.extra
    )


def _accept_messages(
    indexed: Sequence[tuple[int, InboundEvent]],
) -> list[tuple[int, Accepted]]:
    out: list[tuple[int, Accepted]] = []
    known: list[tuple[int, InboundEvent, ChannelInfo]] = []
    infos: dict[int, ChannelInfo | None] = {}  # the batch's channels, each looked up once
    # A chat with anything but plain customer messages in the batch takes the per-event path
    # for all its events: its rules (ownership, edits) depend on the order of its events.
    special: set[ChatKey] = set()
    identity.resolve([event for _i, event in indexed])
    for i, event in indexed:
        channel_id = event.channel_id
        channel = infos[channel_id] if channel_id in infos else channel_info(channel_id)
        infos[channel_id] = channel
        if channel is None:
            log.warning("ingest.unknown_channel", extra={"channel_id": channel_id})
            out.append((i, Accepted(None, None, "ignored")))
            continue
        known.append((i, event, channel))
        if not _is_plain(event):
            special.add((channel_id, event.chat_key))
    if not known:
        return out
    chats = locked_chats([event for _i, event, _c in known])
    if special:
        plain = [k for k in known if (k[1].channel_id, k[1].chat_key) not in special]
        out.extend(_accept_plain(plain, chats))
        for i, event, channel in known:
            key = (event.channel_id, event.chat_key)
            if key in special:
                out.append((i, _accept_one(event, chats[key], channel)))
    else:
        out.extend(_accept_plain(known, chats))
    stored = {i for i, accepted in out if accepted.outcome == "stored"}
    for channel_id in {event.channel_id for i, event, _c in known if i in stored}:
        touch_channel_on_commit(channel_id)
    return out


def _accept_plain(
    known: Sequence[tuple[int, InboundEvent, ChannelInfo]], chats: dict[ChatKey, Chat]
) -> list[tuple[int, Accepted]]:
    """Customer messages of chats with nothing else in the batch: one insert for them all
    (a message already stored is a duplicate), then one update per chat."""
    if not known:
        return []
    out: list[tuple[int, Accepted]] = []
    new: list[tuple[int, InboundEvent, ChannelInfo, Chat]] = []
    seen: set[tuple[int, str]] = set()
    for i, event, channel in known:
        chat = chats[(event.channel_id, event.chat_key)]
        key = (event.channel_id, event.provider_message_id)
        if key in seen:
            rearm_unanswered(chat, event)
            out.append((i, Accepted(None, chat.id, "duplicate")))
            continue
        seen.add(key)
        new.append((i, event, channel, chat))
    messages, counted = store_plain([(event, chat) for _i, event, _c, chat in new])
    per_chat: dict[int, tuple[Chat, ChannelInfo, list[Message]]] = {}
    for (i, event, channel, chat), message in zip(new, messages, strict=True):
        if message is None:
            rearm_unanswered(chat, event)
            out.append((i, Accepted(None, chat.id, "duplicate")))
            continue
        after_stored(message, event)
        entry = per_chat.get(chat.id)
        if entry is None:
            entry = per_chat[chat.id] = (chat, channel, [])
        entry[2].append(message)
        out.append((i, Accepted(message.id, chat.id, "stored")))
    timers: dict[int, float | None] = {}
    # A chat the insert wrote the counters of needs no save (`customer_wrote` sets the same
    # values on the object); one with a message stored already gets its counters here.
    unsaved = [
        chat
        for chat, channel, chat_messages in per_chat.values()
        if not customer_wrote(chat, chat_messages, channel, timers) and chat.id not in counted
    ]
    save_counters(unsaved)
    debounce.schedule_many_on_commit(timers)
    by_business: dict[int, list[tuple[Message, Chat]]] = {}
    for chat, channel, chat_messages in per_chat.values():
        by_business.setdefault(channel.business_id, []).extend([(m, chat) for m in chat_messages])
    for business_id, items in by_business.items():
        hooks.messages_received(items, business_id=business_id)
    return out


def _accept_one(event: InboundEvent, locked: Chat, channel: ChannelInfo) -> Accepted:
    """One event of a chat whose events need their order: the chat is read again (an earlier
    event of the batch may have changed its owner); its row lock is held already."""
    chat = (
        Chat.objects.select_for_update(of=("self",))
        .select_related("channel", "assigned_to")
        .get(pk=locked.pk)
    )
    if event.from_me and outbound.is_bot_sent(chat.pk, event.provider_message_id):
        # Our own reply coming back from the phone: the owner stays as it is.
        return Accepted(None, chat.pk, "duplicate")
    if "revoke_of" in event.extra or "edit_of" in event.extra:
        applied = _apply_edit_or_revoke(chat, event)
        if applied is not None:
            return applied
    message = insert_messages([new_message(chat, event)])[0]
    if message is None:
        if not event.from_me:
            rearm_unanswered(chat, event)
        return Accepted(None, chat.pk, "duplicate")
    after_stored(message, event)
    if event.extra.get("history"):
        # Replayed history (a linked-device gateway's sync after a reconnect): shown in the
        # chat, never answered as new, and what the phone sent back then takes nothing over.
        # Marked answered unless newer customer messages are waiting.
        waiting = chat.messages.filter(
            direction=Message.Direction.INBOUND, pk__gt=chat.answered_up_to, pk__lt=message.pk
        ).exclude(payload__history=True)
        if not waiting.exists():
            Chat.objects.filter(pk=chat.pk, answered_up_to__lt=message.pk).update(
                answered_up_to=message.pk
            )
        hooks.message_changed(message.pk)
    elif event.from_me:
        # A manager wrote from the phone (or the Business App): they own the chat now.
        ownership.manager_replied(chat.pk, manager=None, at=provider_time(event))
        hooks.message_changed(message.pk)
    else:
        if not customer_wrote(chat, [message], channel):
            save_counters([chat])
        hooks.messages_received([(message, chat)], business_id=channel.business_id)
    return Accepted(message.pk, chat.pk, "stored")


def _apply_edit_or_revoke(chat: Chat, event: InboundEvent) -> Accepted | None:
    """Edits and deletions change the original message; None when we never saw the original
    (then the event is stored as a message of its own)."""
    target_id = event.extra.get("revoke_of") or event.extra.get("edit_of") or ""
    original = Message.objects.filter(channel_id=event.channel_id, provider_message_id=target_id)
    message = original.select_for_update().first()
    if message is None or message.chat_id != chat.pk:
        return None
    payload = dict(message.payload)
    if "revoke_of" in event.extra:
        # Deleted for everyone: keep the row (the conversation's shape), drop the content.
        payload["revoked"] = True
        message.text = ""
        message.transcript = ""
        message.payload = payload
        message.save(update_fields=["text", "transcript", "payload"])
        outcome = "revoke"
    else:
        payload.setdefault("edits", []).append({"previous_text": message.text[:4096]})
        payload["edited"] = True
        message.text, original_chars = capped_text(event.text)
        if original_chars:
            payload["text_truncated"] = {"original_chars": original_chars}
        message.payload = payload
        message.save(update_fields=["text", "payload"])
        if original_chars:
            keep_full_text(message, event.text)
        outcome = "edit"
    hooks.message_changed(message.pk)
    return Accepted(message.pk, chat.pk, outcome)
