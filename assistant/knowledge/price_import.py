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
"""

from __future__ import annotations

import csv
import hashlib
import io
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import islice
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from assistant.knowledge.money import find_currency, normalise_currency, parse_amount
from assistant.models import (
    Availability,
    PriceItem,
    PriceList,
    PriceListVersion,
    split_aliases,
)
from inbox.conversations.models import Business, Channel

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 10 * 1024 * 1024
MAX_ROWS = 50_000
HEADER_SCAN_ROWS = 15
# Rows read at most, blank ones included, and cells per row: a 250 KB XLSX can declare a million
# rows (or 16 384 columns), and reading them all cost 45 s of CPU and 300 MB in the web process.
MAX_SCANNED_ROWS = MAX_ROWS + 10_000
MAX_COLUMNS = 64

# Normalised header → field. Exact matches first; then a header *starting with* an alias.
HEADER_ALIASES: dict[str, tuple[str, ...]] = {
    "sku": ("sku", "article", "art", "art no", "article number", "item code", "product code",
            "code", "part number", "part no", "pn", "id", "артикул", "арт", "код", "код товара",
            "каталожный номер", "кат номер"),
    "name": ("name", "product", "product name", "item", "item name", "title", "service",
             "наименование", "название", "товар", "услуга", "позиция", "номенклатура",
             "наименование товара", "атауы", "тауар"),
    "price": ("price", "unit price", "retail price", "cost", "amount", "price per unit",
              "цена", "стоимость", "розничная цена", "цена за ед", "цена за единицу", "прайс",
              "бағасы", "баға"),
    "currency": ("currency", "cur", "curr", "валюта"),
    "unit": ("unit", "units", "uom", "unit of measure", "ед", "ед изм", "единица",
             "единица измерения", "ед измерения"),
    "description": ("description", "details", "note", "notes", "comment", "описание",
                    "примечание", "комментарий", "характеристики", "сипаттама"),
    "availability": ("availability", "in stock", "stock", "available", "status", "qty",
                     "quantity", "наличие", "в наличии", "остаток", "количество", "статус",
                     "склад"),
    "aliases": ("aliases", "alias", "keywords", "keyword", "synonyms", "synonym", "tags",
                "search words", "also known as", "aka", "other names", "синонимы", "синоним",
                "ключевые слова", "ключевики", "теги", "другие названия", "псевдонимы",
                "кілт сөздер", "синонимдер"),
}  # fmt: skip

IN_STOCK_WORDS = {"yes", "y", "true", "in stock", "available", "есть", "да", "в наличии",
                  "имеется", "+", "✓", "✔", "бар", "instock"}  # fmt: skip
OUT_OF_STOCK_WORDS = {"no", "n", "false", "out of stock", "sold out", "нет", "нет в наличии",
                      "отсутствует", "закончился", "-", "жоқ", "none"}  # fmt: skip
ON_ORDER_WORDS = ("order", "заказ", "ожида", "pre-order", "preorder", "backorder", "поставк")


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
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line else self.message


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


def match_columns(header: Sequence[Any]) -> dict[str, int]:
    """Field → column index for one candidate header row."""
    normalised = [normalise_header(h) for h in header]
    found: dict[str, int] = {}
    for field_name, aliases in HEADER_ALIASES.items():
        for i, h in enumerate(normalised):
            if h and h in aliases and i not in found.values():
                found[field_name] = i
                break
    for field_name, aliases in HEADER_ALIASES.items():
        if field_name in found:
            continue
        for i, h in enumerate(normalised):
            if i in found.values() or not h:
                continue
            if any(h.startswith(alias + " ") for alias in aliases if len(alias) > 2):
                found[field_name] = i
                break
    return found


def parse_price_file(data: bytes, filename: str, default_currency: str = "") -> ImportPreview:
    """Read a CSV or XLSX price list. Never writes: returns rows and row-level errors."""
    sha = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_FILE_BYTES:
        return _failed(filename, sha, f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    if not data.strip():
        return _failed(filename, sha, "the file is empty")
    is_xlsx = filename.lower().endswith((".xlsx", ".xlsm")) or data[:2] == b"PK"
    try:
        table = _read_xlsx(data) if is_xlsx else _read_csv(data)
    except Exception as exc:  # a corrupt file is a user error, reported, never a crash
        log.info("price_import.unreadable", extra={"source": filename, "error": type(exc).__name__})
        kind = "Excel" if is_xlsx else "CSV"
        return _failed(filename, sha, f"could not read the file as {kind}: {exc}")
    return parse_table(table, filename, sha, default_currency)


def parse_table(
    table: Iterable[tuple[int, Sequence[Any]]], source_name: str, sha: str, default_currency: str
) -> ImportPreview:
    rows_in = list(islice(table, MAX_SCANNED_ROWS + 1))
    if len(rows_in) > MAX_SCANNED_ROWS:
        return _failed(
            source_name, sha, f"the file has more than {MAX_SCANNED_ROWS} rows (blank rows count)"
        )
    header_at, columns = _find_header(rows_in)
    if header_at is None:
        return _failed(
            source_name,
            sha,
            "no header row with at least a name and a price column was found in the first "
            f"{HEADER_SCAN_ROWS} rows (expected e.g. 'SKU, Name, Price, Currency')",
        )
    header_line, header = rows_in[header_at]
    header_currency = find_currency(str(header[columns["price"]]))
    errors: list[RowError] = []
    warnings: list[str] = []
    parsed: list[ParsedRow] = []
    seen: dict[str, int] = {}
    for line, cells in rows_in[header_at + 1 :]:
        values = [_cell_text(c) for c in cells]
        if not any(values):
            continue
        if len(parsed) + len(errors) >= MAX_ROWS:
            errors.append(RowError(line, f"more than {MAX_ROWS} rows"))
            break
        row, problems = _parse_row(line, cells, columns, header_currency or default_currency)
        errors.extend(problems)
        if row is None:
            continue
        if row.key in seen:
            what = f"SKU {row.sku}" if row.sku else f"name '{row.name}'"
            errors.append(RowError(line, f"duplicate {what} (also on line {seen[row.key]})"))
            continue
        seen[row.key] = line
        parsed.append(row)
    if not parsed and not errors:
        errors.append(RowError(header_line, "no item rows under the header"))
    if not any(r.currency for r in parsed) and parsed:
        warnings.append("no currency found in the file; prices are stored without one")
    names = {f: str(header[i]).strip() for f, i in columns.items()}
    return ImportPreview(source_name, sha, names, tuple(parsed), tuple(errors), tuple(warnings))


def apply_price_list(
    preview: ImportPreview,
    business: Business,
    channel: Channel | None = None,
    user: Any = None,
) -> PriceListVersion:
    """Write the preview as the new current version, all or nothing. Raises ImportRejected if
    the preview has errors (the current version is untouched)."""
    if not preview.ok:
        raise ImportRejected(preview.errors or [RowError(0, "no rows to import")])
    if channel is not None and channel.business_id != business.pk:
        raise ImportRejected([RowError(0, "the channel belongs to another business")])
    with transaction.atomic():
        price_list, _ = PriceList.objects.get_or_create(business=business, channel=channel)
        # Serialise imports of one list: the version number is max + 1 under this row lock.
        price_list = PriceList.objects.select_for_update().get(pk=price_list.pk)
        last = price_list.versions.aggregate(n=Max("number"))["n"] or 0
        version = PriceListVersion.objects.create(
            price_list=price_list,
            number=last + 1,
            source_name=preview.source_name[:255],
            source_sha256=preview.sha256,
            item_count=len(preview.rows),
            created_by=user if getattr(user, "pk", None) else None,
        )
        PriceItem.objects.bulk_create(
            [
                PriceItem(
                    version=version,
                    position=i,
                    sku=row.sku,
                    name=row.name,
                    price=row.price,
                    currency=row.currency,
                    unit=row.unit,
                    description=row.description,
                    availability=row.availability,
                    availability_note=row.availability_note,
                    aliases=row.aliases,
                )
                for i, row in enumerate(preview.rows)
            ],
            batch_size=1000,
        )
        price_list.current_version = version
        price_list.save(update_fields=["current_version", "updated_at"])
    log.info(
        "price_list.applied",
        extra={
            "business_id": business.pk,
            "channel_id": channel.pk if channel else None,
            "version": version.number,
            "items": version.item_count,
        },
    )
    return version


def update_aliases(item: PriceItem, aliases: str) -> None:
    """Set the other names of one item (typed in the admin) and mark its list changed, so every
    process rebuilds that list's knowledge on its next turn."""
    cleaned = ", ".join(split_aliases(aliases))[:500]
    with transaction.atomic():
        PriceItem.objects.filter(pk=item.pk).update(aliases=cleaned)
        PriceList.objects.filter(versions=item.version_id).update(updated_at=timezone.now())
    item.aliases = cleaned


