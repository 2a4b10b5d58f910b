"""The effective price list of a channel: the business's list with the channel's overrides.

`knowledge_for_channel(channel_id)` (or `knowledge_for(channel)`) is what the brain, the
guardrails and the prompt read. It is a frozen value built from the current versions; rows of a
channel's override list replace the business's rows with the same SKU (or, without SKU, the same
name) and add new ones. Built values are kept per process keyed by the version ids, so a turn
costs one small query unless a list changed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property

from django.db.models import Q

from assistant import language
from assistant.knowledge.matching import Catalogue
from assistant.knowledge.money import format_money
from assistant.knowledge.price_import import item_fields, item_key
from assistant.knowledge.price_rows import MANAGER_ONLY_NOTES
from assistant.models import AssistantSettings, Availability, PriceItem, PriceList
from inbox.conversations.models import Channel


@dataclass(frozen=True)
class KnowledgeItem:
    sku: str
    name: str
    price: Decimal
    currency: str
    unit: str = ""
    description: str = ""
    availability: str = Availability.UNKNOWN
    availability_note: str = ""
    from_channel: bool = False
    # Other names customers use (the price list's aliases/keywords column).
    aliases: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return item_key(self.sku, self.name)

    def name_in(self, lang: str) -> str:
        """The item's name for a reply in `lang`: the list's name, or, where the name is in the
        other script, the first alias written in the reply's ("Bookcase" → "Книжный шкаф" in
        a Russian or Kazakh sentence, when the list gives that alias)."""
        script = language.script_of(lang)
        if language.script(self.name) == script:
            return self.name
        return next((a for a in self.aliases if language.script(a) == script), self.name)

    def price_text(self) -> str:
        text = format_money(self.price, self.currency)
        return f"{text} / {self.unit}" if self.unit else text

    def availability_text(self) -> str:
        labels = {
            Availability.IN_STOCK: "in stock",
            Availability.OUT_OF_STOCK: "out of stock",
            Availability.ON_ORDER: "on order",
            Availability.UNKNOWN: "availability not stated",
        }
        label = labels.get(Availability(self.availability), "availability not stated")
        return f"{label} ({self.availability_note})" if self.availability_note else label

    @property
    def manager_only(self) -> bool:
        """Only a person answers about this item (its availability note says so: "manager
        only", set from the weekly review or written in the file's availability cell)."""
        return self.availability_note.strip().casefold() in MANAGER_ONLY_NOTES


@dataclass(frozen=True)
class Knowledge:
    business_id: int
    business_name: str
    channel_id: int | None
    items: tuple[KnowledgeItem, ...]
    # e.g. "b7:v3+c12:v1": which versions this was built from (logged with each decision).
    version: str = ""

    @cached_property
    def default_currency(self) -> str:
        counts: dict[str, int] = {}
        for item in self.items:
            if item.currency:
                counts[item.currency] = counts.get(item.currency, 0) + 1
        return max(counts, key=lambda c: counts[c]) if counts else ""

    @cached_property
    def catalogue(self) -> Catalogue:
        return Catalogue(
            [i.name for i in self.items],
            [i.sku for i in self.items],
            [f"{i.sku} {i.name} {i.description}" for i in self.items],
            [i.aliases for i in self.items],
            [i.unit for i in self.items],
            [i.description for i in self.items],
        )


def merge(base: list[KnowledgeItem], overrides: list[KnowledgeItem]) -> tuple[KnowledgeItem, ...]:
    """The business's rows with the channel's rows laid over them (same key → replaced)."""
    by_key: OrderedDict[str, KnowledgeItem] = OrderedDict((i.key, i) for i in base)
    for item in overrides:
        by_key[item.key] = item
    return tuple(by_key.values())


_cache: OrderedDict[tuple[object, ...], Knowledge] = OrderedDict()
_cache_lock = threading.Lock()
_CACHE_SIZE = 64


def knowledge_for_channel(channel_id: int) -> Knowledge:
    """The effective price list of a channel (empty when the business has none yet)."""
    return knowledge_for(Channel.objects.select_related("business").get(pk=channel_id))


def knowledge_for(channel: Channel) -> Knowledge:
    """`knowledge_for_channel` for a channel in hand (its business loaded): one query while
    the lists are unchanged."""
    channel_id = channel.pk
    rows = list(
        PriceList.objects.filter(business_id=channel.business_id)
        .filter(Q(channel__isnull=True) | Q(channel_id=channel_id))
        .values_list(
            "channel_id", "current_version_id", "current_version__created_at", "updated_at"
        )
    )
    lists: dict[int | None, int | None] = {owner: version for owner, version, _at, _u in rows}
    base_version = lists.get(None)
    channel_version = lists.get(channel_id)
    # Version ids plus their creation times (SQLite may reuse the id of a deleted row) and the
    # lists' change times (aliases edited in the admin change a version in place).
    key = (channel_id, channel.business.name, tuple(sorted(rows, key=str)))
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    base = _items(base_version, from_channel=False)
    overrides = _items(channel_version, from_channel=True)
    version = f"b{channel.business_id}:{base_version or '-'}"
    if channel_version:
        version += f"+c{channel_id}:{channel_version}"
    knowledge = Knowledge(
        business_id=channel.business_id,
        business_name=channel.business.name,
        channel_id=channel_id,
        items=merge(base, overrides),
        version=version,
    )
    with _cache_lock:
        _cache[key] = knowledge
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return knowledge


def _items(version_id: int | None, from_channel: bool) -> list[KnowledgeItem]:
    if version_id is None:
        return []
    return [
        KnowledgeItem(**item_fields(row), aliases=row.alias_list(), from_channel=from_channel)
        for row in PriceItem.objects.filter(version_id=version_id).order_by("position")
    ]


def assistant_settings(business_id: int) -> AssistantSettings:
    """The business's assistant settings; an unsaved row with the defaults when none exists."""
    found = AssistantSettings.objects.filter(business_id=business_id).first()
    return found or AssistantSettings(business_id=business_id)
