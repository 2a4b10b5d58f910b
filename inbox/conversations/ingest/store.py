"""From a normalised event to a stored message: dedup, the durable queue, and `accept`.

Two halves, split by the one hot path of the product:

* `enqueue` / `aenqueue` run inside the webhook request. Per event, one Lua script in Redis drops
  a duplicate (key per channel + provider message id, kept a day) or appends the event to a Redis
  stream. The 200 goes back only after that, so an acknowledged event is in the queue (Redis runs
  with an append-only file; see docs/ingest.md for the durability trade-off).
* `accept_batch` runs in the ingest consumer (`manage.py ingest_worker`): a batch of events in
  one transaction (`accept` is the batch of one). It is idempotent (the message table's unique
  constraint is the durable second line of dedup), so an event delivered twice after a crash is
  stored once. The consumer acknowledges a stream entry only after its batch committed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial
from operator import attrgetter
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from inbox.conversations import (
    attachments,
    debounce,
    hooks,
    outbound,
    ownership,
    status,
    voice,
)
from inbox.conversations.events import Event, InboundEvent, StatusEvent, provider_datetime
from inbox.conversations.ingest import sql as ingest_sql
from inbox.conversations.models import Channel, Chat, ChatStatus, Message, Owner
from inbox.conversations.transports import MediaBlob
from inbox.platform.redis import get_redis

log = logging.getLogger(__name__)

STREAM = "ingest:events"
DEAD_LETTER_STREAM = "ingest:dead"
GROUP = "ingest"
DEDUP_SECONDS = 86400

# Kinds a customer sends that the assistant should answer. Reactions, stickers, revokes and
# unsupported types are shown to managers but never start a turn.
TURN_KINDS = frozenset(
    {"text", "voice", "audio", "image", "document", "video", "location", "contacts", "interactive"}
)
VOICE_KINDS = frozenset({"voice", "audio"})

# XADD before SET: if appending fails nothing is marked seen, so the provider's retry gets in.
_ENQUEUE_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('XADD', KEYS[2], '*', 'e', ARGV[1])
redis.call('SET', KEYS[1], '1', 'EX', ARGV[2])
return 1
"""


# A lone UTF-16 surrogate ("\ud83d": a JS bridge cutting an emoji in half) is valid JSON but
# not UTF-8: Redis could not take the event, and with it the whole body's events.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def utf8_safe(text: str) -> str:
    """The text with every lone surrogate replaced by U+FFFD (one pass, only when needed)."""
    if _LONE_SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@dataclass(frozen=True)
class EnqueueResult:
    accepted: int
    duplicates: int


def dedup_key(event: Event) -> str:
    if isinstance(event, StatusEvent):
        # Statuses are at-least-once too; the same status for the same message is one event.
        return utf8_safe(f"seen:{event.channel_id}:{event.provider_message_id}:{event.status}")
    return utf8_safe(f"seen:{event.channel_id}:{event.provider_message_id}")


def enqueue(events: Sequence[Event], client: redis.Redis | None = None) -> EnqueueResult:
    """Dedup and queue events (synchronous callers: the sandbox page, management commands)."""
    if not events:
        return EnqueueResult(0, 0)
    client = client or get_redis()
    script = client.register_script(_ENQUEUE_SCRIPT)
    pipe = client.pipeline(transaction=False)
    for event in events:
        script(
            keys=[dedup_key(event), STREAM],
            args=[utf8_safe(event.to_json()), DEDUP_SECONDS],
            client=pipe,
        )
    results = pipe.execute()
    accepted = sum(1 for r in results if r == 1)
    return EnqueueResult(accepted, len(results) - accepted)


_async_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, aioredis.Redis]] = (
    weakref.WeakKeyDictionary()
)


def _async_client() -> aioredis.Redis:
    """One async client per event loop (a connection pool cannot cross loops)."""
    clients = _async_clients.setdefault(asyncio.get_running_loop(), {})
    url = settings.REDIS_URL
    if url not in clients:
        clients[url] = aioredis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=2)
    return clients[url]


