"""A manager's answer written after WhatsApp's 24-hour window closed: kept, sent on the
customer's return.

Free text cannot reach the customer now (`window`), but the manager has the answer. It is kept
on the chat (`PendingReply`, one per chat; a new one replaces it) and, when the channel names an
approved UTILITY template for it (`Channel.reengage_template_name`/`_language`), that template
goes out at once ("we have an answer to your question, reply to see it"). When the customer
writes again the window reopens and the ingest's hook (`PendingReplyTrigger`, after commit)
queues `inbox.send_pending_reply`, which sends the answer through the manager send path
(`outbound.send_manager_reply`) if the manager who wrote it still has the chat; if someone else
took it meanwhile (or it went back to the bot), the answer is dropped and a note in the chat
says so. Nothing here runs inside the ingest's transaction but the look-up of which chats have
one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from celery import current_app, shared_task
from django.contrib.auth.models import User
from django.db import transaction

from inbox.conversations import hooks, names, outbound, ownership, templates, window
from inbox.conversations.models import Chat, Message, MessageTemplate, Owner, PendingReply

log = logging.getLogger(__name__)

SEND_TASK = "inbox.send_pending_reply"
SHOWN_AS = "Will be sent when the customer replies."


@dataclass(frozen=True)
class Kept:
    pending: PendingReply
    # What the manager is told about the re-engagement template ("" when it went out).
    notice: str
    reengaged: bool


def reengage_template(chat: Chat) -> MessageTemplate | None:
    """The channel's chosen re-engagement template, when it is an approved UTILITY one."""
    channel = chat.channel
    if not channel.reengage_template_name:
        return None
    template = templates.find(
        channel.pk, channel.reengage_template_name, channel.reengage_template_language
    )
    if template is None or template.category != MessageTemplate.Category.UTILITY:
        return None
    return template if template.status == MessageTemplate.Status.APPROVED else None


def keep(chat_id: int, text: str, *, manager: User | None) -> Kept:
    """Keep the answer for the customer's return (the chat becomes the manager's, as for a
    reply) and invite the customer back with the channel's re-engagement template."""
    ownership.manager_replied(chat_id, manager=manager)
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        pending, _ = PendingReply.objects.update_or_create(
            chat=chat, defaults={"text": text, "author": manager, "reengage_message_id": None}
        )
        hooks.chat_changed(chat.pk)
    template = reengage_template(chat)
    if template is None:
        return Kept(pending, "No re-engagement template is chosen for this channel: the answer "
                    "goes out if the customer writes again.", False)  # fmt: skip
    values = {name: chat.customer_name for name in templates.variables(template)}
    try:
        outcome = templates.send(chat_id, template, values, manager=manager, source="reengage")
    except templates.Refused as exc:
        return Kept(pending, f"The re-engagement template was not sent: {exc}", False)
    PendingReply.objects.filter(pk=pending.pk).update(reengage_message_id=outcome.message_id)
    if not outcome.sent:
        return Kept(pending, f"The re-engagement template failed: {outcome.error}", False)
    return Kept(pending, "", True)


def cancel(chat_id: int) -> bool:
    """The manager takes the kept answer back; False when there was none."""
    deleted, _ = PendingReply.objects.filter(chat_id=chat_id).delete()
    if deleted:
        hooks.chat_changed(chat_id)
    return bool(deleted)


def current(chat_id: int) -> PendingReply | None:
    return PendingReply.objects.filter(chat_id=chat_id).first()


def send_pending(chat_id: int) -> outbound.SendOutcome | None:
    """The customer is back: send the kept answer if its manager still has the chat; None when
    nothing was sent (no answer kept, window still closed, or dropped with a note)."""
    with transaction.atomic():
        pending = PendingReply.objects.select_for_update().filter(chat_id=chat_id).first()
        if pending is None:
            return None
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        if not window.is_open(chat):
            return None  # not back yet: kept
        author = pending.author
        pending.delete()
        hooks.chat_changed(chat.pk)  # the inbox drops the "will be sent" box
        if author is None or chat.owner != Owner.HUMAN or chat.assigned_to_id != author.pk:
            _dropped(chat, author)
            return None
    log.info("pending_reply.sending", extra={"chat_id": chat_id})
    return outbound.send_manager_reply(chat_id, pending.text, manager=author, source="pending")


def _dropped(chat: Chat, author: User | None) -> None:
    business_id = chat.channel.business_id
    holder = chat.assigned_to if chat.owner == Owner.HUMAN else None
    who = names.display_name(holder, business_id) if holder else "the assistant"
    writer = names.display_name(author, business_id) if author else "A manager"
    outbound.add_internal_note(
        chat.pk,
        f"{writer}'s answer kept for the customer's return was not sent: {who} has the chat now.",
    )
    log.info("pending_reply.dropped", extra={"chat_id": chat.pk})


class PendingReplyTrigger(hooks.Listener):
    """After a batch of customer messages commits, queue the send of the answers kept for
    those chats (one query per batch; nothing is sent inside the ingest)."""

    def messages_received(self, items: Sequence[tuple[Message, Chat]], *, business_id: int) -> None:
        chat_ids = {chat.pk for message, chat in items if message.author == Message.Author.CUSTOMER}
        if not chat_ids:
            return
        waiting = list(
            PendingReply.objects.filter(chat_id__in=chat_ids).values_list("chat_id", flat=True)
        )
        for chat_id in waiting:
            transaction.on_commit(partial(_queue_send, chat_id))


def _queue_send(chat_id: int) -> None:
    current_app.send_task(SEND_TASK, args=[chat_id])


@shared_task(name=SEND_TASK, ignore_result=True, soft_time_limit=120, time_limit=150)
def send_pending_reply(chat_id: int) -> None:
    send_pending(chat_id)
