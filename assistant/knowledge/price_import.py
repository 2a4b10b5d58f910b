"""Price-list import: parse a CSV or XLSX file → preview with row-level errors → apply atomically.

    preview = parse_price_file(data, "prices.xlsx")      # writes nothing
    if preview.ok:
        version = apply_price_list(preview, business, channel=None, user=request.user)

Headers are matched tolerantly (SKU / article / код / артикул, name / наименование / товар,
price / цена, currency / валюта, unit, description, availability / in stock / наличие,
aliases / keywords / синонимы / ключевые слова: other names customers use, …); the
header row may sit below a title row. Amounts parse in the usual formats (see
assistant.knowledge.money). A file with any row error is never applied: the current list stays as it
was.

The work is split by what it touches: `price_files` reads the bytes into a table (encodings,
sheets, size limits, the header row), this module parses the table's rows into a preview
(cells, prices, currencies, availability, row errors), `price_versions` writes a preview as a
version; `price_rows` holds the types all three share. Callers import all of it from here.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from decimal import Decimal
from itertools import islice
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.utils.translation import gettext_noop

from assistant.knowledge.money import find_currency, normalise_currency, parse_amount
from assistant.knowledge.price_files import (
    HEADER_SCAN_ROWS,
    MAX_FILE_BYTES,
    MAX_ROWS,
    MAX_SCANNED_ROWS,
    find_header,
    read_csv,
    read_xlsx,
)
from assistant.knowledge.price_rows import (
    MANAGER_ONLY_NOTE,
    MANAGER_ONLY_NOTES,
    ImportPreview,
    ImportRejected,
    ItemFields,
    ParsedRow,
    RowError,
    UnreadableFile,
    item_fields,
    item_key,
    normalise_header,
)
from assistant.knowledge.price_versions import (
    add_item,
    apply_price_list,
    replace_item,
    restore_version,
    update_aliases,
)
from assistant.models import Availability, PriceItem, PriceList, PriceListVersion, split_aliases

__all__ = [
    "MAX_FILE_BYTES",
    "ImportPreview",
    "ImportRejected",
    "ItemFields",
    "ParsedRow",
    "Progress",
    "RowError",
    "add_alias",
    "alias_row",
    "apply_price_list",
    "edit_item",
    "item_fields",
    "item_key",
    "manager_only_row",
    "new_item",
    "new_row",
    "parse_availability",
    "parse_price_file",
    "parse_table",
    "restore_version",
    "set_manager_only",
    "staged_preview",
    "update_aliases",
]

log = logging.getLogger(__name__)

PROGRESS_EVERY = 1000

Progress = Callable[[int, int, int], None]

IN_STOCK_WORDS = {"yes", "y", "true", "in stock", "available", "есть", "да", "в наличии",
                  "имеется", "+", "✓", "✔", "бар", "instock"}  # fmt: skip
OUT_OF_STOCK_WORDS = {"no", "n", "false", "out of stock", "sold out", "нет", "нет в наличии",
                      "отсутствует", "закончился", "-", "жоқ", "none"}  # fmt: skip
ON_ORDER_WORDS = ("order", "заказ", "ожида", "pre-order", "preorder", "backorder", "поставк")


def parse_price_file(
    data: bytes, filename: str, default_currency: str = "", on_progress: Progress | None = None
) -> ImportPreview:
    """Read a CSV or XLSX price list. Never writes: returns rows and row-level errors.
    `on_progress(rows read, rows in the file, errors so far)` is called every PROGRESS_EVERY
    rows (the worker shows it on the upload page)."""
    sha = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_FILE_BYTES:
        limit = {"mb": str(MAX_FILE_BYTES // (1024 * 1024))}
        return _failed(filename, sha, gettext_noop("file is larger than %(mb)s MB"), limit)
    if not data.strip():
        return _failed(filename, sha, gettext_noop("the file is empty"))
    is_xlsx = filename.lower().endswith((".xlsx", ".xlsm")) or data[:2] == b"PK"
    try:
        table = read_xlsx(data) if is_xlsx else read_csv(data)
    except (MemoryError, SoftTimeLimitExceeded):
        raise  # the worker's limits (price_upload.parse_upload), not a bad file
    except UnreadableFile as exc:  # a file we refuse to read, and why
        log.info("price_import.unreadable", extra={"source": filename, "error": type(exc).__name__})
        return _failed(filename, sha, exc.message, exc.params)
    except Exception as exc:  # a corrupt file is a user error, reported, never a crash
        log.info("price_import.unreadable", extra={"source": filename, "error": type(exc).__name__})
        why = {"kind": "Excel" if is_xlsx else "CSV", "why": str(exc)}
        return _failed(
            filename, sha, gettext_noop("could not read the file as %(kind)s: %(why)s"), why
        )
    return parse_table(table, filename, sha, default_currency, on_progress)


def parse_table(
    table: Iterable[tuple[int, Sequence[Any]]],
    source_name: str,
    sha: str,
    default_currency: str,
    on_progress: Progress | None = None,
) -> ImportPreview:
    rows_in = list(islice(table, MAX_SCANNED_ROWS + 1))
    if len(rows_in) > MAX_SCANNED_ROWS:
        return _failed(
            source_name,
            sha,
            gettext_noop("the file has more than %(most)s rows (blank rows count)"),
            {"most": str(MAX_SCANNED_ROWS)},
        )
    header_at, columns = find_header(rows_in)
    if header_at is None:
        return _failed(
            source_name,
            sha,
            gettext_noop(
                "no header row with at least a name and a price column was found in the first "
                "%(rows)s rows (expected e.g. 'SKU, Name, Price, Currency')"
            ),
            {"rows": str(HEADER_SCAN_ROWS)},
        )
    header_line, header = rows_in[header_at]
    header_currency = find_currency(str(header[columns["price"]]))
    errors: list[RowError] = []
    warnings: list[str] = []
    parsed: list[ParsedRow] = []
    seen: dict[str, int] = {}
    body = rows_in[header_at + 1 :]
    for index, (line, cells) in enumerate(body):
        if on_progress is not None and index % PROGRESS_EVERY == 0:
            on_progress(index, len(body), len(errors))
        values = [_cell_text(c) for c in cells]
        if not any(values):
            continue
        if len(parsed) + len(errors) >= MAX_ROWS:
            most = {"most": str(MAX_ROWS)}
            errors.append(RowError(line, gettext_noop("more than %(most)s rows"), True, most))
            break
        row, problems = _parse_row(line, cells, columns, header_currency or default_currency)
        errors.extend(problems)
        if row is None:
            continue
        if row.key in seen:
            first = str(seen[row.key])
            if row.sku:
                text = gettext_noop("duplicate SKU %(sku)s (also on line %(first)s)")
                errors.append(RowError(line, text, params={"sku": row.sku, "first": first}))
            else:
                text = gettext_noop("duplicate name '%(name)s' (also on line %(first)s)")
                errors.append(RowError(line, text, params={"name": row.name, "first": first}))
            continue
        seen[row.key] = line
        parsed.append(row)
    if not parsed and not errors:
        errors.append(RowError(header_line, gettext_noop("no item rows under the header")))
    if not any(r.currency for r in parsed) and parsed:
        # Translated where shown (the page's `{% translate warning %}`).
        warnings.append(
            gettext_noop("no currency found in the file; prices are stored without one")
        )
    if on_progress is not None:
        on_progress(len(body), len(body), len(errors))
    names = {f: str(header[i]).strip() for f, i in columns.items()}
    return ImportPreview(source_name, sha, names, tuple(parsed), tuple(errors), tuple(warnings))


def _failed(
    source_name: str, sha: str, message: str, params: dict[str, str] | None = None
) -> ImportPreview:
    return ImportPreview(source_name, sha, {}, (), (RowError(0, message, params=params or {}),))


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip()


def _cell(cells: Sequence[Any], columns: dict[str, int], name: str) -> Any:
    index = columns.get(name)
    if index is None or index >= len(cells):
        return None
    return cells[index]


def _parse_row(
    line: int, cells: Sequence[Any], columns: dict[str, int], fallback_currency: str
) -> tuple[ParsedRow | None, list[RowError]]:
    problems: list[RowError] = []
    name = _cell_text(_cell(cells, columns, "name"))
    sku = _cell_text(_cell(cells, columns, "sku"))[:64]
    raw_price = _cell(cells, columns, "price")
    price: Decimal | None
    if isinstance(raw_price, int | float) and not isinstance(raw_price, bool):
        price = Decimal(str(raw_price))
    elif isinstance(raw_price, Decimal):
        price = raw_price
    else:
        price = parse_amount(_cell_text(raw_price))
    if not name:
        problems.append(RowError(line, gettext_noop("the name is empty")))
    elif len(name) > 300:
        problems.append(RowError(line, gettext_noop("the name is longer than 300 characters")))
    if price is None:
        shown = _cell_text(raw_price)
        if shown:
            text = gettext_noop("the price '%(price)s' is not a number")
            problems.append(RowError(line, text, params={"price": shown}))
        else:
            problems.append(RowError(line, gettext_noop("no price")))
    elif price < 0:
        text = gettext_noop("the price %(price)s is negative")
        problems.append(RowError(line, text, params={"price": str(price)}))
    elif price >= Decimal("1e12"):
        text = gettext_noop("the price %(price)s is too large")
        problems.append(RowError(line, text, params={"price": str(price)}))
    if problems or price is None:
        return None, problems
    currency_cell = _cell_text(_cell(cells, columns, "currency"))
    currency = (
        normalise_currency(currency_cell)
        or find_currency(_cell_text(raw_price))
        or normalise_currency(fallback_currency)
    )
    if currency_cell and not normalise_currency(currency_cell):
        text = gettext_noop("unknown currency '%(currency)s'")
        return None, [RowError(line, text, params={"currency": currency_cell})]
    availability, note = parse_availability(_cell_text(_cell(cells, columns, "availability")))
    return (
        ParsedRow(
            line=line,
            sku=sku,
            name=" ".join(name.split()),
            price=price.quantize(Decimal("0.01")),
            currency=currency,
            unit=_cell_text(_cell(cells, columns, "unit"))[:32],
            description=_cell_text(_cell(cells, columns, "description")),
            availability=availability,
            availability_note=note[:200],
            aliases=", ".join(split_aliases(_cell_text(_cell(cells, columns, "aliases"))))[:500],
        ),
        [],
    )


# The cells of one edited item, in this order, read as a file's row is.
EDIT_COLUMNS = (
    "sku",
    "name",
    "price",
    "currency",
    "unit",
    "description",
    "availability",
    "aliases",
)


def edit_item(item: PriceItem, price: str, aliases: str, user: Any = None) -> PriceListVersion:
    """Change one item's price and aliases from the price-list page: the price is read and
    checked as an uploaded cell is (`_parse_row`), and the change is a new version.
    Raises ImportRejected with the row's problem, writing nothing."""
    return replace_item(item, edited_row(item, price, aliases), user)


