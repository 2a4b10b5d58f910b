"""Who a Cloud API customer is: their phone (wa_id) where the webhook carries it, their
business-scoped user id (BSUID, `contacts[].user_id`) where it does not.

From 2026 a customer who adopts a WhatsApp username may come without a phone number, only
with a BSUID; later (or earlier) the same customer may come with both. One customer is one
chat, whichever way they come:

- a BSUID-only event goes to the chat that already holds that BSUID (`resolve`), so a phone
  chat that learnt its customer's BSUID keeps getting their messages;
- the first event with a phone *and* a BSUID that keys a chat re-keys that chat to the phone
  in place (`rekey`): its messages, turns and handoffs stay where they are;
- where both chats exist already (a chat from before the BSUID was stored), the BSUID chat is
  merged into the phone chat (`merge`): every row that points at it moves, in the caller's
  transaction, and it is deleted.

Every chat stores the BSUID (and username) of its latest event that carries one (`adopt`).
The ingest calls these under its chat locks; bridge, gateway and sandbox events carry no
BSUID and pass through untouched.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence

from django.apps import apps
from django.db import IntegrityError, models, transaction
from django.db.models import Q

from inbox.conversations.events import InboundEvent
from inbox.conversations.models import Chat, OptOut

log = logging.getLogger(__name__)

ChatKey = tuple[int, str]


def _by_channel(pairs: Iterable[tuple[int, str]]) -> Q:
    grouped: dict[int, set[str]] = {}
    for channel_id, value in pairs:
        grouped.setdefault(channel_id, set()).add(value)
    condition = Q(pk__in=[])
    for channel_id, values in grouped.items():
        condition |= Q(channel_id=channel_id, customer_bsuid__in=values)
    return condition


def resolve(events: Sequence[InboundEvent]) -> None:
    """BSUID-only events take the key of the chat that already holds their BSUID under
    another key (their phone). One SELECT, and only for a batch that has such events."""
    lonely = [
        e
        for e in events
        if e.customer_bsuid and not e.customer_phone and e.chat_key == e.customer_bsuid
    ]
    if not lonely:
        return
    rows = (
        Chat.objects.filter(_by_channel((e.channel_id, e.customer_bsuid) for e in lonely))
        .exclude(customer_key=models.F("customer_bsuid"))
        .order_by("pk")
        .values_list("channel_id", "customer_bsuid", "customer_key")
    )
    keys = {(channel_id, bsuid): key for channel_id, bsuid, key in rows}
    for event in lonely:
        key = keys.get((event.channel_id, event.customer_bsuid))
        if key:
            event.chat_key = key


def rekey(new: Mapping[ChatKey, InboundEvent]) -> bool:
    """Keys about to get a new chat whose event carries a phone and a BSUID that keys a chat
    already: that chat becomes the phone's chat (re-keyed in place), so nothing is split.
    One SELECT for the batch's new chats (a customer's first message: rare). True when a
    chat was re-keyed."""
    wanted = {
        (key[0], event.customer_bsuid): key
        for key, event in new.items()
        if event.customer_bsuid and event.customer_phone and key[1] == event.customer_phone
    }
    if not wanted:
        return False
    done = False
    found = Chat.objects.filter(_by_channel(wanted), customer_key=models.F("customer_bsuid"))
    for chat in found.select_related("channel"):
        _channel_id, phone = wanted[(chat.channel_id, chat.customer_bsuid)]
        try:
            with transaction.atomic():
                Chat.objects.filter(pk=chat.pk, customer_key=chat.customer_key).update(
                    customer_key=phone, customer_phone=phone
                )
                _rekey_opt_outs(chat.channel.business_id, chat.customer_key, phone)
        except IntegrityError:
            continue  # the phone's chat appeared meanwhile: `adopt` merges the two
        done = True
        log.info("identity.rekeyed", extra={"chat_id": chat.pk})
    return done


def adopt(events: Sequence[InboundEvent], chats: dict[ChatKey, Chat]) -> None:
    """Each locked chat stores the BSUID and username of its batch's latest event that has
    them; a phone chat that gets a BSUID which another chat of its channel holds absorbs that
    chat (`merge`), and a key of `chats` that named the absorbed chat names the phone chat.
    No query for a chat whose stored BSUID is the event's already."""
    latest: dict[ChatKey, InboundEvent] = {}
    for event in events:
        if event.customer_bsuid:
            latest[(event.channel_id, event.chat_key)] = event
    for key, event in latest.items():
        chat = chats.get(key)
        if chat is None:
            continue
        changed = []
        if chat.customer_bsuid != event.customer_bsuid:
            if chat.customer_key != event.customer_bsuid:
                others = (
                    Chat.objects.select_for_update(of=("self",))
                    .filter(channel_id=chat.channel_id)
                    .filter(
                        Q(customer_key=event.customer_bsuid)
                        | Q(customer_bsuid=event.customer_bsuid)
                    )
                    .exclude(pk=chat.pk)
                    .order_by("pk")
                )
                for other in others:
                    merged = other.pk  # `merge` deletes it (and the delete clears its pk)
                    merge(chat, other)
                    for known, value in chats.items():
                        if value.pk == merged:
                            chats[known] = chat
            chat.customer_bsuid = event.customer_bsuid
            changed.append("customer_bsuid")
        if event.customer_username and chat.customer_username != event.customer_username:
            chat.customer_username = event.customer_username
            changed.append("customer_username")
        if event.customer_phone and not chat.customer_phone:
            chat.customer_phone = event.customer_phone
            changed.append("customer_phone")
        if changed:
            chat.save(update_fields=changed)


