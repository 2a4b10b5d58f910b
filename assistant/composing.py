"""While the assistant composes a reply, the customer sees their messages read and "typing…".

One call as the turn starts (the channel's read receipts on): the newest customer message
marked read, with the typing indicator where the channel shows it. WhatsApp hides the indicator
after 25 s, so a turn still composing shows it again every `TYPING_REFRESH_SECONDS`, from a
thread that stops once the turn has decided, before its reply goes (so "typing…" never comes
back after the reply); a turn that ends without a reply sends nothing more.
A courtesy: a failure or a slow provider is logged and never delays or breaks the turn beyond
the transport's short timeout.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from django.conf import settings

from inbox.conversations.models import Chat, Message
from inbox.conversations.transport_registry import transport_for
from inbox.conversations.transports import Transport

log = logging.getLogger(__name__)


@contextmanager
def composing(chat: Chat, messages: Sequence[Message]) -> Iterator[None]:
    """Mark `messages` read and show "typing…" for as long as the block runs."""
    channel = chat.channel
    newest = next((m for m in reversed(messages) if m.provider_message_id), None)
    if not channel.read_receipts or newest is None:
        yield
        return
    try:
        transport = transport_for(channel)
    except Exception:  # an unknown kind or a broken setup: the turn itself will say so
        yield
        return
    typing = channel.typing_indicator
    _show(transport, chat, newest.provider_message_id, typing)
    if not typing:
        yield
        return
    done = threading.Event()
    refresher = threading.Thread(
        target=_keep_showing,
        args=(transport, chat, newest.provider_message_id, done),
        name=f"typing-chat-{chat.pk}",
        daemon=True,
    )
    try:
        refresher.start()
    except RuntimeError:  # no thread to spare: the first indicator is all the customer sees
        yield
        return
    try:
        yield
    finally:
        done.set()
        refresher.join(timeout=5)


def _keep_showing(transport: Transport, chat: Chat, message_id: str, done: threading.Event) -> None:
    while not done.wait(float(settings.TYPING_REFRESH_SECONDS)):
        _show(transport, chat, message_id, True)


def _show(transport: Transport, chat: Chat, message_id: str, typing: bool) -> None:
    try:
        transport.mark_read(chat, message_id=message_id, typing=typing)
    except Exception as exc:  # a courtesy: whatever went wrong, the turn goes on
        log.warning(
            "composing.mark_read_failed",
            extra={
                "chat_id": chat.pk,
                "channel_id": chat.channel_id,
                "error": f"{type(exc).__name__}: {exc}"[:200],
            },
        )
