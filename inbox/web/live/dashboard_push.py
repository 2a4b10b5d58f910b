"""The live inbox: what open dashboards are told when the conversation core reports a change.

`DashboardPush` listens to the core (`inbox.conversations.hooks`) and, once the change is
committed, renders the affected fragments and publishes them through `inbox.web.live.realtime`. The
functions below are the events themselves, one per kind of change.

Cost once per business, not once per event:

- Inside `hooks.batch()` (the ingest consumer's stored batch) the committed changes are
  collected and pushed when the batch ends: the messages of one chat become one push (the row
  rendered once, every message's fragment in the same frame), and a change reported twice
  (`chat_updated` of one chat) is rendered once.
- Nothing is rendered for a business with no inbox socket open (`realtime.open_or_skipped`). Its
  sequence number still moves, without a log entry: a page that reconnects later finds the log
  no longer reaches back to its number and re-renders its regions from the database, exactly as
  when the log was trimmed. A page opened later renders from the database anyway. So what is
  skipped is only what the replay log would have carried, and no page is left stale.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import cast

from django.db import transaction

from inbox.conversations import hooks, online
from inbox.conversations.models import Chat, ChatStatus, Handoff, Message, Owner
from inbox.platform.metrics import DASHBOARD_PUSHES
from inbox.web import contact, dashboard, fragments
from inbox.web.live import realtime
from inbox.web.live.realtime import publish


@dataclass
class _Collected:
    """The pushes one batch committed, in order; each key once. Received messages are kept as
    they came (one entry per `messages_received`) and sorted into chats only for a business
    with a page open (`_by_chat`)."""

    calls: dict[tuple[object, ...], Callable[[], None]] = field(default_factory=dict)
    received: list[tuple[Sequence[tuple[Message, Chat]], int]] = field(default_factory=list)
    order: list[tuple[object, ...]] = field(default_factory=list)

    def add_call(self, key: tuple[object, ...], call: Callable[[], None]) -> None:
        if key not in self.calls:
            self.order.append(key)
        self.calls[key] = call

    def add_messages(self, items: Sequence[tuple[Message, Chat]], business_id: int) -> None:
        self.order.append(("received", len(self.received)))
        self.received.append((items, business_id))


@dataclass
class _ByChat:
    """A batch's received messages for the businesses with a page open: the messages of a
    chat under one key ("messages", chat), placed where the chat first appeared."""

    order: list[tuple[object, ...]]
    messages: dict[int, list[tuple[Message, Chat]]]


def _received_chats(collected: _Collected) -> dict[int, set[int]]:
    """Business → the chats a batch received messages in (one push each, or one skip)."""
    chats: dict[int, set[int]] = {}
    for items, business_id in collected.received:
        chats.setdefault(business_id, set()).update([chat.id for _m, chat in items])
    return chats


def _by_chat(collected: _Collected, present: set[int]) -> _ByChat:
    order: list[tuple[object, ...]] = []
    messages: dict[int, list[tuple[Message, Chat]]] = {}
    for key in collected.order:
        if key[0] != "received":
            order.append(key)
            continue
        items, business_id = collected.received[cast(int, key[1])]
        if business_id not in present:  # skipped with the presence check
            continue
        for message, chat in items:
            chat_messages = messages.get(chat.id)
            if chat_messages is None:
                order.append(("messages", chat.id))
                chat_messages = messages[chat.id] = []
            chat_messages.append((message, chat))
    return _ByChat(order, messages)


class _State(threading.local):
    collected: _Collected | None = None
    open_cache: dict[int, bool] | None = None
    skipped: dict[int, int] | None = None


_state = _State()
log = logging.getLogger(__name__)
# The counter's two children, looked up once: a label look-up per push cost more than the
# increment, once per chat of every stored batch.
_PUBLISHED = DASHBOARD_PUSHES.labels("published")
_SKIPPED = DASHBOARD_PUSHES.labels("skipped")
_unique = itertools.count()


def _after_commit(key: tuple[object, ...], call: Callable[[], None]) -> None:
    """Run `call` once the change commits; inside a batch, collect it for the batch's end."""

    def committed() -> None:
        collected = _state.collected
        if collected is None:
            call()
        else:
            collected.add_call(key, call)

    transaction.on_commit(committed, robust=True)


