"""Two businesses with a manager each, and a chat on each side: the setting every tenant
isolation test starts from."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractUser
from django.utils import timezone

from inbox.conversations.models import Business, Channel, Chat, Handoff, Membership, Message
from tests import factories

PASSWORD = "pw-for-tests-only"


@dataclass
class Tenant:
    business: Business
    channel: Channel
    chat: Chat
    message: Message
    handoff: Handoff
    manager: AbstractUser
    admin: AbstractUser


def tenant(label: str) -> Tenant:
    business = factories.business(f"Business {label}")
    channel = factories.channel(business, name=f"Channel {label}")
    chat = factories.chat(
        channel,
        customer_name=f"Customer {label}",
        customer_phone=f"7701000000{ord(label[0]) % 10}",
        last_message_at=timezone.now(),
    )
    message = factories.customer_message(chat, f"secret question of {label}")
    handoff = Handoff.objects.create(
        chat=chat, reason="outside_knowledge_base", summary=f"summary of {label}"
    )
    manager = factories.manager(business, username=f"manager-{label.lower()}")
    admin = factories.manager(
        business, username=f"admin-{label.lower()}", role=Membership.Role.ADMIN
    )
    return Tenant(business, channel, chat, message, handoff, manager, admin)