async def aenqueue(events: Sequence[Event]) -> EnqueueResult:
    """`enqueue` for the webhook endpoints: no thread hop, one round trip for the whole body."""
    if not events:
        return EnqueueResult(0, 0)
    client = _async_client()
    script = client.register_script(_ENQUEUE_SCRIPT)
    if len(events) == 1:
        # The usual body (one message): EVALSHA straight away. A pipeline would first ask the
        # server whether the script is loaded (SCRIPT EXISTS), a second round trip per webhook.
        event = events[0]
        result = await script(
            keys=[dedup_key(event), STREAM], args=[utf8_safe(event.to_json()), DEDUP_SECONDS]
        )
        return EnqueueResult(1, 0) if result == 1 else EnqueueResult(0, 1)
    pipe = client.pipeline(transaction=False)
    for event in events:
        await script(
            keys=[dedup_key(event), STREAM],
            args=[utf8_safe(event.to_json()), DEDUP_SECONDS],
            client=pipe,
        )
    results = await pipe.execute()
    accepted = sum(1 for r in results if r == 1)
    return EnqueueResult(accepted, len(results) - accepted)


# --- accept: the consumer side ---------------------------------------------------------------


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
    message = outbound.apply_status(event)
    if message is None:
        return Accepted(None, None, "status_early")
    return Accepted(message.pk, message.chat_id, "status")


def _without_nul(value: Any) -> Any:
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, list):
        return [_without_nul(v) for v in value]
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    return value


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    return False


# Each event type's text fields, read at once: the scan below joins them and looks for a NUL
# once. The others hold no text of their own (`media` and `extra` are scanned apart). A field
# added later lands with the text fields: if it is not text, the join fails and every event
# takes the full pass (slower, still right).
_NOT_TEXT = {"channel_id", "from_me", "media", "provider_ts", "extra"}
_TEXT_FIELDS: dict[type, Callable[[Event], tuple[str, ...]]] = {
    event_type: attrgetter(
        *(field.name for field in dataclasses.fields(event_type) if field.name not in _NOT_TEXT)
    )
    for event_type in (InboundEvent, StatusEvent)
}


def _nul_free(event: Event) -> bool:
    """Whether the event holds no NUL anywhere (a joined scan: a third of a field-by-field
    one). A field of the wrong type (a broken producer) answers False: the full pass of
    `storable` copes with any type."""
    try:
        if "\x00" in "".join(_TEXT_FIELDS[type(event)](event)):
            return False
        media = event.media if isinstance(event, InboundEvent) else None
        if media is not None and "\x00" in "".join(
            (media.ref, media.mime_type, media.sha256, media.filename)
        ):
            return False
    except TypeError:
        return False
    return not (event.extra and _has_nul(event.extra))


def storable(event: Event) -> Event:
    """The event with every NUL character replaced by U+FFFD. JSON allows "\\u0000" in a
    customer's text or name; PostgreSQL text and jsonb do not, and the whole event would fail
    (and end in the dead-letter stream, unanswered) over one invisible character. An event
    without one (nearly all) is returned as it is, after a scan that costs half a
    microsecond."""
    if _nul_free(event):
        return event
    changes = {
        f.name: _without_nul(getattr(event, f.name))
        for f in dataclasses.fields(event)
        if isinstance(getattr(event, f.name), str | list | dict)
    }
    if isinstance(event, InboundEvent) and event.media is not None:
        media = event.media
        changes["media"] = dataclasses.replace(
            media,
            ref=_without_nul(media.ref),
            mime_type=_without_nul(media.mime_type),
            sha256=_without_nul(media.sha256),
            filename=_without_nul(media.filename),
        )
    return dataclasses.replace(event, **changes)


# The full text of a message longer than INBOUND_TEXT_MAX_CHARS, kept as its attachment.
FULL_TEXT_FILENAME = "full-message.txt"


