"""The bot's follow-up after its unanswered quote: sent, or skipped with the reason, and recorded
(`Followup`, one row per quote and step; the only writer of those rows).

When a step is due is decided above (`inbox/upkeep/followups.py`); here it goes out like a bot
reply: under the chat's row lock the bot must still own the chat, the chat be open, nothing
changed since the step was judged due (`Chat.version`, and no message after the one seen), the
customer not be on the opt-out register (a nudge is unprompted) and WhatsApp still take messages
for them. Inside the 24-hour window the nudge is free text; outside it only an approved template
may go (`templates.refusal` says whether this one may), else the step is recorded as skipped.
The row is written in the same transaction as the message, so a step never goes twice.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import IntegrityError, transaction

from inbox.conversations import delivery_status, opt_outs, templates, window
from inbox.conversations.models import (
    Chat,
    ChatStatus,
    Followup,
    Message,
    MessageTemplate,
    Owner,
)
from inbox.conversations.outbound import deliver_recorded, record_outbound

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Step:
    """One step judged due: what to send and what the chat looked like then."""

    chat_id: int
    quote_message_id: int
    step: int
    text: str
    # The chat's version and newest message id when judged: anything newer cancels the step.
    version: int
    last_message_id: int


@dataclass(frozen=True)
class Result:
    """What became of a step: a `Followup` row (sent or skipped), or none when it was not
    recorded (the chat moved on under the lock, or another worker recorded it first)."""

    followup: Followup | None
    reason: str  # "sent", a skip's reason, or why nothing was recorded


def send(step: Step, template: MessageTemplate | None, values: dict[str, str]) -> Result:
    """Send the step as text inside the window, as `template` (filled with `values`) outside
    it, or record it skipped; nothing at all when the chat moved on since it was judged due."""
    with transaction.atomic():
        chat = Chat.objects.select_for_update().select_related("channel").get(pk=step.chat_id)
        moved = _moved_on(chat, step)
        if moved:
            return Result(None, moved)
        if opt_outs.refusal(chat.channel.business_id, chat.customer_key) is not None:
            return _skipped(chat, step, "opted_out")  # a nudge is unprompted: never to them
        if delivery_status.undeliverable(chat):
            return _skipped(chat, step, "undeliverable")
        if window.is_open(chat):
            via = Followup.Via.TEXT
        else:
            problem = "no_template" if template is None else _template_problem(template, chat)
            if problem:
                return _skipped(chat, step, problem)
            via = Followup.Via.TEMPLATE
        followup = _record(chat, step, Followup.Outcome.SENT, via=via)
        if followup is None:
            return Result(None, "already_recorded")
        if template is not None and via == Followup.Via.TEMPLATE:
            message = _record_template(chat, template, values)
        else:
            message = record_outbound(chat, step.text, author=Message.Author.BOT, manager=None)
        followup.message = message
        followup.save(update_fields=["message"])
    log.info("followup.sent", extra={"chat_id": chat.pk, "step": step.step, "via": via})
    deliver_recorded(message)
    return Result(followup, "sent")


def skip(step: Step, reason: str) -> Result:
    """Record the step as not sent (so the upkeep does not judge it again)."""
    with transaction.atomic():
        chat = Chat.objects.select_for_update().get(pk=step.chat_id)
        return _skipped(chat, step, reason)


def _moved_on(chat: Chat, step: Step) -> str:
    """Why the step no longer applies under the lock ("" when it still does)."""
    if chat.owner != Owner.BOT:
        return "not_bot_owner"
    if chat.status != ChatStatus.OPEN:
        return "not_open"
    if chat.version != step.version:
        return "stale"
    newer = chat.messages.filter(pk__gt=step.last_message_id).exclude(
        direction=Message.Direction.INTERNAL
    )
    return "stale" if newer.exists() else ""


def _template_problem(template: MessageTemplate, chat: Chat) -> str:
    """ "template_refused" when this template may not go to the chat now (not approved, not a
    Cloud API number), else ""."""
    return "template_refused" if templates.refusal(template, chat) else ""


def _record_template(chat: Chat, template: MessageTemplate, values: dict[str, str]) -> Message:
    message = record_outbound(
        chat,
        templates.render(template, values),
        author=Message.Author.BOT,
        manager=None,
        kind=Message.Kind.TEMPLATE,
    )
    message.payload = {
        "source": "followup",
        "template": {
            "name": template.name,
            "language": template.language,
            "category": template.category,
            "components": templates.send_components(template, values),
        },
    }
    message.save(update_fields=["payload"])
    return message


def _skipped(chat: Chat, step: Step, reason: str) -> Result:
    followup = _record(chat, step, Followup.Outcome.SKIPPED, reason=reason)
    if followup is not None:
        log.info("followup.skipped", extra={"chat_id": chat.pk, "reason": reason})
    return Result(followup, reason if followup is not None else "already_recorded")


def _record(
    chat: Chat,
    step: Step,
    outcome: str,
    *,
    via: str = "",
    reason: str = "",
    message: Message | None = None,
) -> Followup | None:
    try:
        with transaction.atomic():
            return Followup.objects.create(
                chat=chat,
                quote_message_id=step.quote_message_id,
                step=step.step,
                outcome=outcome,
                via=via,
                reason=reason,
                message=message,
            )
    except IntegrityError:
        return None  # another worker recorded this step first
