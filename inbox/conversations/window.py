"""WhatsApp's customer-service window: the one place that says whether free text may reach a
customer now.

On the Cloud API a customer's message opens a 24-hour window in which any message may be sent;
outside it only an approved template is delivered, and a free-text send is accepted by the
Graph API and then fails with error 131047. The window is measured from the customer's last
inbound message by its provider timestamp; our own messages, echoes from the business's phone
and replayed history never reopen it (the ingest counts customer messages only:
`ingest.chats.count_customer_message`). Linked-device gateways and the sandbox have no window.

A message from a Click-to-WhatsApp ad (its `referral`) does not lengthen it: the 72-hour "free
entry point" that such a message starts once the business replies is a pricing window (every
message free of charge, templates included); Meta still allows non-template messages only
within the 24-hour customer-service window.

`Chat.window_closes_at` holds the closing time, written by the ingest with the chat's other
counters, so reading it costs nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from django.utils import timezone
from django.utils.translation import gettext, gettext_noop

from inbox.conversations.models import Channel, Chat

WINDOW = timedelta(hours=24)
# Under this much time left the inbox warns that the window is about to close.
WARN_BEFORE = timedelta(hours=1)
_CLOUD_API = Channel.Kind.CLOUD_API.value
_LONG_AGO = datetime.min.replace(tzinfo=UTC)

# What a manager (and the API) is told when free text is refused; the inbox page shows it in
# the manager's language (`gettext(CLOSED_DETAIL)`), the API in English.
CLOSED_DETAIL = gettext_noop(
    "WhatsApp's 24-hour customer-service window is closed (the customer has not written since): "
    "only an approved template can be sent to this customer now (free text would fail with "
    "WhatsApp error 131047). Internal notes still work."
)

WindowState = Literal["none", "open", "closing", "closed"]


def has_window(kind: str) -> bool:
    """Only the Cloud API enforces the window; linked-device gateways send anything."""
    return kind == _CLOUD_API


def closes_after(current: datetime | None, customer_at: datetime, kind: str) -> datetime | None:
    """The chat's closing time once a customer message stamped `customer_at` is counted: the
    later of the one it had and this message's (an older message arriving late never shortens
    it). None on a channel without a window."""
    if kind != _CLOUD_API:
        return None
    closes = customer_at + WINDOW
    return closes if current is None or closes > current else current


def closes_at(chat: Chat) -> datetime | None:
    """When the chat's window closes; None when its channel has none (always open)."""
    if not has_window(chat.channel.kind):
        return None
    # A Cloud API chat the customer never wrote in (only echoes) has its window closed.
    return chat.window_closes_at or _LONG_AGO


def is_open(chat: Chat, now: datetime | None = None) -> bool:
    """May free text (or media) reach this customer now? Always on channels without a window."""
    closes = closes_at(chat)
    return closes is None or closes > (now or timezone.now())


@dataclass(frozen=True)
class Window:
    """What the inbox shows of a chat's window."""

    state: WindowState
    closes_at: datetime | None
    label: str


def describe(chat: Chat, now: datetime | None = None) -> Window:
    """The chat's window as the inbox shows it ("Window closes in 3 h"); the page's script
    (static/inbox/window.js) counts down from `closes_at` with the same words."""
    closes = closes_at(chat)
    if closes is None:
        return Window("none", None, "")
    left = closes - (now or timezone.now())
    stored = chat.window_closes_at
    if left <= timedelta(0):
        return Window("closed", stored, gettext("WhatsApp window closed: template only"))
    state: WindowState = "closing" if left < WARN_BEFORE else "open"
    return Window(state, stored, gettext("Window closes in %(left)s") % {"left": _duration(left)})


def _duration(left: timedelta) -> str:
    """In the active language (the inbox's words; English in a worker)."""
    minutes = max(1, int(left.total_seconds() // 60))
    if minutes < 60:
        return gettext("%(n)s min") % {"n": minutes}
    return gettext("%(n)s h") % {"n": minutes // 60}
