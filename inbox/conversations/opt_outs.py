"""The opt-out register: customers who asked a business not to write to them.

A customer's own "STOP" (in English, Russian or Kazakh, or the business's own words), WhatsApp's
failed status 131050 ("user stopped marketing messages") and a manager write here; a manager
clears it. Anything the business would send unprompted asks `refusal(...)` first; a reply to
the customer's own message is no proactive send and is not refused. The only writer of
`OptOut` rows.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from inbox.conversations.access import User
from inbox.conversations.events import StatusEvent
from inbox.conversations.models import Business, Channel, Chat, Message, OptOut

log = logging.getLogger(__name__)

# The platform's failed-status code when the customer stopped the business's marketing messages.
PLATFORM_STOP_CODE = "131050"

# What a whole message says when it means "stop writing to me", by language. Compared after
# folding case, punctuation and spaces, so "Stop!" and "  отписаться. " match. Words that also
# mean something else to a shop ("cancel" an order) are left out.
DEFAULT_KEYWORDS: dict[str, tuple[str, ...]] = {
    "en": ("stop", "unsubscribe", "opt out", "optout", "stop messages", "don't message me",
           "do not message me", "don't write to me", "do not write to me", "stop all"),
    "ru": ("стоп", "отписаться", "отписка", "отпишите меня", "не пишите", "не пишите мне",
           "не пишите больше", "больше не пишите", "хватит писать", "не присылайте сообщения"),
    "kk": ("тоқтат", "тоқтату", "жазбаңыз", "маған жазбаңыз", "хабарлама жібермеңіз",
           "хабарлама жіберменіз", "жазылымнан шығу"),
}  # fmt: skip
_FOLD = re.compile(r"[^\w']+")


def _fold(text: str) -> str:
    return " ".join(_FOLD.sub(" ", text.lower().replace("’", "'")).split())


def keywords_for(business: Business) -> dict[str, str]:
    """Folded keyword → its language ("" for the business's own words, language unknown)."""
    own = [line for line in business.opt_out_keywords.splitlines() if line.strip()]
    if own:
        return {_fold(word): "" for word in own}
    return {_fold(word): lang for lang, words in DEFAULT_KEYWORDS.items() for word in words}


def keyword_language(business: Business, text: str) -> str | None:
    """The language of the opt-out keyword the whole text is ("" when the business's own
    list has no language), or None when the text is anything more than an opt-out."""
    folded = _fold(text)
    return keywords_for(business).get(folded) if folded else None


@dataclass(frozen=True)
class Refusal:
    """Why a proactive send to a customer must not go."""

    source: str
    since: str  # ISO time of the opt-out

    @property
    def reason(self) -> str:
        return f"The customer opted out ({OptOut.Source(self.source).label}) on {self.since}."


def active(business_id: int, customer_key: str) -> OptOut | None:
    return (
        OptOut.objects.filter(business_id=business_id, customer_key=customer_key)
        .filter(cleared_at__isnull=True)
        .first()
    )


def refusal(business: Business | int, customer_key: str) -> Refusal | None:
    """Why a message the business would send unprompted must not go; None when it may."""
    business_id = business if isinstance(business, int) else business.pk
    row = active(business_id, customer_key)
    if row is None:
        return None
    return Refusal(row.source, row.created_at.isoformat(timespec="minutes"))


def opted_out(business: Business | int, customer_key: str) -> bool:
    """Whether the customer asked this business not to write to them (proactive sends check)."""
    return refusal(business, customer_key) is not None


def record(business_id: int, customer_key: str, source: str, *, detail: str = "") -> bool:
    """Put the customer on the register; False when already on it (the first row stays)."""
    try:
        with transaction.atomic():
            OptOut.objects.create(
                business_id=business_id,
                customer_key=customer_key,
                source=source,
                detail=detail[:200],
            )
    except IntegrityError:
        return False  # the unique active row: someone recorded it first
    log.info("opt_out.recorded", extra={"business_id": business_id, "source": source})
    return True


def clear(business_id: int, customer_key: str, actor: User) -> bool:
    """A manager takes the customer off the register; False when they were not on it."""
    cleared = OptOut.objects.filter(
        business_id=business_id, customer_key=customer_key, cleared_at__isnull=True
    ).update(cleared_at=timezone.now(), cleared_by_id=actor.pk)
    if cleared:
        log.info("opt_out.cleared", extra={"business_id": business_id, "user_id": actor.pk})
    return bool(cleared)


def platform_resumed(business_id: int, customer_key: str) -> bool:
    """The customer resumed the business's marketing messages in WhatsApp: WhatsApp's own
    opt-out ends. One they asked for in the chat, or a manager recorded, stays until a manager
    clears it. False when there was none."""
    cleared = OptOut.objects.filter(
        business_id=business_id,
        customer_key=customer_key,
        source=OptOut.Source.PLATFORM,
        cleared_at__isnull=True,
    ).update(cleared_at=timezone.now())
    if cleared:
        log.info("opt_out.platform_resumed", extra={"business_id": business_id})
    return bool(cleared)


def from_status(event: StatusEvent, message: Message | None) -> bool:
    """WhatsApp refused our message because the customer stopped the business's messages
    (failed, 131050): record it for the chat's customer. True when newly recorded."""
    if event.status != "failed" or event.error_code != PLATFORM_STOP_CODE:
        return False
    channel = Channel.objects.filter(pk=event.channel_id).only("business_id").first()
    if channel is None:
        return False
    chat = None
    if message is not None:
        chat = Chat.objects.filter(pk=message.chat_id).only("customer_key").first()
    if chat is None and event.recipient:
        chat = (
            Chat.objects.filter(
                Q(customer_key=event.recipient) | Q(customer_bsuid=event.recipient),
                channel_id=event.channel_id,
            )
            .only("customer_key")
            .first()
        )
    customer_key = chat.customer_key if chat is not None else event.recipient
    if not customer_key:
        return False
    return record(
        channel.business_id,
        customer_key,
        OptOut.Source.PLATFORM,
        detail=event.error_title or "User stopped marketing messages",
    )