class DashboardPush(hooks.Listener):
    """Every push waits for the commit (outside a transaction it goes at once), so a dashboard
    never shows a change that was rolled back."""

    @contextmanager
    def batch(self) -> Iterator[None]:
        if _state.collected is not None:  # nested: the outer batch pushes
            yield
            return
        _state.collected = _Collected()
        try:
            yield
        finally:
            collected, _state.collected = _state.collected, None
            push_collected(collected)

    def chat_changed(self, chat_id: int) -> None:
        _after_commit(("chat_changed", chat_id), partial(chat_changed, chat_id))

    def chat_updated(self, chat_id: int) -> None:
        _after_commit(("chat_updated", chat_id), partial(chat_updated, chat_id))

    def chat_status_changed(self, chat_id: int, *, woke: bool) -> None:
        _after_commit(
            ("chat_status_changed", chat_id, woke), partial(chat_status_changed, chat_id, woke)
        )

    def chat_assigned(self, chat_id: int, *, assignee_id: int) -> None:
        _after_commit(
            ("chat_assigned", chat_id, assignee_id), partial(chat_assigned, chat_id, assignee_id)
        )

    def messages_received(self, items: Sequence[tuple[Message, Chat]], *, business_id: int) -> None:
        items = list(items)

        def committed() -> None:
            collected = _state.collected
            if collected is None:
                collected = _Collected()
                collected.add_messages(items, business_id)
                push_collected(collected)
            else:
                collected.add_messages(items, business_id)

        transaction.on_commit(committed, robust=True)

    def message_changed(self, message_id: int) -> None:
        _after_commit(("message_changed", message_id), partial(message_changed, message_id))

    def handoff_created(self, handoff_id: int) -> None:
        _after_commit(("handoff_created", handoff_id), partial(handoff_created, handoff_id))

    def draft_changed(self, chat_id: int) -> None:
        _after_commit(("draft_changed", chat_id), partial(draft_changed, chat_id))

    def turn_running(self, chat: Chat, *, running: bool) -> None:
        # Never merged: "running" then "done" in one batch must both arrive, in order.
        _after_commit(("turn_running", next(_unique)), partial(turn_running, chat, running))


def push_collected(collected: _Collected) -> None:
    """Push what a batch committed: one round trip for the presence of all its businesses
    (which also skips the chats of those with no page open), one push per chat's messages,
    and one sequence step per business for anything else skipped."""
    if not collected.order:
        return
    received = _received_chats(collected)
    present = realtime.open_or_skipped({b: len(chats) for b, chats in received.items()})
    _state.open_cache = {b: b in present for b in received}
    by_chat = _by_chat(collected, present)
    shown = [chat_messages[-1][1] for chat_messages in by_chat.messages.values()]
    if shown:
        fragments.prepare_rows(shown)
    # Pushes other than received messages skipped while pushing (`_skipped`), counted per
    # business, a sequence step each at the end.
    skipped: dict[int, int] = {}
    _state.skipped = skipped
    try:
        with realtime.batched():
            for key in by_chat.order:
                try:
                    if key[0] == "messages":
                        new_messages(by_chat.messages[cast(int, key[1])])
                    else:
                        collected.calls[key]()
                except Exception:  # as on_commit(robust=True): one push never stops the rest
                    log.warning("live.push_failed", extra={"push": str(key[0])}, exc_info=True)
    finally:
        _state.skipped, _state.open_cache = None, None
        hidden = sum(len(chats) for b, chats in received.items() if b not in present)
        if hidden or skipped:
            _SKIPPED.inc(hidden + sum(skipped.values()))
        for business_id, count in skipped.items():
            realtime.skip(business_id, count)


