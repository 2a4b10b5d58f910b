"""Putting a business's labels on its chats and taking them off.

Only a label of the chat's own business goes on a chat, and only by someone who may see the
chat; the row and header of the chat are pushed again to every open inbox."""

from __future__ import annotations

from django.db import transaction

from inbox.conversations import access, hooks
from inbox.conversations.access import User
from inbox.conversations.models import Chat, Label


class LabelNotFound(Exception):
    """The chat or the label does not exist for this user (shown as 404)."""


def _chat_and_label(user: User, chat_id: int, label_id: int) -> tuple[Chat, Label]:
    chat = access.visible_chat(user, chat_id)
    if chat is None:
        raise LabelNotFound("no such chat")
    label = Label.objects.filter(pk=label_id, business_id=chat.channel.business_id).first()
    if label is None:
        raise LabelNotFound("no such label")
    return chat, label


def add_label(user: User, chat_id: int, label_id: int) -> Chat:
    """Label the chat (already labelled: nothing changes)."""
    chat, label = _chat_and_label(user, chat_id, label_id)
    with transaction.atomic():
        label.chats.add(chat)
        hooks.chat_updated(chat.pk)
    return chat


def remove_label(user: User, chat_id: int, label_id: int) -> Chat:
    chat, label = _chat_and_label(user, chat_id, label_id)
    with transaction.atomic():
        label.chats.remove(chat)
        hooks.chat_updated(chat.pk)
    return chat
