"""The weekly review's fixes: what went wrong (open flags, `outside_knowledge_base` handoffs,
drafts a person rejected or edited), grouped by the item the assistant read and by reason,
and the fixes one click away: teach an item the customer's words (an alias), add the item the
list was missing, add a rule line, make an item "manager only". A fix to the price list is
checked and versioned like an edit on the price-list page (`assistant.knowledge.price_import`);
a flag it fixes is marked resolved (who, when, which fix) and leaves the open list.

Every entry is looked up among the businesses the user administers: another business's flag,
handoff, draft or item is `NotFound` (the views answer 404).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy

from assistant.knowledge.money import parse_amount
from assistant.knowledge.price_import import (
    add_alias,
    alias_row,
    manager_only_row,
    new_item,
    new_row,
    set_manager_only,
    staged_preview,
)
from assistant.models import PriceItem, PriceList, PriceListVersion, ReplayRun
from assistant.replay import engine
from assistant.replay.candidate import Candidate
from inbox.conversations import access
from inbox.conversations.access import User
from inbox.conversations.models import (
    Chat,
    Draft,
    Handoff,
    HandoffReason,
    Message,
    MessageFlag,
    Turn,
)
from inbox.web.params import parse_id

SHOWN = 100  # per kind of entry: the newest; older ones stay in the database
KINDS = ("flag", "handoff", "draft")
DRAFT_LABELS = {
    Draft.State.REJECTED: gettext_lazy("Draft rejected"),
    Draft.State.EDITED: gettext_lazy("Draft edited"),
}
AMOUNT_RE = re.compile(r"\d[\d\s]*(?:[.,]\d+)?")


class NotFound(Exception):
    """No such entry (or item) in the businesses this user administers."""


@dataclass
class ReviewEntry:
    """One thing that went wrong, with what the fixes need: the customer's words and the items
    (SKU and name) the assistant read for its reply."""

    kind: str  # "flag" | "handoff" | "draft"
    pk: int
    chat: Chat
    reason_code: str  # a flag's category, the handoff's reason, "draft_<state>"
    reason: str  # in a manager's words
    said: str  # what the bot said or drafted
    customer_words: str
    created_at: datetime
    note: str = ""
    items: list[tuple[str, str]] = field(default_factory=list)  # (sku, name) read
    message_id: int | None = None  # the bot message a flag is on

    @property
    def source(self) -> str:
        """How a fix's URL names this entry: "flag:12"."""
        return f"{self.kind}:{self.pk}"

    @property
    def business_id(self) -> int:
        return int(self.chat.channel.business_id)


def open_entries(user: User) -> list[ReviewEntry]:
    """Open flags, handoffs outside the price list and rejected or edited drafts in the
    businesses this user administers, newest first."""
    businesses = access.administered_businesses(user)
    flags = list(
        MessageFlag.objects.filter(chat__channel__business__in=businesses, resolved_at__isnull=True)
        .select_related("message", "chat__channel")
        .order_by("-pk")[:SHOWN]
    )
    handoffs = (
        Handoff.objects.filter(
            chat__channel__business__in=businesses,
            reason=HandoffReason.OUTSIDE_KNOWLEDGE_BASE,
        )
        .select_related("chat__channel")
        .order_by("-pk")[:SHOWN]
    )
    drafts = (
        Draft.objects.filter(chat__channel__business__in=businesses, state__in=list(DRAFT_LABELS))
        .select_related("chat__channel", "turn")
        .order_by("-pk")[:SHOWN]
    )
    # The turn behind each flagged reply, in one query (the newest turn per reply wins).
    turns = {
        t.reply_message_id: t
        for t in Turn.objects.filter(reply_message_id__in=[f.message_id for f in flags]).order_by(
            "pk"
        )
    }
    entries = [
        *(_of_flag(f, turns.get(f.message_id)) for f in flags),
        *(_of_handoff(h) for h in handoffs),
        *(_of_draft(d) for d in drafts),
    ]
    return sorted(entries, key=lambda e: e.created_at, reverse=True)


def by_item(entries: Iterable[ReviewEntry]) -> list[tuple[str, list[ReviewEntry]]]:
    """Entries whose reply quoted an item, by that item ("SKU · name"); most entries first."""
    groups: dict[str, list[ReviewEntry]] = {}
    for entry in entries:
        for sku, name in entry.items:
            groups.setdefault(f"{sku} · {name}" if sku else name, []).append(entry)
    return sorted(groups.items(), key=lambda group: (-len(group[1]), group[0]))


def by_reason(entries: Iterable[ReviewEntry]) -> list[tuple[str, list[ReviewEntry]]]:
    """Every entry by its reason (a flag's category, the handoff's, the draft's fate)."""
    groups: dict[str, list[ReviewEntry]] = {}
    for entry in entries:
        groups.setdefault(entry.reason, []).append(entry)
    return sorted(groups.items(), key=lambda group: (-len(group[1]), group[0]))