def capped_text(text: str, limit: int | None = None) -> tuple[str, int]:
    """The text as stored on the message, and its original length when it was cut (0 when
    not). WhatsApp lets a person send at most 65,536 characters (settings.py); longer text is
    a script or a broken bridge, and a 2.9 MB message went to every page, prompt and CRM
    comment whole."""
    if limit is None:
        limit = settings.INBOUND_TEXT_MAX_CHARS
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text)


def _keep_full_text(message: Message, text: str) -> None:
    """The whole text of a cut message, kept as its attachment (nothing the customer sent is
    lost: managers download it from the message). A message that has one already keeps it."""
    if not message.media_file:
        attachments.keep(message, MediaBlob(text.encode("utf-8"), "text/plain; charset=utf-8"))


def _provider_time(event: InboundEvent) -> datetime:
    return provider_datetime(event.provider_ts) or timezone.now()


@dataclass(frozen=True)
class _ChannelInfo:
    business_id: int
    debounce_seconds: float
    # The channel as loaded (its token decrypted once), for the chats and messages of a batch:
    # what listeners read of it (the business, the name) without a query per chat.
    channel: Channel


_CHANNEL_TTL_SECONDS = 5.0
_channels: dict[int, tuple[float, _ChannelInfo | None]] = {}
_touched: dict[int, float] = {}


def _channel_info(channel_id: int) -> _ChannelInfo | None:
    """The few channel settings accept needs, cached for a few seconds per process: the
    consumer handles hundreds of events a second for a handful of channels."""
    now = time.monotonic()
    cached = _channels.get(channel_id)
    if cached is not None and cached[0] > now:
        return cached[1]
    channel = Channel.objects.filter(pk=channel_id, is_active=True).first()
    info = (
        _ChannelInfo(channel.business_id, channel.debounce_seconds, channel)
        if channel is not None
        else None
    )
    _channels[channel_id] = (now + _CHANNEL_TTL_SECONDS, info)
    return info


_ChatKey = tuple[int, str]


def _locked_chats(events: Sequence[InboundEvent]) -> dict[_ChatKey, Chat]:
    """Every chat of the events, created if new, with its row locked for the rest of the
    transaction: one ordered SELECT … FOR UPDATE for the chats that exist, one INSERT per new
    chat (rare: a customer's first message), then one SELECT for those."""
    first_event: dict[_ChatKey, InboundEvent] = {}
    for event in events:
        first_event.setdefault((event.channel_id, event.chat_key), event)
    found = _select_locked(sorted(first_event))
    missing = sorted(key for key in first_event if key not in found)
    for key in missing:
        event = first_event[key]
        try:
            with transaction.atomic():
                chat = Chat.objects.create(
                    channel_id=key[0],
                    customer_key=key[1],
                    customer_name=event.customer_name,
                    customer_phone=event.customer_phone,
                )
        except IntegrityError:
            pass  # another consumer created it meanwhile; locked below
        else:
            info = _channel_info(key[0])
            if info is not None:
                hooks.chat_created(chat.pk, business_id=info.business_id)
    if missing:
        found.update(_select_locked(missing))
    return found


def _select_locked(keys: Sequence[_ChatKey]) -> dict[_ChatKey, Chat]:
    if not keys:
        return {}
    if ingest_sql.available():
        infos = {channel_id: _channel_info(channel_id) for channel_id in {k[0] for k in keys}}
        channels = {channel_id: info.channel for channel_id, info in infos.items() if info}
        return ingest_sql.lock_chats(keys, channels)
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


def _is_plain(event: InboundEvent) -> bool:
    """A customer message that needs nothing but storing: the batched insert (a message
    without a provider id is never a duplicate, so it takes the per-event path)."""
    return (
        not event.from_me
        and bool(event.provider_message_id)
        and "revoke_of" not in event.extra
        and "edit_of" not in event.extra
    )