def edited_row(item: PriceItem, price: str, aliases: str) -> ParsedRow:
    """`item` with another price and aliases, checked as an uploaded row (ImportRejected)."""
    cells = [item.sku, item.name, price, item.currency, item.unit, item.description, "", aliases]
    columns = {name: i for i, name in enumerate(EDIT_COLUMNS)}
    row, problems = _parse_row(0, cells, columns, item.currency)
    if row is None:
        raise ImportRejected([replace(p, line=0) for p in problems])
    if not find_currency(price):  # a bare number keeps the item's currency
        row = replace(row, currency=item.currency)
    return replace(row, availability=item.availability, availability_note=item.availability_note)


def new_item(
    price_list: PriceList, name: str, price: str, aliases: str = "", user: Any = None
) -> PriceListVersion:
    """Add an item the list was missing (from the weekly review): its cells are read and
    checked as an uploaded row is (`_parse_row`; a bare number takes the list's usual
    currency), and the list becomes a new version. Raises ImportRejected, writing nothing."""
    return add_item(price_list, new_row(price_list, name, price, aliases), user)


def new_row(price_list: PriceList, name: str, price: str, aliases: str = "") -> ParsedRow:
    """A new item's row, checked as an uploaded row (ImportRejected)."""
    current = price_list.current_version
    fallback = (
        current.items.values_list("currency", flat=True).first() if current is not None else None
    )
    cells = ["", name, price, "", "", "", "", aliases]
    columns = {column: i for i, column in enumerate(EDIT_COLUMNS)}
    row, problems = _parse_row(0, cells, columns, fallback or "")
    if row is None:
        raise ImportRejected([replace(p, line=0) for p in problems])
    return row


