"""The chats of a batch: their row locks, their counters, and what customer messages do to
them (reopen, a debounce timer, a transcription).

Chats are locked in one order, (channel, customer), so consumers never deadlock on them; the
caller holds those locks for its transaction. On PostgreSQL the locking query and the counters'
UPDATE are `sql`'s fixed statements; elsewhere Django's ORM does the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

import inbox.conversations.ingest.sql as sql
from inbox.conversations import debounce, hooks, identity, ownership, status, voice, window
from inbox.conversations.events import InboundEvent
from inbox.conversations.ingest.channels import ChannelInfo, channel_info
from inbox.conversations.models import Chat, ChatStatus, Message, Owner

# Kinds a customer sends that the assistant should answer. Reactions, stickers, revokes and
# unsupported types are shown to managers but never start a turn.
TURN_KINDS = frozenset(
    {"text", "voice", "audio", "image", "document", "video", "location", "contacts", "interactive"}
)
VOICE_KINDS = frozenset({"voice", "audio"})

ChatKey = tuple[int, str]  # (channel id, customer key): a chat's identity, and its lock order
_OPEN = ChatStatus.OPEN.value  # as stored: read once, not from the enum per chat


def locked_chats(events: Sequence[InboundEvent]) -> dict[ChatKey, Chat]:
    """Every chat of the events, created if new, with its row locked for the rest of the
    transaction: one ordered SELECT … FOR UPDATE for the chats that exist, one INSERT per new
    chat (rare: a customer's first message), then one SELECT for those. A new phone whose
    BSUID keys a chat re-keys that chat instead, and each chat stores its customer's BSUID
    (`identity`: the events' keys are `identity.resolve`d before)."""
    first_event: dict[ChatKey, InboundEvent] = {}
    for event in events:
        first_event.setdefault((event.channel_id, event.chat_key), event)
    found = _select_locked(sorted(first_event))
    missing = sorted(key for key in first_event if key not in found)
    if missing and identity.rekey({key: first_event[key] for key in missing}):
        found.update(_select_locked(missing))
        missing = [key for key in missing if key not in found]
    for key in missing:
        event = first_event[key]
        try:
            with transaction.atomic():
                chat = Chat.objects.create(
                    channel_id=key[0],
                    customer_key=key[1],
                    customer_name=event.customer_name,
                    customer_phone=event.customer_phone,
                    customer_bsuid=event.customer_bsuid,
                    customer_username=event.customer_username,
                )
        except IntegrityError:
            pass  # another consumer created it meanwhile; locked below
        else:
            info = channel_info(key[0])
            if info is not None:
                hooks.chat_created(chat.pk, business_id=info.business_id)
    if missing:
        found.update(_select_locked(missing))
    identity.adopt(events, found)
    return found


def _select_locked(keys: Sequence[ChatKey]) -> dict[ChatKey, Chat]:
    if not keys:
        return {}
    if sql.available():
        infos = {channel_id: channel_info(channel_id) for channel_id in {k[0] for k in keys}}
        channels = {channel_id: info.channel for channel_id, info in infos.items() if info}
        return sql.lock_chats(keys, channels)
    by_channel: dict[int, list[str]] = {}
    for channel_id, customer_key in keys:
        by_channel.setdefault(channel_id, []).append(customer_key)
    condition = Q()
    for channel_id, customer_keys in by_channel.items():
        condition |= Q(channel_id=channel_id, customer_key__in=customer_keys)
    chats = (
        Chat.objects.select_for_update(of=("self",))
        .select_related("channel", "assigned_to")
        .filter(condition)
        .order_by("channel_id", "customer_key")
    )
    return {(chat.channel_id, chat.customer_key): chat for chat in chats}


CHAT_COUNTERS = [name for name, _type in sql.COUNTER_COLUMNS]


@dataclass
class Counters:
    """A chat's `CHAT_COUNTERS`, counted apart from the chat (`counters_if_stored`)."""

    version: int
    customer_messages: int
    last_customer_at: datetime | None
    last_message_at: datetime | None
    window_closes_at: datetime | None


def count_customer_message(counters: Chat | Counters, at: datetime, kind: str) -> None:
    """What one customer message, written at `at`, does to its chat's counters: the one
    place for the rule (the batched insert writes its result ahead of `customer_wrote`).
    `kind`: the chat's channel's (its window: `window.closes_after`)."""
    counters.version += 1
    counters.customer_messages += 1
    counters.last_customer_at = at
    counters.last_message_at = at
    counters.window_closes_at = window.closes_after(counters.window_closes_at, at, kind)


def counters_if_stored(
    items: Sequence[tuple[InboundEvent, Chat]], rows: Sequence[dict[str, Any]]
) -> list[list[Any]]:
    """Per open chat of the items: [id, *its counters once all its rows are stored, how many
    rows that is], as `sql.insert_customer_messages` takes them; the counters as
    `customer_wrote` will count the same messages (`count_customer_message`). A resolved or
    snoozed chat reopens: its counters go with its status, in its own save."""
    per_chat: dict[int, tuple[Counters, list[int]]] = {}
    for (_event, chat), row in zip(items, rows, strict=True):
        if chat.status != _OPEN:
            continue
        entry = per_chat.get(chat.id)
        if entry is None:
            counters = Counters(
                chat.version, chat.customer_messages, chat.last_customer_at,
                chat.last_message_at, chat.window_closes_at,
            )  # fmt: skip
            entry = per_chat[chat.id] = (counters, [0])
        count_customer_message(entry[0], row["provider_timestamp"], chat.channel.kind)
        entry[1][0] += 1
    return [
        [chat_id, counters.version, counters.customer_messages, counters.last_customer_at,
         counters.last_message_at, counters.window_closes_at, n[0]]
        for chat_id, (counters, n) in per_chat.items()
    ]  # fmt: skip


def customer_wrote(
    chat: Chat,
    messages: Sequence[Message],
    channel: ChannelInfo,
    timers: dict[int, float | None] | None = None,
) -> bool:
    """Customer messages (in order) make any reply being prepared stale and (if the bot owns
    the chat) start or restart the chat's debounce timer. The caller holds the row lock.

    Returns True when the chat was saved here (it reopened); else the caller saves the
    counters (`save_counters`), for many chats in one query. With `timers` the chat's timer
    is added there, for the caller to start with the batch's others."""
    reopened: list[str] = []
    schedule = False
    if messages and chat.status == ChatStatus.RESOLVED:
        # Resolved into waiting for a human: it waits again from this message on.
        first_at = messages[0].provider_timestamp or timezone.now()
        reopened = ownership.customer_returned(chat, first_at)
    for message in messages:
        at = message.provider_timestamp or timezone.now()
        count_customer_message(chat, at, chat.channel.kind)
        # A resolved or snoozed chat is open again: part of this same save (no query when open).
        reopening = status.reopen_on_customer_message(chat, at)
        if reopening:
            reopened = list(dict.fromkeys([*reopened, *reopening]))
        if message.kind in VOICE_KINDS and message.media_ref:
            # The timer starts when the transcript is ready, not when the audio arrived.
            voice.transcribe_on_commit(message.pk)
        elif chat.owner == Owner.BOT and message.kind in TURN_KINDS:
            schedule = True
    if reopened:
        chat.save(update_fields=[*CHAT_COUNTERS, *reopened])
    if schedule:
        # One timer per chat and batch: a burst ends in one turn either way (`debounce`).
        if timers is None:
            debounce.schedule_on_commit(chat.pk, channel.debounce_seconds)
        else:
            timers[chat.id] = channel.debounce_seconds
    return bool(reopened)


def save_counters(chats: Sequence[Chat]) -> None:
    """The counters `customer_wrote` changed, for every chat in one UPDATE (PostgreSQL:
    `sql.save_counters`; elsewhere Django's bulk_update, the same in one statement)."""
    if not chats:
        return
    if sql.available():
        sql.save_counters(chats)
    else:
        Chat.objects.bulk_update(chats, CHAT_COUNTERS)


def rearm_unanswered(chat: Chat, event: InboundEvent) -> None:
    """A replayed event whose message is stored but still unanswered: the first time round, its
    turn may never have been scheduled (Redis went away right after the commit, and the event was
    not acknowledged, so it comes back). Scheduling again is harmless: the debounce runs one turn
    over whatever is pending, and the send path answers each message once."""
    stored = (
        Message.objects.filter(
            channel_id=event.channel_id, provider_message_id=event.provider_message_id
        )
        .values_list("pk", "kind")
        .first()
    )
    if stored is None or chat.owner != Owner.BOT or stored[0] <= chat.answered_up_to:
        return
    if stored[1] in TURN_KINDS and stored[1] not in VOICE_KINDS:
        debounce.schedule_on_commit(chat.pk)
