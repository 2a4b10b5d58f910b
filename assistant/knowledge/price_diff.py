"""What a new price list changes against the current one, for the admin's preview: rows added,
rows removed, prices changed (old → new). Rows are matched as imports match them
(`item_key`: the SKU, else the name)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from decimal import Decimal

from assistant.knowledge.price_rows import PriceRow, item_key
from assistant.models import PriceItem, PriceList


@dataclass(frozen=True)
class DiffRow:
    sku: str
    name: str
    price: Decimal
    currency: str


@dataclass(frozen=True)
class PriceChange:
    sku: str
    name: str
    old_price: Decimal
    old_currency: str
    new_price: Decimal
    new_currency: str


@dataclass(frozen=True)
class ListDiff:
    added: list[DiffRow] = field(default_factory=list)
    removed: list[DiffRow] = field(default_factory=list)
    changed: list[PriceChange] = field(default_factory=list)
    unchanged: int = 0
    has_current: bool = True

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


def _row(row: PriceRow) -> DiffRow:
    return DiffRow(row.sku, row.name, row.price, row.currency)


def diff_rows(current: Iterable[PriceRow], new: Iterable[PriceRow]) -> ListDiff:
    """Added / removed / price changed from `current` to `new`, each in the new (or, for
    removed rows, the old) list's order."""
    before = {item_key(r.sku, r.name): r for r in current}
    after = {item_key(r.sku, r.name): r for r in new}
    added = [_row(r) for key, r in after.items() if key not in before]
    removed = [_row(r) for key, r in before.items() if key not in after]
    changed: list[PriceChange] = []
    unchanged = 0
    for key, r in after.items():
        old = before.get(key)
        if old is None:
            continue
        if old.price != r.price or old.currency != r.currency:
            changed.append(PriceChange(r.sku, r.name, old.price, old.currency, r.price, r.currency))
        else:
            unchanged += 1
    return ListDiff(added, removed, changed, unchanged)


def diff_against_current(
    business_id: int, channel_id: int | None, new: Iterable[PriceRow]
) -> ListDiff:
    """The diff of `new` against the list's current version (everything is added when the
    list has none yet)."""
    lists = PriceList.objects.filter(business_id=business_id)
    if channel_id is None:
        lists = lists.filter(channel__isnull=True)
    else:
        lists = lists.filter(channel_id=channel_id)
    price_list = lists.first()
    version_id = price_list.current_version_id if price_list else None
    if version_id is None:
        return replace(diff_rows([], new), has_current=False)
    items = PriceItem.objects.filter(version_id=version_id).only("sku", "name", "price", "currency")
    return diff_rows(items, new)
