"""What the conversation core tells the rest of the product, and the one way to listen.

The core never imports the web UI or an integration. Where something happens that others care
about, it calls one of the functions below, inside the transaction that made the change (or,
outside one, right after the change). Every listener decides what to do and when: the live
inbox pushes after commit (`inbox/web/live/`); the Bitrix24 sync writes its outbox row in the
same transaction, so a rolled-back chat never reaches the CRM (`integrations/bitrix24/hooks.py`).

Listeners are subscribed once per process by the site shell (`inbox/site/apps.py`). A listener
that raises fails the caller's transaction, like any other write in it would.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inbox.conversations.models import Chat, Message


class Listener:
    """Override what you need; every method does nothing by default."""

    def batch(self) -> AbstractContextManager[None]:
        """Entered around a batch of events the ingest consumer stores in one transaction
        (a listener can read its settings once per batch instead of once per event)."""
        return nullcontext()

    def chat_created(self, chat_id: int, *, business_id: int) -> None:
        """A customer wrote for the first time on this channel: a new chat."""

    def chat_changed(self, chat_id: int) -> None:
        """The chat's owner (or its customer) changed; a chat that now waits for a human is
        worth a notification."""

    def chat_updated(self, chat_id: int) -> None:
        """Something else of the chat changed: its assignee, its unread count."""

    def chat_assigned(self, chat_id: int, *, assignee_id: int) -> None:
        """A manager was made responsible for the chat."""

    def chat_status_changed(self, chat_id: int, *, woke: bool) -> None:
        """The chat was resolved, snoozed or reopened (`woke`: its snooze time came, worth a
        notification)."""

    def messages_received(self, items: Sequence[tuple[Message, Chat]], *, business_id: int) -> None:
        """Customer messages of one business were stored, in order (the ingest consumer's hot
        path: once per batch, not per message; the objects are in hand, each chat with its
        channel loaded)."""

    def message_changed(self, message_id: int) -> None:
        """A message was added or changed: a reply, a note, a status, a transcript, an edit."""

    def message_failed(self, message_id: int) -> None:
        """WhatsApp reported that a message a manager or the bot sent was not delivered (its
        row, with the code and title, is already written; `message_changed` came first)."""

    def handoff_created(self, handoff_id: int) -> None:
        """The assistant handed the chat to a human, with a summary."""

    def turn_running(self, chat: Chat, *, running: bool) -> None:
        """The assistant started (or finished) preparing a reply for the chat."""

    def draft_changed(self, chat_id: int) -> None:
        """A bot reply started waiting for approval on the chat, or was decided."""


_listeners: list[Listener] = []


def subscribe(listener: Listener) -> None:
    """Add a listener; a second listener of the same class replaces the first."""
    _listeners[:] = [known for known in _listeners if type(known) is not type(listener)]
    _listeners.append(listener)


def listeners() -> tuple[Listener, ...]:
    return tuple(_listeners)


@contextmanager
def batch() -> Iterator[None]:
    with ExitStack() as stack:
        for listener in _listeners:
            stack.enter_context(listener.batch())
        yield


def chat_created(chat_id: int, *, business_id: int) -> None:
    for listener in _listeners:
        listener.chat_created(chat_id, business_id=business_id)


def chat_changed(chat_id: int) -> None:
    for listener in _listeners:
        listener.chat_changed(chat_id)


def chat_updated(chat_id: int) -> None:
    for listener in _listeners:
        listener.chat_updated(chat_id)


def chat_assigned(chat_id: int, *, assignee_id: int) -> None:
    for listener in _listeners:
        listener.chat_assigned(chat_id, assignee_id=assignee_id)


def chat_status_changed(chat_id: int, *, woke: bool) -> None:
    for listener in _listeners:
        listener.chat_status_changed(chat_id, woke=woke)


def messages_received(items: Sequence[tuple[Message, Chat]], *, business_id: int) -> None:
    if not items:
        return
    for listener in _listeners:
        listener.messages_received(items, business_id=business_id)


def message_changed(message_id: int) -> None:
    for listener in _listeners:
        listener.message_changed(message_id)


def message_failed(message_id: int) -> None:
    for listener in _listeners:
        listener.message_failed(message_id)


def handoff_created(handoff_id: int) -> None:
    for listener in _listeners:
        listener.handoff_created(handoff_id)


def turn_running(chat: Chat, *, running: bool) -> None:
    for listener in _listeners:
        listener.turn_running(chat, running=running)


def draft_changed(chat_id: int) -> None:
    for listener in _listeners:
        listener.draft_changed(chat_id)
