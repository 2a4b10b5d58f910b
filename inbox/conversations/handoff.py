"""Handing a chat from the bot to a human: one transaction, then one message to the customer.

Under the chat's row lock: check the bot still owns the chat at the version the decision was
made at, move it to PENDING_HUMAN (ownership), store the `Handoff` (reason, the summary generated
once, collected facts), the customer's notice and the CRM's outbox row. After commit: the
notice goes out, managers are notified, and the CRM sync is queued.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from inbox.conversations import hooks, ownership, window
from inbox.conversations.models import Chat, Handoff, Message, Owner
from inbox.conversations.outbound import deliver_recorded, record_outbound
from inbox.platform import metrics

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HandoffOutcome:
    handed_off: bool
    reason: str  # "handed_off", "stale", "not_bot_owner", "already_answered"
    handoff_id: int | None = None
    notice_sent: bool = False
    notice_message_id: int | None = None


def hand_off(
    chat_id: int,
    *,
    reason: str,
    summary: str,
    facts: dict[str, Any],
    message_to_customer: str,
    generated_at_version: int,
    answered_up_to: int,
    details: dict[str, Any] | None = None,
) -> HandoffOutcome:
    """Move the chat to PENDING_HUMAN with a stored handoff record, then tell the customer.

    Returns handed_off=False (and changes nothing) when a human already owns the chat, a newer
    customer message made the decision stale, or these messages were already answered."""
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=chat_id)
        if chat.owner != Owner.BOT:
            return HandoffOutcome(False, "not_bot_owner")
        if chat.version != generated_at_version:
            return HandoffOutcome(False, "stale")
        if answered_up_to and answered_up_to <= chat.answered_up_to:
            return HandoffOutcome(False, "already_answered")
        ownership.request_human(chat.pk, reason=reason)
        if not window.is_open(chat):
            # WhatsApp would refuse free text now (`window`): the customer is told nothing.
            message_to_customer = ""
        handoff = Handoff.objects.create(
            chat=chat,
            reason=reason,
            summary=summary.strip(),
            facts=facts,
            message_to_customer=message_to_customer.strip(),
            details=details or {},
        )
        notice: Message | None = None
        if message_to_customer.strip():
            notice = record_outbound(
                chat, message_to_customer.strip(), author=Message.Author.BOT, manager=None
            )
            notice.payload = {"handoff_id": handoff.pk}
            notice.save(update_fields=["payload"])
        Chat.objects.filter(pk=chat.pk, answered_up_to__lt=answered_up_to).update(
            answered_up_to=answered_up_to
        )
        metrics.HANDOFFS.labels(reason=reason).inc()
        hooks.handoff_created(handoff.pk)
    log.info("handoff.created", extra={"chat_id": chat_id, "reason": reason})
    notice_sent = deliver_recorded(notice).sent if notice is not None else False
    return HandoffOutcome(
        True, "handed_off", handoff.pk, notice_sent, notice.pk if notice is not None else None
    )