def entry_for(user: User, source: str) -> ReviewEntry:
    """The entry a fix's URL names ("flag:12"), if it is in a business this user administers."""
    kind, _, raw = source.partition(":")
    pk = parse_id(raw)
    if kind not in KINDS or pk is None:
        raise NotFound(source)
    businesses = access.administered_businesses(user)
    scope = Q(chat__channel__business__in=businesses, pk=pk)
    if kind == "flag":
        flag = MessageFlag.objects.filter(scope).select_related("message", "chat__channel").first()
        if flag is not None:
            return _of_flag(flag)
    elif kind == "handoff":
        handoff = Handoff.objects.filter(scope).select_related("chat__channel").first()
        if handoff is not None:
            return _of_handoff(handoff)
    else:
        draft = Draft.objects.filter(scope).select_related("chat__channel", "turn").first()
        if draft is not None:
            return _of_draft(draft)
    raise NotFound(source)


def price_lists(entry: ReviewEntry) -> list[PriceList]:
    """The lists the chat's assistant reads: the business's, then its channel's override."""
    return list(
        PriceList.objects.filter(business_id=entry.business_id)
        .filter(Q(channel__isnull=True) | Q(channel_id=entry.chat.channel_id))
        .exclude(current_version__isnull=True)
        .select_related("business", "channel", "current_version")
        .order_by("channel_id")
    )


def items_for(entry: ReviewEntry) -> list[PriceItem]:
    """The current items the chat's assistant reads, to choose the one the words mean."""
    versions = [p.current_version_id for p in price_lists(entry)]
    return list(PriceItem.objects.filter(version_id__in=versions).order_by("name"))


def suggested_price(words: str) -> str:
    """A price for a new item, when the customer named one ("the red one for 4 500?")."""
    for found in AMOUNT_RE.findall(words):
        amount = parse_amount(found)
        if amount is not None and amount >= 10:  # "2 chairs" is a quantity, not a price
            return str(amount)
    return ""


def fix_alias(user: User, entry: ReviewEntry, item_id: int, words: str) -> PriceListVersion:
    """Add the customer's words to one of the chat's items (a new version), and resolve the
    flag. Raises NotFound for an item the chat's assistant does not read, ImportRejected."""
    item = next((i for i in items_for(entry) if i.pk == item_id), None)
    if item is None:
        raise NotFound(f"item {item_id}")
    version = add_alias(item, words, user)
    resolve(user, entry, f"alias “{' '.join(words.split())}” → {item.name} (v{version.number})")
    return version


def fix_new_item(user: User, entry: ReviewEntry, name: str, price: str) -> PriceListVersion:
    """Add the missing item to the business's list (a new version), and resolve the flag."""
    price_list = next((p for p in price_lists(entry) if p.channel_id is None), None)
    if price_list is None:
        raise NotFound("the business has no price list yet")
    version = new_item(price_list, name, price, user=user)
    resolve(user, entry, f"item “{' '.join(name.split())}” added (v{version.number})")
    return version


def fix_manager_only(user: User, entry: ReviewEntry, item_id: int) -> PriceListVersion:
    """Mark one of the chat's items "manager only" (a new version: the assistant hands every
    question about it to a person), and resolve the flag."""
    item = next((i for i in items_for(entry) if i.pk == item_id), None)
    if item is None:
        raise NotFound(f"item {item_id}")
    version = set_manager_only(item, user)
    resolve(user, entry, f"{item.name} made manager only (v{version.number})")
    return version


REPLAY_DAYS = 90  # how far back "Replay first" takes the chat's turns


def replay_first(
    user: User, entry: ReviewEntry, fix: str, item_id: int = 0, words: str = "", price: str = ""
) -> ReplayRun:
    """Try a fix before applying it: the list with the change as the replay's candidate,
    replayed against the turns of the chat that raised it (`assistant.replay`); the replay's
    Apply writes it as a new version and resolves the flag (`resolve_replayed`). `fix`:
    "alias" (`words` for item `item_id`), "item" (name `words`, `price`), "manager"."""
    if fix == "item":
        price_list = next((p for p in price_lists(entry) if p.channel_id is None), None)
        if price_list is None:
            raise NotFound("the business has no price list yet")
        row = new_row(price_list, words, price)
        preview = staged_preview(price_list, row)
        described = f"item “{row.name}” added"
    else:
        item = next((i for i in items_for(entry) if i.pk == item_id), None)
        if item is None or fix not in ("alias", "manager"):
            raise NotFound(f"item {item_id}")
        price_list = item.version.price_list
        row = alias_row(item, words) if fix == "alias" else manager_only_row(item)
        preview = staged_preview(price_list, row, replacing=item)
        described = (
            f"alias “{' '.join(words.split())}” → {item.name}"
            if fix == "alias"
            else f"{item.name} made manager only"
        )
    candidate = Candidate(preview=preview, price_list_channel_id=price_list.channel_id)
    selection = engine.Selection(days=REPLAY_DAYS, chat_ids=(entry.chat.pk,))
    return engine.start(
        price_list.business, user, selection, candidate, {"source": entry.source, "fix": described}
    )


