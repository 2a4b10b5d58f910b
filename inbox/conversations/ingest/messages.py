"""The messages of a batch: their columns, one insert for the plain customer messages, and
what follows a newly stored one (the full text of a cut one, its media fetched).

On PostgreSQL the plain customer messages of a batch are one `sql.insert_customer_messages`
statement (their chats' counters in it too) and the messages are built from what it inserted,
as if loaded; elsewhere a look-up of the stored ids and Django's `bulk_create`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

import inbox.conversations.ingest.sql as sql
from inbox.conversations import attachments
from inbox.conversations.events import InboundEvent, provider_datetime
from inbox.conversations.ingest.chats import VOICE_KINDS, counters_if_stored
from inbox.conversations.ingest.cleaning import FULL_TEXT_FILENAME, capped_text
from inbox.conversations.models import Channel, Chat, Message
from inbox.conversations.transports import MediaBlob

log = logging.getLogger(__name__)


def keep_full_text(message: Message, text: str) -> None:
    """The whole text of a cut message, kept as its attachment (nothing the customer sent is
    lost: managers download it from the message). A message that has one already keeps it."""
    if not message.media_file:
        attachments.keep(message, MediaBlob(text.encode("utf-8"), "text/plain; charset=utf-8"))


def provider_time(event: InboundEvent) -> datetime:
    return provider_datetime(event.provider_ts) or timezone.now()


def store_plain(
    items: Sequence[tuple[InboundEvent, Chat]],
) -> tuple[list[Message | None], set[int]]:
    """Store the plain customer messages of a batch (distinct provider ids); None for each
    one stored already. On PostgreSQL one INSERT … ON CONFLICT DO NOTHING RETURNING
    (`sql.insert_customer_messages`), the messages then built from what was inserted, as if
    loaded, and in the same statement the counters of each chat all of whose messages it
    stored; elsewhere a look-up of the stored ids and a `bulk_create`. Also returns the chats
    whose counters were written."""
    if sql.available():
        at = timezone.now()
        limit = settings.INBOUND_TEXT_MAX_CHARS
        rows = [_message_columns(chat, event, limit) for event, chat in items]
        ids, counted = sql.insert_customer_messages(rows, at, counters_if_stored(items, rows))
        pks = [ids.get((event.channel_id, event.provider_message_id)) for event, _chat in items]
        loaded = iter(_loaded_messages(
            [(pk, row, chat) for pk, row, (_e, chat) in zip(pks, rows, items, strict=True)
             if pk is not None], at))  # fmt: skip
        return [None if pk is None else next(loaded) for pk in pks], counted
    stored = _stored_ids([event for event, _chat in items])
    pending = [
        None if (event.channel_id, event.provider_message_id) in stored
        else new_message(chat, event)
        for event, chat in items
    ]  # fmt: skip
    inserted = iter(insert_messages([m for m in pending if m is not None]))
    return [None if m is None else next(inserted) for m in pending], set()


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


def insert_messages(messages: list[Message]) -> list[Message | None]:
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


def new_message(chat: Chat, event: InboundEvent) -> Message:
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
_TRANSCRIPT_PENDING = Message.TranscriptStatus.PENDING.value
_TRANSCRIPT_NONE = Message.TranscriptStatus.NONE.value


def _message_columns(
    chat: Chat, event: InboundEvent, text_limit: int | None = None
) -> dict[str, Any]:
    """What the event sets of its message, by column; every other column keeps its default.
    `sql.CUSTOMER_MESSAGE_COLUMNS` lists these. `text_limit`: the setting, read once
    per batch by a caller storing many."""
    at = provider_time(event)
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
# Every field's default as the row got it (`sql`), by attname; one made anew for each
# message (a list, a dict) is never shared.
_MESSAGE_DEFAULTS = {f.attname: f.get_default() for f in _MESSAGE_FIELDS}
_FRESH_DEFAULTS = [
    (f.attname, f.default) for f in _MESSAGE_FIELDS if f.has_default() and callable(f.default)
]


def _loaded_messages(
    inserted: Sequence[tuple[int, dict[str, Any], Chat]], at: datetime
) -> list[Message]:
    """The messages `sql` just inserted, each (id, columns, chat), as if loaded from the
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
    return sql.loaded(Message, rows, related)


def after_stored(message: Message, event: InboundEvent) -> None:
    """What follows a newly stored message: the full text of a cut one, its media fetched."""
    original_chars = len(event.text) if len(event.text) > len(message.text) else 0
    if original_chars and event.media is None:
        log.info(
            "ingest.text_truncated",
            extra={"message_id": message.pk, "original_chars": original_chars},
        )
        keep_full_text(message, event.text)
    if message.media_ref and message.kind in attachments.KEPT_KINDS:
        attachments.fetch_on_commit(message.pk)