def _accept_messages(
    indexed: Sequence[tuple[int, InboundEvent]],
) -> list[tuple[int, Accepted]]:
    out: list[tuple[int, Accepted]] = []
    known: list[tuple[int, InboundEvent, _ChannelInfo]] = []
    infos: dict[int, _ChannelInfo | None] = {}  # the batch's channels, each looked up once
    # A chat with anything but plain customer messages in the batch takes the per-event path
    # for all its events: its rules (ownership, edits) depend on the order of its events.
    special: set[_ChatKey] = set()
    for i, event in indexed:
        channel_id = event.channel_id
        channel = infos[channel_id] if channel_id in infos else _channel_info(channel_id)
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
    chats = _locked_chats([event for _i, event, _c in known])
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
        _touch_channel_on_commit(channel_id)
    return out


def _accept_plain(
    known: Sequence[tuple[int, InboundEvent, _ChannelInfo]], chats: dict[_ChatKey, Chat]
) -> list[tuple[int, Accepted]]:
    """Customer messages of chats with nothing else in the batch: one insert for them all
    (a message already stored is a duplicate), then one update per chat."""
    if not known:
        return []
    out: list[tuple[int, Accepted]] = []
    new: list[tuple[int, InboundEvent, _ChannelInfo, Chat]] = []
    seen: set[tuple[int, str]] = set()
    for i, event, channel in known:
        chat = chats[(event.channel_id, event.chat_key)]
        key = (event.channel_id, event.provider_message_id)
        if key in seen:
            _rearm_unanswered(chat, event)
            out.append((i, Accepted(None, chat.id, "duplicate")))
            continue
        seen.add(key)
        new.append((i, event, channel, chat))
    messages, counted = _store_plain([(event, chat) for _i, event, _c, chat in new])
    per_chat: dict[int, tuple[Chat, _ChannelInfo, list[Message]]] = {}
    for (i, event, channel, chat), message in zip(new, messages, strict=True):
        if message is None:
            _rearm_unanswered(chat, event)
            out.append((i, Accepted(None, chat.id, "duplicate")))
            continue
        _stored(message, event)
        entry = per_chat.get(chat.id)
        if entry is None:
            entry = per_chat[chat.id] = (chat, channel, [])
        entry[2].append(message)
        out.append((i, Accepted(message.id, chat.id, "stored")))
    timers: dict[int, float | None] = {}
    # A chat the insert wrote the counters of needs no save (`_customer_wrote` sets the same
    # values on the object); one with a message stored already gets its counters here.
    unsaved = [
        chat
        for chat, channel, chat_messages in per_chat.values()
        if not _customer_wrote(chat, chat_messages, channel, timers) and chat.id not in counted
    ]
    _save_counters(unsaved)
    debounce.schedule_many_on_commit(timers)
    by_business: dict[int, list[tuple[Message, Chat]]] = {}
    for chat, channel, chat_messages in per_chat.values():
        by_business.setdefault(channel.business_id, []).extend([(m, chat) for m in chat_messages])
    for business_id, items in by_business.items():
        hooks.messages_received(items, business_id=business_id)
    return out


def _store_plain(
    items: Sequence[tuple[InboundEvent, Chat]],
) -> tuple[list[Message | None], set[int]]:
    """Store the plain customer messages of a batch (distinct provider ids); None for each
    one stored already. On PostgreSQL one INSERT … ON CONFLICT DO NOTHING RETURNING
    (`ingest_sql`), the messages then built from what was inserted, as if loaded, and in the
    same statement the counters of each chat all of whose messages it stored; elsewhere a
    look-up of the stored ids and a `bulk_create`. Also returns the chats whose counters
    were written."""
    if ingest_sql.available():
        at = timezone.now()
        limit = settings.INBOUND_TEXT_MAX_CHARS
        rows = [_message_columns(chat, event, limit) for event, chat in items]
        ids, counted = ingest_sql.insert_customer_messages(
            rows, at, _counters_if_stored(items, rows)
        )
        pks = [ids.get((event.channel_id, event.provider_message_id)) for event, _chat in items]
        loaded = iter(_loaded_messages(
            [(pk, row, chat) for pk, row, (_e, chat) in zip(pks, rows, items, strict=True)
             if pk is not None], at))  # fmt: skip
        return [None if pk is None else next(loaded) for pk in pks], counted
    stored = _stored_ids([event for event, _chat in items])
    pending = [
        None if (event.channel_id, event.provider_message_id) in stored
        else _new_message(chat, event)
        for event, chat in items
    ]  # fmt: skip
    inserted = iter(_insert([m for m in pending if m is not None]))
    return [None if m is None else next(inserted) for m in pending], set()


