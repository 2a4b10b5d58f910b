"""Sending a failed message again: a new send of the same content, as a new message.

The failed row stays as it was (failed, with WhatsApp's reason: the record of what happened)
and names its successor in `payload["resent_as"]`; the new row names it in
`payload["resend_of"]`, gets its own provider id and its own statuses. Updating the failed row
in place would mix two sends' statuses on one row (a late status of the first wamid would land
on the second send) and erase the failure from the conversation.

A resend is a manager's reply: it is authored by the manager who pressed it and the chat
becomes theirs (HUMAN), as for any reply, so no bot reply in flight can follow it. Some reasons
mean sending again cannot work (`delivery_errors.resend_refusal`: the number cannot receive
messages, the 24-hour window closed) until the customer writes again; those are refused.
The refusals are English constants (`gettext_noop`): the API answers with them as they are, and
the inbox shows them translated (`gettext(refusal)`).
"""

from __future__ import annotations

import logging

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max
from django.utils.translation import gettext_noop

from inbox.conversations import delivery_errors, hooks, ownership
from inbox.conversations.models import Chat, Message
from inbox.conversations.outbound import (
    OUTBOUND_MEDIA_KINDS,
    SendOutcome,
    deliver_recorded,
    record_outbound,
)

log = logging.getLogger(__name__)

RESENDABLE_AUTHORS = frozenset({Message.Author.MANAGER, Message.Author.BOT})


class Refused(Exception):
    """The message cannot be sent again; `str(exc)` says why, for the manager."""


def refusal(message: Message, chat: Chat) -> str:
    """Why this message cannot be sent again now ("" when it can)."""
    if (
        message.direction != Message.Direction.OUTBOUND
        or message.author not in RESENDABLE_AUTHORS
        or message.status != Message.Status.FAILED
    ):
        return gettext_noop("Only a message that failed can be sent again.")
    if isinstance(message.payload, dict) and message.payload.get("resent_as"):
        return gettext_noop("This message was already sent again.")
    if message.purged_at is not None:
        return gettext_noop("This message's content was removed by the retention period.")
    if message.kind in OUTBOUND_MEDIA_KINDS and not message.media_file:
        return gettext_noop("The file of this message is no longer kept: attach it again.")
    if message.kind not in OUTBOUND_MEDIA_KINDS and (
        message.kind != Message.Kind.TEXT or not message.text.strip()
    ):
        return gettext_noop("Only a text, image or document message can be sent again.")
    why = delivery_errors.resend_refusal(message.error_code)
    wrote_since = (
        chat.last_customer_at is not None
        and message.status_at is not None
        and chat.last_customer_at > message.status_at
    )
    # The customer writing again lifts both (a new window; they can receive messages).
    return "" if wrote_since else why


def resend(message_id: int, *, manager: User | None) -> SendOutcome:
    """Send the failed message `message_id` again as a new message and deliver it; raises
    `Refused` when that cannot work or was done already (a double click sends once)."""
    original = Message.objects.select_related("chat__channel").get(pk=message_id)
    problem = refusal(original, original.chat)
    if problem:
        raise Refused(problem)
    ownership.manager_replied(original.chat_id, manager=manager)
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=original.chat_id)
        original = Message.objects.select_for_update().get(pk=message_id)
        problem = refusal(original, chat)  # again under the locks: another click may have won
        if problem:
            raise Refused(problem)
        again = record_outbound(
            chat,
            original.text,
            author=Message.Author.MANAGER,
            manager=manager,
            kind=original.kind,
            media_mime=original.media_mime,
            media_filename=original.media_filename,
        )
        # The same kept file; uploaded anew (a media error may have been the old upload's).
        again.media_file = original.media_file.name if original.media_file else ""
        again.payload = {"source": "resend", "resend_of": original.pk}
        again.save(update_fields=["media_file", "payload"])
        payload = original.payload if isinstance(original.payload, dict) else {}
        original.payload = {**payload, "resent_as": again.pk}
        original.save(update_fields=["payload"])
        hooks.message_changed(original.pk)
        latest = chat.messages.filter(direction=Message.Direction.INBOUND).aggregate(m=Max("id"))
        chat.answered_up_to = max(chat.answered_up_to, latest["m"] or 0)
        chat.save(update_fields=["answered_up_to"])
    log.info("send.resend", extra={"message_id": original.pk, "resent_as": again.pk})
    return deliver_recorded(again)
