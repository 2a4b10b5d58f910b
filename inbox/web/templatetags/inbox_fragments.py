"""The Jinja2 fragments (inbox/web/jinja.py) inside pages written in Django's template language."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString
from django.utils.translation import gettext

from inbox.conversations import pending_replies, window
from inbox.conversations.models import Chat, Message, PendingReply
from inbox.web import jinja

register = template.Library()


@register.simple_tag
def chat_row(chat: Chat) -> SafeString:
    return jinja.render("inbox/_chat_row.html", chat=chat)


@register.simple_tag
def message_item(message: Message) -> SafeString:
    return jinja.render("inbox/_message.html", message=message)


@register.simple_tag
def chat_window(chat: Chat) -> SafeString:
    """The header's "Window closes in 3 h" (Cloud API chats only; empty elsewhere)."""
    return jinja.render("inbox/_window.html", chat=chat, w=window.describe(chat))


@register.filter
def window_closed(chat: Chat) -> bool:
    """Free text cannot reach this customer now: the composer's reply is locked."""
    return not window.is_open(chat)


@register.simple_tag
def window_closed_detail() -> str:
    return gettext(window.CLOSED_DETAIL)


@register.filter
def pending_reply(chat: Chat) -> PendingReply | None:
    """The answer kept for the customer's return (`pending_replies`), shown under the composer."""
    return pending_replies.current(chat.pk)
