"""What a manager does to a chat, from the inbox page or the JSON API: one function per action.

Each checks the user may see the chat (else `ChatNotFound`, shown as 404: another business's
chat does not exist for this user), calls the domain function that owns the rule
(`inbox.conversations.ownership`, `inbox.conversations.outbound`) and returns what changed and what
to tell the manager. Every action is idempotent and safe when two managers click at once: the loser
gets the current state and a notice, never an error. Replies and notes carry a client key, so a
double click or a retried request sends once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.contrib.auth.models import User
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.utils.translation import gettext

from inbox.conversations import (
    access,
    assignment,
    manager_attachments,
    names,
    outbound,
    ownership,
    reading,
    resend,
    window,
)
from inbox.conversations.models import Chat, Message, Owner
from inbox.platform.redis import get_redis

log = logging.getLogger(__name__)

MAX_TEXT = 4096
IDEMPOTENCY_TTL_SECONDS = 86400


class ChatNotFound(Exception):
    """The chat does not exist or this user may not see it."""


class MessageNotFound(Exception):
    """The message is not one of this (visible) chat's."""


@dataclass(frozen=True)
class ActionResult:
    chat: Chat
    changed: bool
    notice: str = ""
    error: str = ""
    message_id: int | None = None
    # A reply refused because another manager has the chat: whom the manager is asked to take
    # it from.
    ask_take_from: User | None = None
    # Refused because WhatsApp's customer-service window is closed (`window`): only a template.
    window_closed: bool = False

    @property
    def ok(self) -> bool:
        return not self.error


def _not_delivered(why: str) -> str:
    return gettext("Not delivered: %(why)s") % {"why": why}


def visible_or_none(user: User, chat_id: int) -> Chat | None:
    return access.visible_chat(user, chat_id)


def _chat(user: User, chat_id: int) -> Chat:
    chat = access.visible_chat(user, chat_id)
    if chat is None:
        raise ChatNotFound(chat_id)
    return chat


def reload_chat(chat_id: int) -> Chat:
    """The chat as the header and the API show it, read again after a change."""
    return Chat.objects.select_related("channel", "channel__business", "assigned_to").get(
        pk=chat_id
    )


_reload = reload_chat


def _holder(chat: Chat) -> str:
    """Who has the chat, by the name their business shows of them."""
    return names.display_name(chat.assigned_to, chat.channel.business_id, "another manager")


def _first_use(user: User, chat_id: int, kind: str, key: str) -> bool:
    """False when this (user, chat, action, key) was seen before: the same click twice."""
    if not key:
        return True
    redis_key = f"action:{kind}:{user.pk}:{chat_id}:{key[:64]}"
    return bool(get_redis().set(redis_key, "1", nx=True, ex=IDEMPOTENCY_TTL_SECONDS))


def take_over(user: User, chat_id: int) -> ActionResult:
    """BOT | PENDING_HUMAN → HUMAN at once (a bot reply being prepared is then never sent);
    the chat is assigned to the manager who took it when nobody has it yet.

    The transition and the assignment commit together under the chat's row lock, so when two
    managers press at once the loser waits for the winner and is told who won by name."""
    chat = _chat(user, chat_id)
    try:
        with transaction.atomic():
            result = ownership.take_over(chat.pk, manager=user)
            if result.changed:
                assignment.assign(chat.pk, user.pk, only_if_unassigned=True)
    except ownership.InvalidTransition:
        return ActionResult(_reload(chat.pk), False, notice=gettext("The chat changed meanwhile."))
    chat = _reload(chat.pk)
    if result.changed:
        log.info("inbox.taken_over", extra={"chat_id": chat.pk, "user_id": user.pk})
        return ActionResult(chat, True)
    if chat.assigned_to_id is None:
        assignment.assign(chat.pk, user.pk, only_if_unassigned=True)
        return ActionResult(_reload(chat.pk), True)
    if chat.assigned_to_id == user.pk:
        return ActionResult(
            chat, False, notice=gettext("Already handled by %(name)s.") % {"name": _holder(chat)}
        )
    return ActionResult(
        chat,
        False,
        notice=gettext("Too late: %(name)s took this chat first.") % {"name": _holder(chat)},
    )