def _counters_if_stored(
    items: Sequence[tuple[InboundEvent, Chat]], rows: Sequence[dict[str, Any]]
) -> list[list[Any]]:
    """Per open chat of the items: [id, *its counters once all its rows are stored, how many
    rows that is], as `ingest_sql.insert_customer_messages` takes them; the counters as
    `_customer_wrote` will count the same messages (`_count_customer_message`). A resolved or
    snoozed chat reopens: its counters go with its status, in its own save."""
    per_chat: dict[int, tuple[_Counters, list[int]]] = {}
    for (_event, chat), row in zip(items, rows, strict=True):
        if chat.status != _OPEN:
            continue
        entry = per_chat.get(chat.id)
        if entry is None:
            counters = _Counters(
                chat.version, chat.customer_messages, chat.last_customer_at, chat.last_message_at
            )
            entry = per_chat[chat.id] = (counters, [0])
        _count_customer_message(entry[0], row["provider_timestamp"])
        entry[1][0] += 1
    return [
        [chat_id, counters.version, counters.customer_messages, counters.last_customer_at,
         counters.last_message_at, n[0]]
        for chat_id, (counters, n) in per_chat.items()
    ]  # fmt: skip


def _stored_ids(events: Sequence[InboundEvent]) -> set[tuple[int, str]]:
    """(channel, provider id) of the events' messages that are stored already."""
    by_channel: dict[int, list[str]] = {}
    for event in events:
        by_channel.setdefault(event.channel_id, []).append(event.provider_message_id)
    condition = Q()
    for channel_id, ids in by_channel.items():
        condition |= Q(channel_id=channel_id, provider_message_id__in=ids)
    rows = Message.objects.filter(condition).values_list("channel_id", "provider_message_id")
    return {(channel_id, provider_id) for channel_id, provider_id in rows}


def _insert(messages: list[Message]) -> list[Message | None]:
    """One multi-row insert; if a message was stored meanwhile (another consumer, the unique
    (channel, provider id) constraint), each is inserted on its own and that one is None."""
    if not messages:
        return []
    try:
        with transaction.atomic():
            return list(Message.objects.bulk_create(messages))
    except IntegrityError:
        pass
    out: list[Message | None] = []
    for message in messages:
        message.pk = None
        try:
            with transaction.atomic():
                message.save(force_insert=True)
        except IntegrityError:
            out.append(None)
        else:
            out.append(message)
    return out


def _accept_one(event: InboundEvent, locked: Chat, channel: _ChannelInfo) -> Accepted:
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
    message = _insert([_new_message(chat, event)])[0]
    if message is None:
        if not event.from_me:
            _rearm_unanswered(chat, event)
        return Accepted(None, chat.pk, "duplicate")
    _stored(message, event)
    if event.from_me:
        # A manager wrote from the phone (or the Business App): they own the chat now.
        ownership.manager_replied(chat.pk, manager=None, at=_provider_time(event))
        hooks.message_changed(message.pk)
    else:
        if not _customer_wrote(chat, [message], channel):
            _save_counters([chat])
        hooks.messages_received([(message, chat)], business_id=channel.business_id)
    return Accepted(message.pk, chat.pk, "stored")