def _rekey_opt_outs(business_id: int, old_key: str, new_key: str) -> None:
    """The customer's opt-outs follow them to their new key (an active one only where the new
    key has none: one active row per customer)."""
    rows = OptOut.objects.filter(business_id=business_id, customer_key=old_key)
    if OptOut.objects.filter(
        business_id=business_id, customer_key=new_key, cleared_at__isnull=True
    ).exists():
        rows = rows.exclude(cleared_at__isnull=True)
    rows.update(customer_key=new_key)


_MAX_FIELDS = ("last_customer_at", "last_message_at", "last_manager_at", "window_closes_at")


def merge(into: Chat, other: Chat) -> None:
    """Everything of `other` (the same customer under their BSUID) becomes `into`'s: every
    row of any app that points at it moves (a row that cannot, because `into` has its own,
    such as a manager's read marker, is dropped), the counters add up, then `other` goes.
    Runs in the caller's transaction, with both rows locked."""
    for model in apps.get_models(include_auto_created=True):
        for field in model._meta.concrete_fields:
            if field.is_relation and field.related_model is Chat and model is not Chat:
                _move(model, field.attname, other.pk, into.pk)
    into.customer_messages += other.customer_messages
    into.answered_up_to = max(into.answered_up_to, other.answered_up_to)
    into.version = max(into.version, other.version) + 1
    for name in _MAX_FIELDS:
        mine, theirs = getattr(into, name), getattr(other, name)
        if theirs is not None and (mine is None or theirs > mine):
            setattr(into, name, theirs)
    into.customer_name = into.customer_name or other.customer_name
    into.customer_username = into.customer_username or other.customer_username
    into.save(
        update_fields=[
            "customer_messages", "answered_up_to", "version", *_MAX_FIELDS,
            "customer_name", "customer_username",
        ]
    )  # fmt: skip
    _rekey_opt_outs(into.channel.business_id, other.customer_key, into.customer_key)
    merged = other.pk
    other.delete()
    log.info("identity.merged", extra={"chat_id": into.pk, "merged_chat_id": merged})


def _move(model: type[models.Model], field: str, old: int, new: int) -> None:
    rows = model._default_manager.filter(**{field: old})
    try:
        with transaction.atomic():
            rows.update(**{field: new})
        return
    except IntegrityError:
        pass
    for pk in list(rows.values_list("pk", flat=True)):
        try:
            with transaction.atomic():
                model._default_manager.filter(pk=pk).update(**{field: new})
        except IntegrityError:
            model._default_manager.filter(pk=pk).delete()
