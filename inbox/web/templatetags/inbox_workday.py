"""Template helpers for search hits, labels and the contact panel."""

from __future__ import annotations

from django import template

from inbox.conversations.models import Chat
from inbox.platform.logs import mask_phone_numbers
from inbox.web import contact

register = template.Library()


@register.filter
def shown_phone(chat: Chat) -> str:
    """The chat's phone as shared fragments (row, header) show it: masked when the business
    masks numbers for managers."""
    return contact.shown_phone(chat.customer_phone, chat.channel.business)


@register.filter
def shown_key(chat: Chat) -> str:
    """The customer key where a row names the customer by it (a wa_id is a phone number; a
    business-scoped user id is masked the same way, to its country and last characters)."""
    if chat.channel.business.mask_phone_for_managers:
        if chat.customer_bsuid and chat.customer_key == chat.customer_bsuid:
            return mask_phone_numbers(chat.customer_key)
        return contact.masked_phone(chat.customer_key)
    return chat.customer_key


@register.filter
def display_name(chat: Chat) -> str:
    """What a row or header calls the customer: the name, else the (maybe masked) number,
    else their WhatsApp username, else their key."""
    username = f"@{chat.customer_username}" if chat.customer_username else ""
    return chat.customer_name or shown_phone(chat) or username or shown_key(chat)