def _new_message(chat: Chat, event: InboundEvent) -> Message:
    """The event's message, not saved yet, with the chat and its channel objects (so the
    listeners read them without a query)."""
    fields = _message_columns(chat, event)
    del fields["chat_id"], fields["channel_id"]
    return Message(chat=chat, channel=chat.channel, **fields)


# (direction, author, status) of a message from the business's phone and from the customer,
# and the transcript states, as stored: read once, not from the enums per message.
_FROM_PHONE = (Message.Direction.OUTBOUND.value, Message.Author.PHONE.value,
               Message.Status.SENT.value)  # fmt: skip
_FROM_CUSTOMER = (Message.Direction.INBOUND.value, Message.Author.CUSTOMER.value,
                  Message.Status.RECEIVED.value)  # fmt: skip
_OPEN = ChatStatus.OPEN.value
_TRANSCRIPT_PENDING = Message.TranscriptStatus.PENDING.value
_TRANSCRIPT_NONE = Message.TranscriptStatus.NONE.value


def _message_columns(
    chat: Chat, event: InboundEvent, text_limit: int | None = None
) -> dict[str, Any]:
    """What the event sets of its message, by column; every other column keeps its default.
    `ingest_sql.CUSTOMER_MESSAGE_COLUMNS` lists these. `text_limit`: the setting, read once
    per batch by a caller storing many."""
    at = _provider_time(event)
    media = event.media
    text, original_chars = capped_text(event.text, text_limit)
    payload = event.extra
    if original_chars:
        payload = {**payload, "text_truncated": {"original_chars": original_chars}}
    direction, author, status_ = _FROM_PHONE if event.from_me else _FROM_CUSTOMER
    fields: dict[str, Any] = {
        "chat_id": chat.id,
        "channel_id": event.channel_id,  # the chat's: its key is (channel, customer)
        "direction": direction,
        "author": author,
        "from_me": event.from_me,
        "kind": event.kind,
        "text": text,
        "provider_message_id": event.provider_message_id,
        "provider_timestamp": at,
        "status": status_,
        "payload": payload,
    }
    if media is not None:
        fields.update(
            media_ref=media.ref[:1024],
            media_mime=media.mime_type[:128],
            media_sha256=media.sha256[:128],
            media_filename=media.filename[:255],
        )
    else:
        fields.update(media_ref="", media_mime="", media_sha256="", media_filename="")
    fields["transcript_status"] = (
        _TRANSCRIPT_PENDING if event.kind in VOICE_KINDS and not event.from_me else _TRANSCRIPT_NONE
    )
    if original_chars and media is None:
        fields["media_filename"] = FULL_TEXT_FILENAME
    return fields


_MESSAGE_FIELDS = list(Message._meta.concrete_fields)
# Every field's default as the row got it (`ingest_sql`), by attname; one made anew for each
# message (a list, a dict) is never shared.
_MESSAGE_DEFAULTS = {f.attname: f.get_default() for f in _MESSAGE_FIELDS}
_FRESH_DEFAULTS = [
    (f.attname, f.default) for f in _MESSAGE_FIELDS if f.has_default() and callable(f.default)
]


def _loaded_messages(
    inserted: Sequence[tuple[int, dict[str, Any], Chat]], at: datetime
) -> list[Message]:
    """The messages `ingest_sql` just inserted, each (id, columns, chat), as if loaded from the
    database (every other field its default), with the chat and its channel objects."""
    rows = []
    for pk, columns, _chat in inserted:
        row = _MESSAGE_DEFAULTS.copy()
        row.update(columns)
        for name, make_default in _FRESH_DEFAULTS:
            if name not in columns:
                row[name] = make_default()
        row["id"] = pk
        row["created_at"] = at
        rows.append(row)
    # Each chat's channel as the chat holds it, read once per chat, not per message.
    channels: dict[int, Channel] = {}
    related = []
    for _pk, _columns, chat in inserted:
        channel = channels.get(chat.id)
        if channel is None:
            channel = channels[chat.id] = chat.channel
        related.append({"chat": chat, "channel": channel})
    return ingest_sql.loaded(Message, rows, related)


