"""What the manager inbox shows: the chat list and one chat, read from the database.

Selectors only (no writes). The page views, the websocket pushes (`inbox/web/fragments.py`) and the
JSON API read through here, so a row looks the same whichever way it reached the browser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from django.db.models import Case, F, OuterRef, Q, QuerySet, Subquery, Value, When
from django.db.models.fields import IntegerField
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from inbox.conversations import access, drafts, reading, search
from inbox.conversations.access import User
from inbox.conversations.models import (
    Chat,
    ChatStatus,
    ChatTransition,
    Draft,
    Handoff,
    Label,
    Message,
    Owner,
    Turn,
)
from inbox.web.params import parse_id

LIST_LIMIT = 200
MAX_OFFSET = 10**9  # a list offset past this is a typo or a probe: the first page
MESSAGES_SHOWN = 50
# A turn still "running" after this long crashed; its indicator is not shown forever.
TURN_INDICATOR_MAX_AGE = timedelta(minutes=5)
STATES = [(Owner.PENDING_HUMAN, _("Waiting")), (Owner.HUMAN, _("Human")), (Owner.BOT, _("Bot"))]
# Whose chats: everyone's, the manager's own, nobody's yet.
VIEWS = [("all", _("All")), ("mine", _("Mine")), ("unassigned", _("Unassigned"))]
# Which work: the list opens on Open chats; "any" shows every status.
STATUSES = [
    (ChatStatus.OPEN, _("Open")),
    (ChatStatus.SNOOZED, _("Snoozed")),
    (ChatStatus.RESOLVED, _("Resolved")),
    ("any", _("Any status")),
]


@dataclass(frozen=True)
class ListFilters:
    state: str = ""
    channel: int | None = None
    q: str = ""
    view: str = "all"
    status: str = ChatStatus.OPEN
    label: int | None = None

    @classmethod
    def from_query(cls, params: Any) -> ListFilters:
        state = str(params.get("state", "")).strip()
        if state not in Owner.values:
            state = ""
        channel = parse_id(params.get("channel"))
        q = str(params.get("q", "")).replace("\x00", "").encode("utf-8", "ignore").decode()
        view = str(params.get("view", "")).strip()
        if view not in dict(VIEWS):
            view = "all"
        status = str(params.get("status", "")).strip()
        if status not in dict(STATUSES):
            status = ChatStatus.OPEN
        label = parse_id(params.get("label"))
        return cls(
            state=state, channel=channel, q=q.strip()[:100], view=view, status=status, label=label
        )

    @property
    def searched_status(self) -> str:
        """The status the list shows: search words look through every status unless Snoozed or
        Resolved is picked (the default Open view would hide a resolved customer's chat)."""
        return "any" if self.q and self.status == ChatStatus.OPEN else self.status

    @property
    def active(self) -> bool:
        return bool(
            self.state or self.channel or self.q or self.label or self.view != "all"
            or self.status != ChatStatus.OPEN
        )  # fmt: skip

    def query(self, offset: int) -> str:
        """The list URL's query string for these filters, starting at `offset`."""
        params = {
            "state": self.state,
            "channel": self.channel or "",
            "q": self.q,
            "view": "" if self.view == "all" else self.view,
            "status": "" if self.status == ChatStatus.OPEN else self.status,
            "label": self.label or "",
        }
        return urlencode({**{k: v for k, v in params.items() if v}, "offset": offset})

    @staticmethod
    def offset_from_query(params: Any) -> int:
        offset = parse_id(params.get("offset"))
        return offset if offset is not None and offset < MAX_OFFSET else 0


def user_pk(user: User) -> int:
    return int(str(user.pk))


def apply_work_filters(
    chats: QuerySet[Chat], user_id: int, view: str, status: str
) -> QuerySet[Chat]:
    """The Mine / Unassigned / All view and the status filter, one rule for the inbox and the
    API."""
    if view == "mine":
        chats = chats.filter(assigned_to_id=user_id)
    elif view == "unassigned":
        chats = chats.filter(assigned_to__isnull=True)
    if status in ChatStatus.values:
        chats = chats.filter(status=status)
    return chats


def _ordered(chats: QuerySet[Chat]) -> QuerySet[Chat]:
    """Waiting chats first, the longest-waiting on top; then the most recently active."""
    return chats.annotate(
        rank=Case(When(owner=Owner.PENDING_HUMAN, then=Value(0)), default=Value(1)),
        pending_since=Case(When(owner=Owner.PENDING_HUMAN, then=F("owner_changed_at"))),
    ).order_by(
        "rank",
        F("pending_since").asc(nulls_last=True),
        F("last_message_at").desc(nulls_last=True),
        "-pk",
    )


@dataclass(frozen=True)
class ChatPage:
    rows: list[Chat]
    next_offset: int | None  # None: this page reaches the end of the list


def chat_page(user: User, filters: ListFilters, offset: int = 0) -> ChatPage:
    """One page of the chat list. Offsets, not keys: the list's order moves with every message,
    so a row may repeat across pages (the page drops repeats) but none is skipped for long."""
    rows = chat_rows(user, filters, limit=LIST_LIMIT + 1, offset=offset)
    more = len(rows) > LIST_LIMIT
    return ChatPage(rows=rows[:LIST_LIMIT], next_offset=offset + LIST_LIMIT if more else None)


def chat_rows(
    user: User, filters: ListFilters, limit: int = LIST_LIMIT, offset: int = 0
) -> list[Chat]:
    """The chats a user sees, filtered, with `last_message` attached for the preview."""
    chats = _narrowed(user, filters).select_related("channel__business", "assigned_to")
    chats = reading.with_unread(chats, user_pk(user))
    if filters.q:
        chats = chats.filter(name_or_phone(filters.q))
    last_id = (
        Message.objects.filter(chat=OuterRef("pk"))
        .exclude(direction=Message.Direction.INTERNAL)
        .order_by("-pk")
        .values("pk")[:1]
    )
    rows: list[Chat] = list(
        _ordered(chats)
        .annotate(last_id=Subquery(last_id, output_field=IntegerField()))
        .prefetch_related("labels")[offset : offset + limit]
    )
    attach_last_messages(rows)
    return rows


def name_or_phone(q: str) -> Q:
    """Chats whose customer name holds the words, or whose number holds their digits."""
    digits = "".join(ch for ch in q if ch.isdigit())
    match = Q(customer_name__icontains=q)
    if digits:
        match |= Q(customer_phone__contains=digits) | Q(customer_key__contains=digits)
    return match


def searched_chats(chats: QuerySet[Chat], q: str) -> QuerySet[Chat]:
    """The chats among `chats` that match `q` by name, number or the text of a message (the
    API's `q`; the inbox shows the message hits apart, `message_hits`)."""
    messages = Message.objects.filter(chat__in=chats.values("pk"), purged_at__isnull=True)
    texts = search.matching_messages(messages, q).order_by().values("chat_id")
    return chats.filter(name_or_phone(q) | Q(pk__in=texts))


def _narrowed(user: User, filters: ListFilters) -> QuerySet[Chat]:
    """The chats a user sees, narrowed by every filter but the search words."""
    chats = access.visible_chats(user)
    chats = apply_work_filters(chats, user_pk(user), filters.view, filters.searched_status)
    if filters.state:
        chats = chats.filter(owner=filters.state)
    if filters.channel:
        chats = chats.filter(channel_id=filters.channel)
    if filters.label:
        chats = chats.filter(labels=filters.label)
    return chats


@dataclass(frozen=True)
class MessageHit:
    message: Message
    segments: list[search.Segment]


def message_hits(user: User, filters: ListFilters) -> list[MessageHit]:
    """Messages whose text matches the search words, in the chats the other filters leave,
    newest first (empty without search words)."""
    if not filters.q:
        return []
    messages = Message.objects.filter(chat__in=_narrowed(user, filters), purged_at__isnull=True)
    found = search.matching_messages(messages, filters.q).select_related("chat", "channel")
    return [
        MessageHit(message=item, segments=search.highlight(item.text, filters.q))
        for item in found[: search.HIT_LIMIT]
    ]


def visible_labels(user: User) -> list[Label]:
    """The labels of the businesses a user works for (for the list's filter)."""
    return list(Label.objects.filter(business__in=access.visible_businesses(user)))


def attach_last_messages(chats: list[Chat]) -> None:
    ids = [getattr(chat, "last_id", None) for chat in chats]
    if any(i is None for i in ids):
        for chat in chats:
            if getattr(chat, "last_id", None) is None:
                chat.last_id = (  # type: ignore[attr-defined]
                    chat.messages.exclude(direction=Message.Direction.INTERNAL)
                    .order_by("-pk")
                    .values_list("pk", flat=True)
                    .first()
                )
    found = Message.objects.select_related("sent_by").in_bulk(
        [i for i in (getattr(c, "last_id", None) for c in chats) if i]
    )
    for chat in chats:
        chat.last_message = found.get(getattr(chat, "last_id", None) or 0)  # type: ignore[attr-defined]


def chat_row(chat_id: int) -> Chat | None:
    """One list row, as `chat_rows` builds it (for pushes: no user, tenant checked by the
    consumer)."""
    chat = (
        Chat.objects.select_related("channel__business", "assigned_to")
        .prefetch_related("labels")
        .filter(pk=chat_id)
        .first()
    )
    if chat is not None:
        attach_last_messages([chat])
    return chat


def sort_key(chat: Chat) -> str:
    """The row's place in the list as a string the browser sorts by, equal to `_ordered`."""
    if chat.owner == Owner.PENDING_HUMAN and chat.owner_changed_at:
        return f"0-{int(chat.owner_changed_at.timestamp() * 1000):015d}"
    if chat.last_message_at:
        return f"1-{10**15 - int(chat.last_message_at.timestamp() * 1000):015d}"
    return f"2-{10**15 - chat.pk:015d}"


def pending_count(user: User) -> int:
    waiting = access.visible_chats(user).filter(owner=Owner.PENDING_HUMAN)
    return waiting.exclude(status=ChatStatus.RESOLVED).count()


@dataclass
class ChatView:
    chat: Chat
    messages: list[Message]
    has_earlier: bool
    handoff: Handoff | None
    turn_running: bool
    transitions: list[ChatTransition] = field(default_factory=list)
    hit_id: int | None = None  # a search hit to show, highlighted
    draft: Draft | None = None  # a bot reply waiting for approval (inbox.conversations.drafts)
    has_later: bool = False  # the page stops before the newest messages (an old hit)


def recent_messages(chat: Chat, before: int | None = None) -> tuple[list[Message], bool]:
    """The last `MESSAGES_SHOWN` messages (optionally before an id), oldest first."""
    messages = chat.messages.select_related("sent_by", "channel").order_by("-pk")
    if before is not None:
        messages = messages.filter(pk__lt=before)
    page = list(messages[: MESSAGES_SHOWN + 1])
    has_earlier = len(page) > MESSAGES_SHOWN
    page = page[:MESSAGES_SHOWN]
    page.reverse()
    return page, has_earlier


def current_handoff(chat: Chat) -> Handoff | None:
    """The handoff behind the chat's current human episode: none once the chat went back to
    the bot after it."""
    if chat.owner == Owner.BOT:
        return None
    handoff = chat.handoffs.order_by("-pk").first()
    if handoff is None:
        return None
    back_to_bot = (
        chat.transitions.filter(to_owner=Owner.BOT, to_status="", at__gt=handoff.created_at)
        .order_by("-pk")
        .exists()
    )
    return None if back_to_bot else handoff


def turn_running(chat: Chat, now: datetime | None = None) -> bool:
    now = now or timezone.now()
    return Turn.objects.filter(
        chat=chat, outcome=Turn.Outcome.RUNNING, started_at__gte=now - TURN_INDICATOR_MAX_AGE
    ).exists()


def transitions(chat: Chat) -> list[ChatTransition]:
    return list(chat.transitions.select_related("actor").order_by("-pk")[:100])


CONTEXT_BEFORE_HIT = 10
SHOWN_AFTER_HIT = 200


def messages_around(chat: Chat, hit_id: int) -> tuple[list[Message], bool, bool]:
    """A page of the chat that holds message `hit_id` with a few before it: up to the newest
    message when that is near, else `SHOWN_AFTER_HIT` of them (`has_later` then says so)."""
    messages = chat.messages.select_related("sent_by", "channel")
    before = list(messages.filter(pk__lt=hit_id).order_by("-pk")[: CONTEXT_BEFORE_HIT + 1])
    has_earlier = len(before) > CONTEXT_BEFORE_HIT
    before = before[:CONTEXT_BEFORE_HIT]
    before.reverse()
    after = list(messages.filter(pk__gte=hit_id).order_by("pk")[: SHOWN_AFTER_HIT + 1])
    has_later = len(after) > SHOWN_AFTER_HIT
    return before + after[:SHOWN_AFTER_HIT], has_earlier, has_later


def chat_view(chat: Chat, hit_id: int | None = None) -> ChatView:
    """What the chat pane shows: the latest messages, or the page around a search hit of this
    chat (a hit that is not this chat's is ignored)."""
    messages, has_earlier = recent_messages(chat)
    has_later = False
    if hit_id is not None and not chat.messages.filter(pk=hit_id).exists():
        hit_id = None
    if hit_id is not None and (not messages or hit_id < messages[0].pk):
        messages, has_earlier, has_later = messages_around(chat, hit_id)
    return ChatView(
        chat=chat,
        messages=messages,
        has_earlier=has_earlier,
        handoff=current_handoff(chat),
        turn_running=turn_running(chat),
        transitions=transitions(chat),
        hit_id=hit_id,
        has_later=has_later,
        draft=drafts.current_for(chat.pk),
    )


def drafts_to_approve(user: User) -> QuerySet[Draft]:
    """Bot replies waiting for a person in the chats this user may see, the oldest first."""
    return (
        drafts.current()
        .filter(chat__channel__in=access.visible_channels(user))
        .select_related("chat", "chat__channel", "turn")
        .order_by("created_at", "pk")
    )


def last_transition_reason(chat: Chat) -> str:
    last = (
        chat.transitions.filter(to_status="")
        .order_by("-pk")
        .values_list("reason", flat=True)
        .first()
    )
    return last or ""


def review_handoffs(user: User, reasons: tuple[str, ...]) -> QuerySet[Handoff]:
    """Handoffs for the weekly review, limited to the businesses this user administers."""
    return (
        Handoff.objects.filter(
            reason__in=reasons, chat__channel__business__in=access.administered_businesses(user)
        )
        .select_related("chat", "chat__channel")
        .order_by("-pk")
    )