# --- internals ------------------------------------------------------------------------------


def _failed(source_name: str, sha: str, message: str) -> ImportPreview:
    return ImportPreview(source_name, sha, {}, (), (RowError(0, message),))


def _read_csv(data: bytes) -> list[tuple[int, list[str]]]:
    for encoding in ("utf-8-sig", "cp1251"):
        try:
            text = data.decode(encoding)
            break
        except UnicodeDecodeError:
            continue
    else:  # pragma: no cover - cp1251 decodes any byte string
        raise ValueError("unknown text encoding")
    sample = text[:20_000]
    try:
        dialect: Any = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    return [(reader.line_num, row[:MAX_COLUMNS]) for row in islice(reader, MAX_SCANNED_ROWS + 1)]


def _read_xlsx(data: bytes) -> list[tuple[int, list[Any]]]:
    import openpyxl

    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        sheets = workbook.worksheets
        # The first sheet whose top rows hold a header; else the first sheet (reported then).
        chosen = next(
            (s for s in sheets if _find_header(_sheet_rows(s, HEADER_SCAN_ROWS))[0] is not None),
            sheets[0] if sheets else None,
        )
        return _sheet_rows(chosen, MAX_SCANNED_ROWS + 1) if chosen is not None else []
    finally:
        workbook.close()


