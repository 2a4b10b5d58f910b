"""A manager flags a bot message as wrong (`MessageFlag`): the trust loop's input. Only a bot's
message in a chat the manager may see can be flagged; anything else is "not found", exactly
like a chat of another business."""

from __future__ import annotations

import logging

from inbox.conversations import access
from inbox.conversations.access import User
from inbox.conversations.models import Message, MessageFlag

log = logging.getLogger(__name__)

MAX_NOTE = 2000


class MessageNotFound(Exception):
    """No bot message with that id in a chat this user may see."""


def bot_message(user: User, chat_id: int, message_id: int) -> Message:
    """The bot's message `message_id` of chat `chat_id`, if this user may see the chat."""
    chat = access.visible_chat(user, chat_id)
    message = (
        Message.objects.filter(chat=chat, pk=message_id, author=Message.Author.BOT).first()
        if chat is not None
        else None
    )
    if message is None:
        raise MessageNotFound(f"no bot message {message_id} in chat {chat_id}")
    return message


def flag_message(
    user: User,
    chat_id: int,
    message_id: int,
    category: MessageFlag.Category,
    note: str = "",
) -> MessageFlag:
    """Record that a bot message was wrong, and how. Raises `MessageNotFound`."""
    message = bot_message(user, chat_id, message_id)
    flag = MessageFlag.objects.create(
        message=message,
        chat_id=message.chat_id,
        flagged_by_id=user.pk if user.is_authenticated else None,
        category=category,
        note=note.strip()[:MAX_NOTE],
    )
    log.info(
        "message.flagged",
        extra={"chat_id": chat_id, "message_id": message_id, "category": category},
    )
    return flag
