"""The live inbox: what open dashboards are told when the conversation core reports a change.

`DashboardPush` listens to the core (`inbox.conversations.hooks`) and, once the change is
committed, renders the affected fragments and publishes them through `inbox.web.realtime`. The
functions below are the events themselves, one per kind of change.
"""

from __future__ import annotations

from functools import partial

from django.db import transaction

from inbox.conversations import hooks
from inbox.conversations.models import Chat, Handoff, Message, Owner
from inbox.web import contact, dashboard, fragments
from inbox.web.realtime import publish


class DashboardPush(hooks.Listener):
    """Every push waits for the commit (outside a transaction it goes at once), so a dashboard
    never shows a change that was rolled back."""

    def chat_changed(self, chat_id: int) -> None:
        transaction.on_commit(partial(chat_changed, chat_id), robust=True)

    def chat_updated(self, chat_id: int) -> None:
        transaction.on_commit(partial(chat_updated, chat_id), robust=True)

    def chat_status_changed(self, chat_id: int, *, woke: bool) -> None:
        transaction.on_commit(partial(chat_status_changed, chat_id, woke), robust=True)

    def chat_assigned(self, chat_id: int, *, assignee_id: int) -> None:
        transaction.on_commit(partial(chat_assigned, chat_id, assignee_id), robust=True)

    def message_received(self, message: Message, chat: Chat, *, business_id: int) -> None:
        transaction.on_commit(partial(new_message, message, chat), robust=True)

    def message_changed(self, message_id: int) -> None:
        transaction.on_commit(partial(message_changed, message_id), robust=True)

    def handoff_created(self, handoff_id: int) -> None:
        transaction.on_commit(partial(handoff_created, handoff_id), robust=True)

    def turn_running(self, chat: Chat, *, running: bool) -> None:
        transaction.on_commit(partial(turn_running, chat, running), robust=True)


def chat_changed(chat_id: int) -> None:
    """A chat's owner, version or assignment changed: refresh its row and open views. A chat
    that now waits for a human raises a notification in every open dashboard."""
    chat = Chat.objects.select_related("channel__business").filter(pk=chat_id).first()
    if chat is None:
        return
    publish(
        chat.channel.business_id,
        "chat.changed",
        {
            "owner": chat.owner,
            "version": chat.version,
            "notify": chat.owner == Owner.PENDING_HUMAN,
            "reason": dashboard.last_transition_reason(chat),
            "customer": contact.customer_label(chat),
            "owner_changed": True,
        },
        chat_id=chat.pk,
        channel_id=chat.channel_id,
        fragments=fragments.for_chat(chat.pk),
    )


def chat_status_changed(chat_id: int, woke: bool) -> None:
    """Resolved, snoozed or reopened: the row moves between the Open/Snoozed/Resolved lists;
    a snooze that ended is announced to every open dashboard (and its assignee)."""
    chat = Chat.objects.select_related("channel__business").filter(pk=chat_id).first()
    if chat is None:
        return
    publish(
        chat.channel.business_id,
        "chat.status",
        {
            "status": chat.status,
            "woke": woke,
            "assignee_id": chat.assigned_to_id,
            "customer": contact.customer_label(chat),
        },
        chat_id=chat.pk,
        channel_id=chat.channel_id,
        fragments=fragments.for_chat(chat.pk),
    )


def chat_assigned(chat_id: int, assignee_id: int) -> None:
    """Tell the assignee, wherever their inbox is open: the page of the manager whose id this
    is shows a notice (the row itself follows in `chat.updated`)."""
    chat = Chat.objects.select_related("channel__business").filter(pk=chat_id).first()
    if chat is None:
        return
    publish(
        chat.channel.business_id,
        "chat.assigned",
        {
            "assignee_id": assignee_id,
            "customer": contact.customer_label(chat),
        },
        chat_id=chat.pk,
        channel_id=chat.channel_id,
    )


def chat_updated(chat_id: int) -> None:
    """Something other than the owner changed (assignment, unread count): refresh it."""
    chat = Chat.objects.select_related("channel").filter(pk=chat_id).first()
    if chat is None:
        return
    publish(
        chat.channel.business_id,
        "chat.updated",
        {"owner": chat.owner},
        chat_id=chat.pk,
        channel_id=chat.channel_id,
        fragments=fragments.for_chat(chat.pk),
    )


def message_changed(message_id: int) -> None:
    """A message was added or changed (status, transcript, edit): refresh it where shown."""
    message, rendered = fragments.for_message(message_id)
    if message is None:
        return
    publish(
        message.channel.business_id,
        "message.changed",
        {"message_id": message.pk, "status": message.status, "kind": message.kind},
        chat_id=message.chat_id,
        channel_id=message.channel_id,
        fragments=rendered,
    )


def new_message(message: Message, chat: Chat) -> None:
    """`message_changed` for a message just stored, from the objects the caller already holds
    (the ingest consumer's hot path: no queries to render)."""
    publish(
        chat.channel.business_id,
        "message.changed",
        {"message_id": message.pk, "status": message.status, "kind": message.kind},
        chat_id=chat.pk,
        channel_id=chat.channel_id,
        fragments=fragments.for_new_message(message, chat),
    )


def handoff_created(handoff_id: int) -> None:
    """A chat now waits for a human: its open views show the handoff card."""
    handoff = Handoff.objects.select_related("chat__channel").filter(pk=handoff_id).first()
    if handoff is None:
        return
    publish(
        handoff.chat.channel.business_id,
        "handoff.created",
        {"handoff_id": handoff.pk, "reason": handoff.reason},
        chat_id=handoff.chat_id,
        channel_id=handoff.chat.channel_id,
        fragments=fragments.for_chat(handoff.chat_id),
    )


def turn_running(chat: Chat, running: bool) -> None:
    """Show or hide "the assistant is preparing a reply" on the chat."""
    publish(
        chat.channel.business_id,
        "turn.running" if running else "turn.done",
        {},
        chat_id=chat.pk,
        channel_id=chat.channel_id,
        fragments=[fragments.typing(chat, running)],
    )