def resolve_replayed(user: User, run: ReplayRun) -> None:
    """After a replay's Apply: resolve the flag a "Replay first" fix came from."""
    review = run.selection.get("review") if isinstance(run.selection, dict) else None
    if not isinstance(review, dict):
        return
    try:
        entry = entry_for(user, str(review.get("source", "")))
    except NotFound:
        return
    resolve(user, entry, f"{review.get('fix', 'fix')} (replayed first, run #{run.pk})")


def resolve(user: User, entry: ReviewEntry, fix: str) -> None:
    """Mark the flag behind `entry` fixed, with who, when and which fix (other entries have no
    open state: a handoff or a draft is history)."""
    if entry.kind != "flag":
        return
    MessageFlag.objects.filter(pk=entry.pk, resolved_at__isnull=True).update(
        resolved_at=timezone.now(),
        resolved_by_id=user.pk if user.is_authenticated else None,
        resolution=fix[:300],
    )


def resolved_flags(user: User, limit: int = 20) -> list[MessageFlag]:
    """The newest fixed flags, to show what the review already fixed."""
    return list(
        MessageFlag.objects.filter(
            chat__channel__business__in=access.administered_businesses(user),
            resolved_at__isnull=False,
        )
        .select_related("message", "chat", "resolved_by")
        .order_by("-resolved_at")[:limit]
    )


# --- reading one entry ----------------------------------------------------------------------


def _of_flag(flag: MessageFlag, turn: Turn | None = None) -> ReviewEntry:
    if turn is None:
        turn = Turn.objects.filter(reply_message_id=flag.message_id).order_by("-pk").first()
    return ReviewEntry(
        kind="flag",
        pk=flag.pk,
        chat=flag.chat,
        reason_code=str(flag.category),
        reason=str(MessageFlag.Category(flag.category).label),
        said=flag.message.text,
        customer_words=_customer_words(turn, flag.chat_id, flag.message_id),
        created_at=flag.created_at,
        note=flag.note,
        items=_items_read(turn),
        message_id=flag.message_id,
    )


def _of_handoff(handoff: Handoff) -> ReviewEntry:
    asked = (
        Message.objects.filter(
            chat_id=handoff.chat_id,
            author=Message.Author.CUSTOMER,
            created_at__lte=handoff.created_at,
        )
        .order_by("-pk")
        .values_list("text", flat=True)
        .first()
    )
    return ReviewEntry(
        kind="handoff",
        pk=handoff.pk,
        chat=handoff.chat,
        reason_code=handoff.reason,
        reason=HandoffReason.label_for(handoff.reason),
        said=handoff.message_to_customer,
        customer_words=asked or "",
        created_at=handoff.created_at,
        note=handoff.summary,
    )


def _of_draft(draft: Draft) -> ReviewEntry:
    turn = draft.turn
    return ReviewEntry(
        kind="draft",
        pk=draft.pk,
        chat=draft.chat,
        reason_code=f"draft_{draft.state}",
        reason=str(DRAFT_LABELS.get(Draft.State(draft.state), draft.state)),
        said=draft.text,
        customer_words=_customer_words(turn, draft.chat_id, None),
        created_at=draft.decided_at or draft.created_at,
        note=gettext("Sent instead: %(text)s") % {"text": draft.sent_text}
        if draft.sent_text
        else "",
        items=_items_read(turn),
    )


def _customer_words(turn: Turn | None, chat_id: int, before_id: int | None) -> str:
    """What the customer wrote that the reply answered: the turn's messages, else the last
    customer message before the reply."""
    found = Message.objects.filter(chat_id=chat_id, author=Message.Author.CUSTOMER)
    if turn is not None:
        found = found.filter(pk__gte=turn.first_message_id, pk__lte=turn.last_message_id)
        texts = [t for t in found.order_by("pk").values_list("text", flat=True) if t]
        return " ".join(texts)[:500]
    if before_id is not None:
        found = found.filter(pk__lt=before_id)
    return (found.order_by("-pk").values_list("text", flat=True).first() or "")[:500]


def _items_read(turn: Turn | None) -> list[tuple[str, str]]:
    """(sku, name) of each line the turn's explained reading quoted."""
    decision: Any = turn.decision if turn is not None else None
    explained = decision.get("explained") if isinstance(decision, dict) else None
    lines = explained.get("lines") if isinstance(explained, dict) else None
    if not isinstance(lines, list):
        return []
    return [
        (str(line.get("sku") or ""), str(line.get("item") or ""))
        for line in lines
        if isinstance(line, dict) and line.get("item")
    ]
