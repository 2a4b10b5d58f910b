"""The Jinja2 fragments (inbox/web/jinja.py) inside pages written in Django's template language."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString

from inbox.conversations.models import Chat, Message
from inbox.web import jinja

register = template.Library()


@register.simple_tag
def chat_row(chat: Chat) -> SafeString:
    return jinja.render("inbox/_chat_row.html", chat=chat)


@register.simple_tag
def message_item(message: Message) -> SafeString:
    return jinja.render("inbox/_message.html", message=message)