def _dashboards_open(business_id: int) -> bool:
    """Whether to render for this business at all. False records a skipped push: the
    business's sequence number moves without a log entry (see the module docstring)."""
    cache = _state.open_cache
    if cache is not None and business_id in cache:
        is_open = cache[business_id]
    else:
        is_open = business_id in online.any_socket_open([business_id])
        if cache is not None:
            cache[business_id] = is_open
    if is_open:
        _PUBLISHED.inc()
        return True
    _skipped(business_id)
    return False


def _skipped(business_id: int) -> None:
    """A push not rendered: counted, and its sequence step taken (at the batch's end, with
    the others of the business, inside a batch)."""
    if _state.skipped is not None:
        _state.skipped[business_id] = _state.skipped.get(business_id, 0) + 1
    else:
        _SKIPPED.inc()
        realtime.skip(business_id, 1)


def chat_changed(chat_id: int) -> None:
    """A chat's owner, version or assignment changed: refresh its row and open views. A chat
    that now waits for a human raises a notification in every open dashboard."""
    chat = Chat.objects.select_related("channel__business").filter(pk=chat_id).first()
    if chat is None or not _dashboards_open(chat.channel.business_id):
        return
    publish(
        chat.channel.business_id,
        "chat.changed",
        {
            "owner": chat.owner,
            "version": chat.version,
            # A chat resolved into waiting for a human needs no one until the customer writes.
            "notify": chat.owner == Owner.PENDING_HUMAN and chat.status != ChatStatus.RESOLVED,
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
    if chat is None or not _dashboards_open(chat.channel.business_id):
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
    if chat is None or not _dashboards_open(chat.channel.business_id):
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
    if chat is None or not _dashboards_open(chat.channel.business_id):
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
    message = fragments.message_to_render(message_id)
    if message is None or not _dashboards_open(message.channel.business_id):
        return
    rendered = fragments.for_message(message)
    publish(
        message.channel.business_id,
        "message.changed",
        {"message_id": message.pk, "status": message.status, "kind": message.kind},
        chat_id=message.chat_id,
        channel_id=message.channel_id,
        fragments=rendered,
    )


def new_messages(items: list[tuple[Message, Chat]]) -> None:
    """`message_changed` for messages of one chat just stored, from the objects the caller
    already holds (the ingest consumer's hot path: no queries to render): one push with the
    chat's row, rendered once from its latest state, and every message's fragment."""
    last, chat = items[-1]
    if not _dashboards_open(chat.channel.business_id):
        return
    publish(
        chat.channel.business_id,
        "message.changed",
        {
            "message_id": last.pk,
            "message_ids": [message.pk for message, _ in items],
            "status": last.status,
            "kind": last.kind,
        },
        chat_id=chat.pk,
        channel_id=chat.channel_id,
        fragments=fragments.for_new_messages([message for message, _ in items], chat),
    )


def handoff_created(handoff_id: int) -> None:
    """A chat now waits for a human: its open views show the handoff card."""
    handoff = Handoff.objects.select_related("chat__channel").filter(pk=handoff_id).first()
    if handoff is None or not _dashboards_open(handoff.chat.channel.business_id):
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
    if not _dashboards_open(chat.channel.business_id):
        return
    publish(
        chat.channel.business_id,
        "turn.running" if running else "turn.done",
        {},
        chat_id=chat.pk,
        channel_id=chat.channel_id,
        fragments=[fragments.typing(chat, running)],
    )


def draft_changed(chat_id: int) -> None:
    """A bot reply started or stopped waiting for approval: the chat's open views show it (or
    no longer do)."""
    chat = Chat.objects.select_related("channel").filter(pk=chat_id).first()
    if chat is None or not _dashboards_open(chat.channel.business_id):
        return
    publish(
        chat.channel.business_id,
        "draft.changed",
        {},
        chat_id=chat.pk,
        channel_id=chat.channel_id,
        fragments=[fragments.draft(chat)],
    )