def other_holder(user: User, chat: Chat) -> User | None:
    """The manager who has this human-owned chat, when it is someone other than `user`:
    writing to the customer then means taking the chat from them."""
    if chat.owner != Owner.HUMAN or chat.assigned_to_id in (None, user.pk):
        return None
    return chat.assigned_to


def release(user: User, chat_id: int) -> ActionResult:
    """HUMAN | PENDING_HUMAN → BOT; the bot writes nothing until the customer does."""
    chat = _chat(user, chat_id)
    try:
        result = ownership.release(chat.pk, manager=user)
    except ownership.InvalidTransition:
        return ActionResult(_reload(chat.pk), False, notice=gettext("The chat changed meanwhile."))
    if result.changed:
        assignment.unassign(chat.pk)
        log.info("inbox.released", extra={"chat_id": chat.pk, "user_id": user.pk})
        return ActionResult(_reload(chat.pk), True)
    return ActionResult(_reload(chat.pk), False, notice=gettext("The bot already has this chat."))


def assign(user: User, chat_id: int, assignee_id: int | None) -> ActionResult:
    """Give the chat to a manager of its business who can see its channel (None: nobody)."""
    chat = _chat(user, chat_id)
    if assignee_id is not None and not access.can_be_assigned(assignee_id, chat):
        return ActionResult(chat, False, error=gettext("That person cannot work on this chat."))
    if chat.assigned_to_id == assignee_id:
        return ActionResult(chat, False)
    assignment.assign(chat.pk, assignee_id)
    log.info("inbox.assigned", extra={"chat_id": chat.pk, "assignee_id": assignee_id})
    return ActionResult(_reload(chat.pk), True)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _lines(text: str) -> str:
    """Browsers send a text box's line breaks as CRLF in form posts (multipart always)."""
    return text.replace("\r\n", "\n").strip()


def _text(text: str) -> tuple[str, str]:
    text = _lines(text)
    if not text:
        return "", "Write a message first."
    if "\x00" in text or not _encodable(text):
        return "", "The message contains characters that cannot be sent."
    if len(text) > MAX_TEXT:
        return "", f"A message can be at most {MAX_TEXT} characters."
    return text, ""


def reply(
    user: User,
    chat_id: int,
    text: str,
    *,
    key: str = "",
    ask_holder: bool = False,
    take_from: int | None = None,
) -> ActionResult:
    """Send the manager's reply through the chat's transport; the chat becomes HUMAN first.
    A failed send is reported with the provider's reason (the message row shows it too).

    From the inbox page (`ask_holder`) a chat another manager has is not answered unasked: the
    reply is refused with "Take over from X?" until the manager confirms (`take_from` is that
    holder's id), and then the chat becomes theirs. The JSON API answers whoever has it."""
    chat = _chat(user, chat_id)
    text, problem = _text(text)
    if problem:
        return ActionResult(chat, False, error=problem)
    if not window.is_open(chat):
        return _window_closed(chat)
    refused = _ask_holder_first(user, chat, ask_holder, take_from)
    if refused is not None:
        return refused
    if not _first_use(user, chat.pk, "reply", key):
        return ActionResult(_reload(chat.pk), False, notice=gettext("This reply was already sent."))
    _take_from_holder(user, chat, ask_holder)
    outcome = outbound.send_manager_reply(chat.pk, text, manager=user, source="inbox")
    chat = _reload(chat.pk)
    if chat.assigned_to_id is None and assignment.assign(chat.pk, user.pk, only_if_unassigned=True):
        chat = _reload(chat.pk)
    if outcome.reason == "window_closed":
        return _window_closed(chat)
    if not outcome.sent:
        return ActionResult(
            chat, True, error=_not_delivered(outcome.error or outcome.reason),
            message_id=outcome.message_id,
        )  # fmt: skip
    return ActionResult(chat, True, message_id=outcome.message_id)


def _window_closed(chat: Chat) -> ActionResult:
    return ActionResult(chat, False, error=gettext(window.CLOSED_DETAIL), window_closed=True)


def _ask_holder_first(
    user: User, chat: Chat, ask_holder: bool, take_from: int | None
) -> ActionResult | None:
    """The refusal "Take over from X?" when another manager has the chat and this manager has
    not confirmed taking it from them (`take_from`); None when the send may go ahead."""
    holder = other_holder(user, chat) if ask_holder else None
    if holder is None or take_from == holder.pk:
        return None
    name = names.display_name(holder, chat.channel.business_id)
    return ActionResult(
        chat,
        False,
        error=gettext("%(name)s has this chat. Take over from %(name)s?") % {"name": name},
        ask_take_from=holder,
    )


