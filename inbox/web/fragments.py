"""HTML fragments of the inbox page, rendered from the same templates the page includes.

A fragment is the outer HTML of one element with a stable id. The page render includes these
templates; the websocket push (`inbox/web/live/realtime.py`) and the replay endpoint send the
same HTML, and the browser replaces the element with that id (or inserts it into `container`,
ordered by its `data-sort`). Rendering goes through autoescaping templates (Django's; Jinja2's
for the chat row and the message, the two rendered for every stored burst: inbox/web/jinja.py),
so customer text is always text, never markup.

Fragments are rendered without a request: they never contain a CSRF token (the page sends it
as an htmx header) nor anything that depends on who is looking.
"""

from __future__ import annotations

from typing import TypedDict

from django.db.models import prefetch_related_objects
from django.template.loader import render_to_string

from inbox.conversations import access, drafts, window
from inbox.conversations.models import Chat, Handoff, Message
from inbox.web import dashboard, jinja
from inbox.web.local_language import business_words
from inbox.web.local_time import business_time


class Fragment(TypedDict):
    id: str
    html: str
    container: str
    scope: str  # "list": the chat list; "chat": only where the chat is open


def _fragment(element_id: str, html: str, *, scope: str, container: str = "") -> Fragment:
    return {"id": element_id, "html": html.strip(), "container": container, "scope": scope}


def _render(template: str, context: dict[str, object], business_id: int) -> str:
    """Times in the fragment are the business's local times (inbox/web/local_time.py), words
    in the business's inbox language (inbox/web/local_language.py): one rendering per team."""
    with business_time(business_id), business_words(business_id):
        return render_to_string(template, context)


def _render_jinja(template: str, business_id: int, **context: object) -> str:
    """The chat row and the message: Jinja2 templates (inbox/web/jinja.py), the hot path."""
    with business_time(business_id), business_words(business_id):
        return jinja.render(template, **context)


def header_context(chat: Chat) -> dict[str, object]:
    return {"chat": chat, "assignees": list(access.assignable_memberships(chat))}


def row(chat: Chat) -> Fragment:
    # A pushed row is every manager's: it carries no one's read count (the chat has no
    # `my_read`; status.js works the badge out per manager).
    html = _render_jinja("inbox/_chat_row.html", chat.channel.business_id, chat=chat)
    return _fragment(f"chat-row-{chat.pk}", html, scope="list", container="chat-list-items")


def header(chat: Chat) -> Fragment:
    html = _render("inbox/_chat_header.html", header_context(chat), chat.channel.business_id)
    return _fragment(f"chat-header-{chat.pk}", html, scope="chat")


def pending_reply(chat: Chat) -> Fragment:
    """The answer kept for the customer's return, under the composer (empty once sent)."""
    html = _render("inbox/_pending_reply.html", {"chat": chat}, chat.channel.business_id)
    return _fragment(f"pending-{chat.pk}", html, scope="chat")


def handoff(chat: Chat, current: Handoff | None) -> Fragment:
    html = _render(
        "inbox/_handoff_card.html", {"chat": chat, "handoff": current}, chat.channel.business_id
    )
    return _fragment(f"handoff-{chat.pk}", html, scope="chat")


def history(chat: Chat) -> Fragment:
    html = _render(
        "inbox/_history.html",
        {"chat": chat, "transitions": dashboard.transitions(chat)},
        chat.channel.business_id,
    )
    return _fragment(f"history-{chat.pk}", html, scope="chat")


def message_html(item: Message, *, problem: str = "") -> str:
    """A message as the conversation shows it; `problem`: why an action on it did not happen
    (the answer to that action only, never pushed)."""
    return _render_jinja(
        "inbox/_message.html", item.channel.business_id, message=item, problem=problem
    )


def message(item: Message) -> Fragment:
    html = message_html(item)
    return _fragment(f"msg-{item.pk}", html, scope="chat", container=f"messages-{item.chat_id}")


def window_badge(chat: Chat) -> Fragment | None:
    """The header's window countdown, pushed with each customer burst (a message reopens the
    window; the page counts down from the time by itself). None without a window."""
    if not window.has_window(chat.channel.kind):
        return None
    html = _render_jinja(
        "inbox/_window.html", chat.channel.business_id, chat=chat, w=window.describe(chat)
    )
    return _fragment(f"window-{chat.pk}", html, scope="chat")


def typing(chat: Chat, running: bool) -> Fragment:
    html = _render(
        "inbox/_typing.html", {"chat": chat, "turn_running": running}, chat.channel.business_id
    )
    return _fragment(f"typing-{chat.pk}", html, scope="chat")


def draft(chat: Chat) -> Fragment:
    """The chat's bot reply waiting for approval (an empty slot when none is)."""
    html = _render(
        "inbox/_draft.html",
        {"chat": chat, "draft": drafts.current_for(chat.pk)},
        chat.channel.business_id,
    )
    return _fragment(f"draft-{chat.pk}", html, scope="chat")


def for_chat(chat_id: int) -> list[Fragment]:
    """Everything that shows a chat's state: its list row and, where it is open, its header,
    handoff card, ownership history and the answer kept for the customer's return."""
    chat = dashboard.chat_row(chat_id)
    if chat is None:
        return []
    return [
        row(chat),
        header(chat),
        handoff(chat, dashboard.current_handoff(chat)),
        history(chat),
        pending_reply(chat),
    ]


def for_new_messages(items: list[Message], chat: Chat) -> list[Fragment]:
    """Messages just stored (oldest first) and their chat's row, rendered from the objects in
    hand (the chat with its channel and assignee loaded; the last message is its last one)."""
    chat.last_message = items[-1]  # type: ignore[attr-defined]
    for item in items:
        item.chat = chat
    badge = window_badge(chat)
    return [row(chat), *(message(item) for item in items), *([badge] if badge else [])]


def prepare_rows(chats: list[Chat]) -> None:
    """Load what a row shows beyond the chat's own columns (its business's settings, its
    labels) for all the chats of a batch in two queries; rendered one by one, each row asked
    for them itself (three queries a row, half the cost of a burst's push)."""
    prefetch_related_objects([chat.channel for chat in chats], "business")
    prefetch_related_objects(chats, "labels")


def message_to_render(message_id: int) -> Message | None:
    return (
        Message.objects.select_related("chat", "channel", "sent_by").filter(pk=message_id).first()
    )


def for_message(item: Message) -> list[Fragment]:
    """A changed message and its chat's row."""
    fragments = [message(item)]
    chat = dashboard.chat_row(item.chat_id)
    if chat is not None:
        fragments.insert(0, row(chat))
    return fragments