def add_alias(item: PriceItem, words: str, user: Any = None) -> PriceListVersion:
    """Teach the list the customer's words for `item` (from the weekly review): the words join
    its aliases, checked like an edit on the price-list page; a new version."""
    return replace_item(item, alias_row(item, words), user)


def alias_row(item: PriceItem, words: str) -> ParsedRow:
    """`item` with `words` among its aliases (ImportRejected: empty, or a name it has)."""
    words = " ".join(words.split())
    if not words:
        raise ImportRejected([RowError(0, gettext_noop("the words are empty"))])
    known = split_aliases(item.aliases)
    if (
        words.casefold() in {a.casefold() for a in known}
        or words.casefold() == item.name.casefold()
    ):
        text = gettext_noop("“%(words)s” is already a name of “%(name)s”")
        raise ImportRejected([RowError(0, text, params={"words": words, "name": item.name})])
    return edited_row(item, str(item.price), ", ".join([*known, words]))


def set_manager_only(item: PriceItem, user: Any = None) -> PriceListVersion:
    """Mark `item` "manager only" (its availability note): the assistant then hands every
    question about it to a person (`KnowledgeItem.manager_only`). A new version."""
    return replace_item(item, manager_only_row(item), user)


def manager_only_row(item: PriceItem) -> ParsedRow:
    """`item` marked "manager only" (ImportRejected when it is already)."""
    if item.availability_note.strip().casefold() in MANAGER_ONLY_NOTES:
        text = gettext_noop("“%(name)s” is already manager only")
        raise ImportRejected([RowError(0, text, params={"name": item.name})])
    row = ParsedRow(line=0, **item_fields(item), aliases=item.aliases)
    return replace(row, availability_note=MANAGER_ONLY_NOTE)


