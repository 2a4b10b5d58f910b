"""The Bitrix24 sync's listener on the conversation core (`inbox.conversations.hooks`).

Called inside the transaction that made the change: it records the work in the database and
enqueues the sync with `transaction.on_commit`, so a rolled-back chat never reaches the CRM and
a committed one always does (a lost enqueue is picked up by the periodic sweep). It makes no
HTTP calls and does nothing when the business has no active Bitrix24 sync.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AbstractContextManager

from inbox.conversations import hooks
from inbox.conversations.models import Channel, Chat, Handoff, Message
from integrations.bitrix24.models import (
    Bitrix24Settings,
    ConnectorMessage,
    FailedMessageSync,
    HandoffSync,
)
from integrations.bitrix24.rest.connection import active_settings, settings_read_once
from integrations.bitrix24.sync import outbox

log = logging.getLogger(__name__)


class CrmSync(hooks.Listener):
    def batch(self) -> AbstractContextManager[None]:
        return settings_read_once()

    def chat_created(self, chat_id: int, *, business_id: int) -> None:
        chat_created(chat_id, business_id=business_id)

    def handoff_created(self, handoff_id: int) -> None:
        handoff_created(handoff_id)

    def chat_assigned(self, chat_id: int, *, assignee_id: int) -> None:
        chat_assigned(chat_id)

    def message_failed(self, message_id: int) -> None:
        failed_message(message_id)

    def messages_received(self, items: Sequence[tuple[Message, Chat]], *, business_id: int) -> None:
        if active_settings(business_id) is None:
            return  # most businesses: one look-up per batch (read once per batch)
        for message, _chat in items:
            customer_message(message.pk, business_id=business_id)


def chat_created(chat_id: int, *, business_id: int | None = None) -> None:
    """A new customer chat: find or create its contact and lead/deal, link the conversation.
    Sandbox chats are a business trying its assistant, not customers: they never sync. With
    `business_id` (the ingest consumer knows it) a business without a sync costs no query
    inside `settings_read_once`."""
    if business_id is not None and active_settings(business_id) is None:
        return
    chat = Chat.objects.select_related("channel").filter(pk=chat_id).first()
    if chat is None or chat.channel.kind == Channel.Kind.SANDBOX:
        return
    cfg = active_settings(chat.channel.business_id)
    if cfg is None or not cfg.sync_chats:
        return
    outbox.request_sync(chat)
    outbox.enqueue_push_on_commit(cfg.business_id)


def handoff_created(handoff_id: int) -> None:
    """The assistant handed a chat to a human: move the deal to the handoff stage and add the
    reason, summary and collected facts to its timeline."""
    handoff = Handoff.objects.select_related("chat__channel").filter(pk=handoff_id).first()
    if handoff is None:
        return
    cfg = active_settings(handoff.chat.channel.business_id)
    if cfg is None or not cfg.sync_handoffs:
        return
    link = outbox.request_sync(handoff.chat)
    HandoffSync.objects.get_or_create(handoff=handoff, defaults={"link": link})
    outbox.enqueue_push_on_commit(cfg.business_id)


def failed_message(message_id: int) -> None:
    """WhatsApp did not deliver a message a manager or the bot sent (a quote, an answer): say so
    on the deal's timeline, with the reason."""
    message = Message.objects.select_related("chat__channel").filter(pk=message_id).first()
    if message is None or message.chat.channel.kind == Channel.Kind.SANDBOX:
        return
    cfg = active_settings(message.chat.channel.business_id)
    if cfg is None or not cfg.sync_chats:
        return
    link = outbox.request_sync(message.chat)
    FailedMessageSync.objects.get_or_create(message=message, defaults={"link": link})
    outbox.enqueue_push_on_commit(cfg.business_id)


def chat_assigned(chat_id: int) -> None:
    """A manager was assigned to the chat: make them (their Bitrix24 user) responsible."""
    chat = Chat.objects.select_related("channel").filter(pk=chat_id).first()
    if chat is None:
        return
    cfg = active_settings(chat.channel.business_id)
    if cfg is None or not cfg.sync_responsible:
        return
    outbox.request_sync(chat, responsible=True)
    outbox.enqueue_push_on_commit(cfg.business_id)


def customer_message(message_id: int, *, business_id: int | None = None) -> None:
    """A customer message to show in Bitrix24 Open Channels (local-application mode with a
    connector configured); nothing otherwise. With `business_id` (the ingest consumer knows
    it) a business without the connector costs one query."""
    if business_id is not None and active_settings(business_id) is None:
        return
    message = Message.objects.select_related("chat__channel").filter(pk=message_id).first()
    if message is None or message.direction != Message.Direction.INBOUND:
        return
    cfg = active_settings(message.chat.channel.business_id)
    if (
        cfg is None
        or not cfg.sync_open_channels
        or cfg.mode != Bitrix24Settings.Mode.APP
        or not (cfg.connector_id and cfg.line_id)
    ):
        return
    ConnectorMessage.objects.get_or_create(
        message=message,
        direction=ConnectorMessage.Direction.TO_BITRIX,
        defaults={"business_id": cfg.business_id, "chat": message.chat},
    )
    outbox.enqueue_connector_on_commit(cfg.business_id)
