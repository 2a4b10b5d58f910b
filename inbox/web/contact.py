"""The contact panel beside a chat: who the customer is, what they told us, their other chats
with this business and the CRM record. Selectors only; per user (a manager may see the phone
masked, and only the chats of channels they may see)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Q

from inbox.conversations import access, opt_outs
from inbox.conversations.access import User
from inbox.conversations.models import Business, Chat, Handoff, Membership, OptOut
from inbox.platform.logs import mask_phone_numbers
from inbox.web import crm_cards

EARLIER_CHATS_SHOWN = 10


def masked_phone(phone: str) -> str:
    """A phone number with all but its first 3 and last 2 digits hidden: +770•••••67."""
    digits = "".join(ch for ch in phone if ch.isdigit())
    if len(digits) < 6:
        return "•" * len(digits)
    return f"+{digits[:3]}{'•' * (len(digits) - 5)}{digits[-2:]}"


def phone_hidden_from(user: User, business: Business) -> bool:
    """Whether this user sees the business's customers' numbers masked: managers (not admins)
    of a business that asks for it."""
    if not business.mask_phone_for_managers:
        return False
    return (
        not access.memberships(user)
        .filter(business_id=business.pk, role=Membership.Role.ADMIN)
        .exists()
    )


def businesses_masked_for(user: User) -> set[int]:
    """The businesses whose customers' numbers this user sees masked (one query, for lists)."""
    roles = access.memberships(user).filter(business__mask_phone_for_managers=True)
    return set(roles.exclude(role=Membership.Role.ADMIN).values_list("business_id", flat=True))


def customer_label(chat: Chat) -> str:
    """What a notice calls the customer: the name, else the number as the business shows it
    (masked when it masks numbers). `chat.channel.business` should be selected with the chat."""
    return (
        chat.customer_name
        or shown_phone(chat.customer_phone, chat.channel.business)
        or (f"@{chat.customer_username}" if chat.customer_username else "")
        or "A customer"
    )


def shown_phone(phone: str, business: Business, *, hidden: bool | None = None) -> str:
    """The phone as a list row or header shows it to everyone of the business: masked when the
    business masks numbers (those fragments are shared by all its managers)."""
    if not phone:
        return ""
    if hidden if hidden is not None else business.mask_phone_for_managers:
        return masked_phone(phone)
    return f"+{phone}"


@dataclass(frozen=True)
class EarlierChat:
    chat: Chat
    crm: list[crm_cards.CrmCard]


@dataclass(frozen=True)
class ContactCard:
    name: str
    phone: str
    phone_masked: bool
    # A customer without a phone (a WhatsApp username user): their username and business-scoped
    # user id, the BSUID masked like a phone where numbers are hidden.
    username: str
    bsuid: str
    facts: list[tuple[str, Any]]
    items: list[dict[str, Any]]
    earlier: list[EarlierChat]
    crm: list[crm_cards.CrmCard]
    # The customer asked the business not to write to them (None: they did not, or a manager
    # cleared it): the business sends them nothing unprompted.
    opt_out: OptOut | None = None


def _facts(chat: Chat) -> tuple[list[tuple[str, Any]], list[dict[str, Any]]]:
    """What the assistant collected over the chat's handoffs, the latest value of each fact."""
    collected: dict[str, Any] = {}
    items: list[dict[str, Any]] = []
    for handoff in Handoff.objects.filter(chat=chat).order_by("pk"):
        facts = handoff.facts if isinstance(handoff.facts, dict) else {}
        for key, value in facts.items():
            if key != "items" and value not in (None, "", [], {}):
                collected[key] = value
        items = handoff.facts_items() or items
    labelled = [(key.replace("_", " ").capitalize(), value) for key, value in collected.items()]
    return labelled, items


def earlier_chats(user: User, chat: Chat) -> list[Chat]:
    """The same customer's other chats on this business's channels that the user may see,
    the most recent first."""
    same = Q(customer_key=chat.customer_key)
    if chat.customer_phone:
        same |= Q(customer_phone=chat.customer_phone)
    if chat.customer_bsuid:
        same |= Q(customer_bsuid=chat.customer_bsuid)
    return list(
        access.visible_chats(user)
        .filter(same, channel__business_id=chat.channel.business_id)
        .exclude(pk=chat.pk)
        .select_related("channel", "assigned_to")
        .order_by("-last_message_at", "-pk")[:EARLIER_CHATS_SHOWN]
    )


def contact_card(user: User, chat: Chat) -> ContactCard:
    business = chat.channel.business
    hidden = phone_hidden_from(user, business)
    facts, items = _facts(chat)
    return ContactCard(
        name=chat.customer_name,
        phone=shown_phone(chat.customer_phone, business, hidden=hidden),
        phone_masked=hidden and bool(chat.customer_phone),
        username="" if chat.customer_phone else chat.customer_username,
        bsuid=(
            ""
            if chat.customer_phone
            else mask_phone_numbers(chat.customer_bsuid)
            if hidden
            else chat.customer_bsuid
        ),
        facts=facts,
        items=items,
        earlier=[
            EarlierChat(other, crm_cards.cards_for(other)) for other in earlier_chats(user, chat)
        ],
        crm=crm_cards.cards_for(chat),
        opt_out=opt_outs.active(business.pk, chat.customer_key),
    )