def staged_preview(
    price_list: PriceList, row: ParsedRow, replacing: PriceItem | None = None
) -> ImportPreview:
    """The list's current version with `row` in place of `replacing` (or added), as a preview
    nothing was written for: what a replay tries before the change is applied."""
    version = price_list.current_version
    if version is None:
        text = gettext_noop("the list has no version yet; upload it first")
        raise ImportRejected([RowError(0, text)])
    rows = [
        row
        if replacing is not None and item.pk == replacing.pk
        else ParsedRow(line=item.position, **item_fields(item), aliases=item.aliases)
        for item in version.items.order_by("position")
    ]
    if replacing is None:
        if any(other.name.casefold() == row.name.casefold() for other in rows):
            text = gettext_noop("the list already has “%(name)s”")
            raise ImportRejected([RowError(0, text, params={"name": row.name})])
        rows.append(row)
    return ImportPreview(
        source_name=f"{version.source_name or 'price list'} + {row.name}"[:200],
        sha256=version.source_sha256,
        columns={},
        rows=tuple(rows),
        errors=(),
    )


def parse_availability(text: str) -> tuple[str, str]:
    """(status, note): "yes"/"есть" → in stock, "0"/"нет" → out, "под заказ" → on order,
    a number → in stock with that count (0 → out of stock)."""
    raw = text.strip()
    low = normalise_header(raw) if raw not in ("+", "-") else raw
    if not raw:
        return Availability.UNKNOWN, ""
    number = parse_amount(raw) if re.fullmatch(r"[\d\s.,]+\s*\w{0,5}\.?", raw) else None
    if number is not None:
        if number <= 0:
            return Availability.OUT_OF_STOCK, ""
        return Availability.IN_STOCK, raw
    if low in IN_STOCK_WORDS or raw in IN_STOCK_WORDS:
        return Availability.IN_STOCK, ""
    if low in OUT_OF_STOCK_WORDS or raw in OUT_OF_STOCK_WORDS:
        return Availability.OUT_OF_STOCK, ""
    if any(word in low for word in ON_ORDER_WORDS):
        return Availability.ON_ORDER, raw
    if low.startswith(("in stock", "в наличии", "есть")):
        return Availability.IN_STOCK, raw
    return Availability.UNKNOWN, raw
