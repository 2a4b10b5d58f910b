"""Desktop notifications: who is told, per person, when a chat starts waiting, is assigned to
them, or their chat gets a customer message; and, unasked, when WhatsApp did not deliver a
message a manager or the bot sent (`failed`: to the chat's assigned manager, else to everyone of
the business who may see the chat, with the reason in plain words).

Each manager turns the three kinds on per business (`Membership.notify_*`, the page
`inbox/web/notification_views.py`). The recipients are decided here, on the server, from the
preferences and `inbox.conversations.access`, and each gets a `notify` message on their own
user group; the consumer checks the business and channel once more before it forwards one. The
browser shows it with the Notification API (`static/inbox/notify.js`). Like the pushed
fragments, a notification is worded in the business's inbox language (`business_words`).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, Literal

from django.db import transaction
from django.urls import reverse
from django.utils.translation import gettext, gettext_noop

from inbox.conversations import access, delivery_errors, hooks
from inbox.conversations.models import Chat, Handoff, HandoffReason, Membership, Message
from inbox.web import contact
from inbox.web.live.realtime import send_to_users
from inbox.web.local_language import business_words
from inbox.web.templatetags.inbox_ui import preview

# "failed" is not a preference: a message that did not arrive is always worth telling.
Kind = Literal["waiting", "assigned", "message", "failed"]
FIELDS: dict[Kind, str] = {
    "waiting": "notify_waiting",
    "assigned": "notify_assigned",
    "message": "notify_my_messages",
}
LABELS: dict[Kind, str] = {
    "waiting": gettext_noop("New waiting chat"),
    "assigned": gettext_noop("Assigned to me"),
    "message": gettext_noop("Message in my chat"),
}
BODY_LIMIT = 120


class NotificationPush(hooks.Listener):
    """Decides after the commit, so nobody is told of a change that was rolled back."""

    def handoff_created(self, handoff_id: int) -> None:
        transaction.on_commit(partial(chat_waiting, handoff_id), robust=True)

    def chat_assigned(self, chat_id: int, *, assignee_id: int) -> None:
        transaction.on_commit(partial(chat_assigned, chat_id, assignee_id), robust=True)

    def message_failed(self, message_id: int) -> None:
        transaction.on_commit(partial(message_failed, message_id), robust=True)

    def messages_received(self, items: Sequence[tuple[Message, Chat]], *, business_id: int) -> None:
        for message, chat in items:
            if chat.assigned_to_id is None or message.author != Message.Author.CUSTOMER:
                continue
            transaction.on_commit(partial(my_chat_message, message, chat), robust=True)


def recipients(kind: Kind, chat: Chat, user_ids: list[int] | None = None) -> list[int]:
    """Users of the chat's business who asked for `kind` and may see this chat (of `user_ids`
    only, when given)."""
    wanted = Membership.objects.filter(
        business_id=chat.channel.business_id, **{FIELDS[kind]: True}
    ).select_related("user")
    if user_ids is not None:
        wanted = wanted.filter(user_id__in=user_ids)
    return [m.user_id for m in wanted if access.can_see_chat(m.user, chat.pk)]


def _send(kind: Kind, chat: Chat, users: list[int], title: str, body: str) -> None:
    message: dict[str, Any] = {
        "type": "inbox.notify",
        "kind": kind,
        "business_id": chat.channel.business_id,
        "channel_id": chat.channel_id,
        "chat_id": chat.pk,
        "title": title,
        "body": body[:BODY_LIMIT],
        "url": reverse("chat_detail", kwargs={"chat_id": chat.pk}),
    }
    send_to_users(users, message)


def chat_waiting(handoff_id: int) -> None:
    handoff = (
        Handoff.objects.select_related("chat__channel__business").filter(pk=handoff_id).first()
    )
    if handoff is None:
        return
    chat = handoff.chat
    users = recipients("waiting", chat)
    with business_words(chat.channel.business_id):
        title = gettext("Waiting for a human: %(customer)s") % {
            "customer": contact.customer_label(chat)
        }
        _send("waiting", chat, users, title, HandoffReason.label_for(handoff.reason))


def chat_assigned(chat_id: int, assignee_id: int) -> None:
    chat = Chat.objects.select_related("channel__business").filter(pk=chat_id).first()
    if chat is None or chat.assigned_to_id != assignee_id:
        return  # reassigned again before the commit reached us
    users = recipients("assigned", chat, [assignee_id])
    with business_words(chat.channel.business_id):
        title = gettext("Assigned to you: %(customer)s") % {
            "customer": contact.customer_label(chat)
        }
        _send("assigned", chat, users, title, chat.channel.name)


def my_chat_message(message: Message, chat: Chat) -> None:
    if chat.assigned_to_id is None:
        return
    users = recipients("message", chat, [chat.assigned_to_id])
    if not users:
        return
    with business_words(chat.channel.business_id):
        body = preview(message) or gettext("New message")
        _send("message", chat, users, contact.customer_label(chat), body)


def failure_recipients(chat: Chat) -> list[int]:
    """The chat's owner for a failed message: its assigned manager, or (nobody assigned) every
    member of its business who may see the chat."""
    members = Membership.objects.filter(business_id=chat.channel.business_id).select_related("user")
    if chat.assigned_to_id is not None:
        members = members.filter(user_id=chat.assigned_to_id)
    return [m.user_id for m in members if access.can_see_chat(m.user, chat.pk)]


def message_failed(message_id: int) -> None:
    message = (
        Message.objects.select_related("chat__channel__business").filter(pk=message_id).first()
    )
    if message is None or message.status != Message.Status.FAILED:
        return
    chat = message.chat
    users = failure_recipients(chat)
    if not users:
        return
    with business_words(chat.channel.business_id):
        customer = {"customer": contact.customer_label(chat)}
        if message.author == Message.Author.BOT:
            title = gettext("The assistant's message was not delivered: %(customer)s") % customer
        else:
            title = gettext("A message was not delivered: %(customer)s") % customer
        why = delivery_errors.explain(message.error_code, message.error_title, translated=True)
        _send("failed", chat, users, title, _sentences(why))


def _sentences(text: str) -> str:
    """As many whole sentences as fit a notification's body (a cut mid-word reads as a bug)."""
    if len(text) <= BODY_LIMIT:
        return text
    cut = text.rfind(". ", 0, BODY_LIMIT)
    return text[: cut + 1] if cut > 0 else text[: BODY_LIMIT - 1] + "…"