def _sheet_rows(sheet: Any, limit: int) -> list[tuple[int, list[Any]]]:
    rows = sheet.iter_rows(values_only=True, max_col=MAX_COLUMNS)
    return [(i, list(r)) for i, r in enumerate(islice(rows, limit), 1)]


def _find_header(rows: Sequence[tuple[int, Sequence[Any]]]) -> tuple[int | None, dict[str, int]]:
    for index, (_line, cells) in enumerate(rows[:HEADER_SCAN_ROWS]):
        columns = match_columns(cells)
        if "name" in columns and "price" in columns:
            return index, columns
    return None, {}


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
        problems.append(RowError(line, "the name is empty"))
    elif len(name) > 300:
        problems.append(RowError(line, "the name is longer than 300 characters"))
    if price is None:
        shown = _cell_text(raw_price)
        problems.append(
            RowError(line, f"the price '{shown}' is not a number" if shown else "no price")
        )
    elif price < 0:
        problems.append(RowError(line, f"the price {price} is negative"))
    elif price >= Decimal("1e12"):
        problems.append(RowError(line, f"the price {price} is too large"))
    if problems or price is None:
        return None, problems
    currency_cell = _cell_text(_cell(cells, columns, "currency"))
    currency = (
        normalise_currency(currency_cell)
        or find_currency(_cell_text(raw_price))
        or normalise_currency(fallback_currency)
    )
    if currency_cell and not normalise_currency(currency_cell):
        return None, [RowError(line, f"unknown currency '{currency_cell}'")]
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