def _take_from_holder(user: User, chat: Chat, ask_holder: bool) -> None:
    if ask_holder and other_holder(user, chat) is not None:
        assignment.assign(chat.pk, user.pk)
        log.info("inbox.taken_from", extra={"chat_id": chat.pk, "user_id": user.pk})


def _caption(text: str) -> tuple[str, str]:
    text = _lines(text)
    if "\x00" in text or not _encodable(text):
        return "", "The caption contains characters that cannot be sent."
    if len(text) > manager_attachments.MAX_CAPTION:
        return "", f"A caption can be at most {manager_attachments.MAX_CAPTION} characters."
    return text, ""


def send_attachment(
    user: User,
    chat_id: int,
    upload: UploadedFile[bytes],
    caption: str = "",
    *,
    key: str = "",
    ask_holder: bool = False,
    take_from: int | None = None,
) -> ActionResult:
    """Send an image or document (the text box is its caption) like a reply: the same
    "Take over from X?" rule, the chat becomes HUMAN. The file is checked by its content and
    kept before the delivery task is queued; the message then shows its delivery status."""
    chat = _chat(user, chat_id)
    caption, problem = _caption(caption)
    if problem:
        return ActionResult(chat, False, error=problem)
    if (upload.size or 0) > manager_attachments.max_bytes():
        limit = manager_attachments.max_bytes() // (1024 * 1024)
        return ActionResult(
            chat,
            False,
            error=gettext("The file is too large: at most %(limit)s MB.") % {"limit": limit},
        )
    try:
        checked = manager_attachments.check(
            upload.read(), upload.name or "", channel_kind=chat.channel.kind
        )
    except manager_attachments.Refused as exc:
        return ActionResult(chat, False, error=exc.title)
    if not window.is_open(chat):
        return _window_closed(chat)
    refused = _ask_holder_first(user, chat, ask_holder, take_from)
    if refused is not None:
        return refused
    if not _first_use(user, chat.pk, "attachment", key):
        return ActionResult(_reload(chat.pk), False, notice=gettext("This file was already sent."))
    _take_from_holder(user, chat, ask_holder)
    message = manager_attachments.send(chat.pk, checked, caption, manager=user, source="inbox")
    if chat.assigned_to_id is None:
        assignment.assign(chat.pk, user.pk, only_if_unassigned=True)
    return ActionResult(_reload(chat.pk), True, message_id=message.pk)


def resend_message(user: User, chat_id: int, message_id: int) -> ActionResult:
    """Send a failed message of the chat again, as a new message (`inbox.conversations.resend`);
    `error` says why not when that cannot work, or what went wrong with the new send."""
    chat = _chat(user, chat_id)
    if not Message.objects.filter(pk=message_id, chat_id=chat.pk).exists():
        raise MessageNotFound(message_id)
    try:
        outcome = resend.resend(message_id, manager=user)
    except resend.Refused as exc:
        return ActionResult(chat, False, error=str(exc))
    chat = _reload(chat.pk)
    if chat.assigned_to_id is None and assignment.assign(chat.pk, user.pk, only_if_unassigned=True):
        chat = _reload(chat.pk)
    log.info("inbox.resent", extra={"chat_id": chat.pk, "user_id": user.pk})
    if not outcome.sent:
        return ActionResult(chat, True, error=_not_delivered(outcome.error or outcome.reason),
                            message_id=outcome.message_id)  # fmt: skip
    return ActionResult(chat, True, message_id=outcome.message_id)


def note(user: User, chat_id: int, text: str, *, key: str = "") -> ActionResult:
    """An internal note, shown only to managers."""
    chat = _chat(user, chat_id)
    text, problem = _text(text)
    if problem:
        return ActionResult(chat, False, error=problem)
    if not _first_use(user, chat.pk, "note", key):
        return ActionResult(chat, False, notice=gettext("This note was already added."))
    message = outbound.add_internal_note(chat.pk, text, author=user)
    return ActionResult(chat, True, message_id=message.pk)


def mark_read(user: User, chat: Chat) -> None:
    """A manager has the chat open: their own unread count goes to zero (nobody else's)."""
    reading.mark_read(int(user.pk), chat.pk)