def _stored(message: Message, event: InboundEvent) -> None:
    """What follows a newly stored message: the full text of a cut one, its media fetched."""
    original_chars = len(event.text) if len(event.text) > len(message.text) else 0
    if original_chars and event.media is None:
        log.info(
            "ingest.text_truncated",
            extra={"message_id": message.pk, "original_chars": original_chars},
        )
        _keep_full_text(message, event.text)
    if message.media_ref and message.kind in attachments.KEPT_KINDS:
        attachments.fetch_on_commit(message.pk)


_CHAT_COUNTERS = [name for name, _type in ingest_sql.COUNTER_COLUMNS]


@dataclass
class _Counters:
    """A chat's `_CHAT_COUNTERS`, counted apart from the chat (`_counters_if_stored`)."""

    version: int
    customer_messages: int
    last_customer_at: datetime | None
    last_message_at: datetime | None


def _count_customer_message(counters: Chat | _Counters, at: datetime) -> None:
    """What one customer message, written at `at`, does to its chat's counters: the one
    place for the rule (the batched insert writes its result ahead of `_customer_wrote`)."""
    counters.version += 1
    counters.customer_messages += 1
    counters.last_customer_at = at
    counters.last_message_at = at


def _customer_wrote(
    chat: Chat,
    messages: Sequence[Message],
    channel: _ChannelInfo,
    timers: dict[int, float | None] | None = None,
) -> bool:
    """Customer messages (in order) make any reply being prepared stale and (if the bot owns
    the chat) start or restart the chat's debounce timer. The caller holds the row lock.

    Returns True when the chat was saved here (it reopened); else the caller saves the
    counters (`_save_counters`), for many chats in one query. With `timers` the chat's timer
    is added there, for the caller to start with the batch's others."""
    reopened: list[str] = []
    schedule = False
    for message in messages:
        at = message.provider_timestamp or timezone.now()
        _count_customer_message(chat, at)
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
        chat.save(update_fields=[*_CHAT_COUNTERS, *reopened])
    if schedule:
        # One timer per chat and batch: a burst ends in one turn either way (debounce.py).
        if timers is None:
            debounce.schedule_on_commit(chat.pk, channel.debounce_seconds)
        else:
            timers[chat.id] = channel.debounce_seconds
    return bool(reopened)


def _save_counters(chats: Sequence[Chat]) -> None:
    """The counters `_customer_wrote` changed, for every chat in one UPDATE (PostgreSQL:
    `ingest_sql.save_counters`; elsewhere Django's bulk_update, the same in one statement)."""
    if not chats:
        return
    if ingest_sql.available():
        ingest_sql.save_counters(chats)
    else:
        Chat.objects.bulk_update(chats, _CHAT_COUNTERS)


def _rearm_unanswered(chat: Chat, event: InboundEvent) -> None:
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
            _keep_full_text(message, event.text)
        outcome = "edit"
    hooks.message_changed(message.pk)
    return Accepted(message.pk, chat.pk, outcome)


def _touch_channel_on_commit(channel_id: int) -> None:
    """Last-event time per channel feeds the silent-number alert; written at most every 30 s
    (per process, and in the database), after the commit: inside the consumer's batch the
    update would hold the channel's row lock, shared by every consumer, until the batch ends."""
    if _touched.get(channel_id, 0.0) > time.monotonic() - 30:
        return
    _touched[channel_id] = time.monotonic()
    transaction.on_commit(partial(_touch_channel, channel_id))


def _touch_channel(channel_id: int) -> None:
    now = timezone.now()
    Channel.objects.filter(pk=channel_id, last_event_at__isnull=True).update(last_event_at=now)
    Channel.objects.filter(pk=channel_id, last_event_at__lt=now - timedelta(seconds=30)).update(
        last_event_at=now
    )
