"""What a price list's rows are once read: `ParsedRow` (one item as the file gave it),
`RowError`, the `ImportPreview` of a whole file, `ImportRejected`, the key that identifies an
item across versions and overrides (`item_key`), and `item_fields`, the one copy of a row's
fields onto an item, stored (`PriceItem`) or read by the assistant (`KnowledgeItem`). Imports
nothing of the knowledge package: the reading, parsing and writing modules build on it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Protocol, TypedDict

from django.utils.translation import gettext

# An item's availability note that hands every question about it to a person.
MANAGER_ONLY_NOTE = "manager only"
MANAGER_ONLY_NOTES = frozenset(
    {MANAGER_ONLY_NOTE, "only via manager", "только через менеджера", "только менеджер"}
)


@dataclass(frozen=True)
class ParsedRow:
    line: int
    sku: str
    name: str
    price: Decimal
    currency: str
    unit: str
    description: str
    availability: str
    availability_note: str
    aliases: str = ""

    @property
    def key(self) -> str:
        return item_key(self.sku, self.name)


@dataclass(frozen=True)
class RowError:
    line: int
    # English, marked with gettext_noop where it is made; `%(name)s` placeholders are filled
    # from `params`. The worker that reads a file speaks English: the page that shows the error
    # translates it (`str`), in its reader's language.
    message: str
    # True when the error is about the file, not one row (line 0 always is): "skip the bad
    # rows" cannot get past it.
    blocking: bool = False
    params: dict[str, str] = field(default_factory=dict)

    def text(self) -> str:
        """The message in the active language, its placeholders filled."""
        translated = gettext(self.message)
        return translated % self.params if self.params else translated

    def __str__(self) -> str:
        if not self.line:
            return self.text()
        return gettext("line %(line)s: %(message)s") % {"line": self.line, "message": self.text()}


@dataclass(frozen=True)
class ImportPreview:
    source_name: str
    sha256: str
    columns: dict[str, str]  # field → the header it was read from
    rows: tuple[ParsedRow, ...]
    errors: tuple[RowError, ...]
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors and bool(self.rows)

    @property
    def skippable(self) -> bool:
        """Some rows are bad, the rest can be applied without them if the admin chooses."""
        return (
            bool(self.errors)
            and bool(self.rows)
            and not any(e.blocking or e.line == 0 for e in self.errors)
        )


class UnreadableFile(ValueError):
    """A file that cannot be read as a price list, with the reason as a `RowError` message:
    English, marked with gettext_noop, `%(name)s` filled from `params` (shown translated)."""

    def __init__(self, message: str, params: dict[str, str]) -> None:
        super().__init__(message % params)
        self.message = message
        self.params = params


class ImportRejected(Exception):
    """The file had errors: nothing was written."""

    def __init__(self, errors: Sequence[RowError]) -> None:
        super().__init__("; ".join(str(e) for e in errors[:10]))
        self.errors = list(errors)


def item_key(sku: str, name: str) -> str:
    """What identifies a row across versions and overrides: the SKU, else the name."""
    if sku.strip():
        return "sku:" + sku.strip().lower()
    return "name:" + " ".join(normalise_header(name).split())


def normalise_header(text: str) -> str:
    text = str(text or "").strip().lower().replace("ё", "е")
    text = re.sub(r"[\s_\-./:,;()\[\]#№*]+", " ", text)
    return text.strip()


class PriceRow(Protocol):
    """A row of a price list, parsed from a file (`ParsedRow`) or stored (`PriceItem`)."""

    @property
    def sku(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def price(self) -> Decimal: ...
    @property
    def currency(self) -> str: ...
    @property
    def unit(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def availability(self) -> str: ...
    @property
    def availability_note(self) -> str: ...


class ItemFields(TypedDict):
    sku: str
    name: str
    price: Decimal
    currency: str
    unit: str
    description: str
    availability: str
    availability_note: str


def item_fields(row: PriceRow) -> ItemFields:
    """What a row says of its item, for `PriceItem(**item_fields(row), aliases=…)` and
    `KnowledgeItem(**item_fields(row), aliases=…)`: the one place a row's fields are copied
    onto an item. The aliases are not in it: a row keeps them as one string ("диван Бостон,
    Boston sofa"), a KnowledgeItem as a tuple of names (`split_aliases`)."""
    return ItemFields(
        sku=row.sku,
        name=row.name,
        price=row.price,
        currency=row.currency,
        unit=row.unit,
        description=row.description,
        availability=row.availability,
        availability_note=row.availability_note,
    )
