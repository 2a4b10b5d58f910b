"""Canned replies as the composer offers them: the chat's business's replies with their
variables filled for this chat and this manager.

Filling is plain substitution of the three names below, never `str.format` (a reply's text is
written by an admin and may hold any braces). The result is text: the composer puts it in the
textarea as text, and the reply is escaped wherever it is shown."""

from __future__ import annotations

from typing import TypedDict

from inbox.conversations import names
from inbox.conversations.access import User
from inbox.conversations.models import CannedReply, Chat

VARIABLES = ("customer_name", "manager_name", "business_name")


class Offered(TypedDict):
    id: int
    title: str
    shortcut: str
    text: str


def fill(text: str, values: dict[str, str]) -> str:
    for name in VARIABLES:
        text = text.replace("{" + name + "}", values.get(name, ""))
    return text


def manager_name(user: User, business_id: int) -> str:
    """The signature's name: the one the business shows of the manager, never a login name
    where a display name or a real name is known."""
    return names.display_name(user, business_id)


def offered(user: User, chat: Chat) -> list[Offered]:
    """The replies of the chat's business, filled in (the caller checked the user sees it)."""
    business = chat.channel.business
    values = {
        "customer_name": chat.customer_name,
        "manager_name": manager_name(user, business.pk),
        "business_name": business.name,
    }
    return [
        {
            "id": reply.pk,
            "title": reply.title,
            "shortcut": reply.shortcut,
            "text": fill(reply.text, values),
        }
        for reply in CannedReply.objects.filter(business=business)
    ]
