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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import islice
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
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
PROGRESS_EVERY = 1000

Progress = Callable[[int, int, int], None]

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
    # True when the error is about the file, not one row (line 0 always is): "skip the bad
    # rows" cannot get past it.
    blocking: bool = False

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

    @property
    def skippable(self) -> bool:
        """Some rows are bad, the rest can be applied without them if the admin chooses."""
        return (
            bool(self.errors)
            and bool(self.rows)
            and not any(e.blocking or e.line == 0 for e in self.errors)
        )


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


def parse_price_file(
    data: bytes, filename: str, default_currency: str = "", on_progress: Progress | None = None
) -> ImportPreview:
    """Read a CSV or XLSX price list. Never writes: returns rows and row-level errors.
    `on_progress(rows read, rows in the file, errors so far)` is called every PROGRESS_EVERY
    rows (the worker shows it on the upload page)."""
    sha = hashlib.sha256(data).hexdigest()
    if len(data) > MAX_FILE_BYTES:
        return _failed(filename, sha, f"file is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    if not data.strip():
        return _failed(filename, sha, "the file is empty")
    is_xlsx = filename.lower().endswith((".xlsx", ".xlsm")) or data[:2] == b"PK"
    try:
        table = _read_xlsx(data) if is_xlsx else _read_csv(data)
    except (MemoryError, SoftTimeLimitExceeded):
        raise  # the worker's limits (price_upload.parse_upload), not a bad file
    except Exception as exc:  # a corrupt file is a user error, reported, never a crash
        log.info("price_import.unreadable", extra={"source": filename, "error": type(exc).__name__})
        kind = "Excel" if is_xlsx else "CSV"
        return _failed(filename, sha, f"could not read the file as {kind}: {exc}")
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
    body = rows_in[header_at + 1 :]
    for index, (line, cells) in enumerate(body):
        if on_progress is not None and index % PROGRESS_EVERY == 0:
            on_progress(index, len(body), len(errors))
        values = [_cell_text(c) for c in cells]
        if not any(values):
            continue
        if len(parsed) + len(errors) >= MAX_ROWS:
            errors.append(RowError(line, f"more than {MAX_ROWS} rows", blocking=True))
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
    if on_progress is not None:
        on_progress(len(body), len(body), len(errors))
    names = {f: str(header[i]).strip() for f, i in columns.items()}
    return ImportPreview(source_name, sha, names, tuple(parsed), tuple(errors), tuple(warnings))


def apply_price_list(
    preview: ImportPreview,
    business: Business,
    channel: Channel | None = None,
    user: Any = None,
    *,
    skip_bad_rows: bool = False,
) -> PriceListVersion:
    """Write the preview as the new current version, all or nothing. Raises ImportRejected if
    the preview has errors (the current version is untouched), unless the admin chose
    `skip_bad_rows` and every error is one row's: the good rows are then written and the
    version records how many were left out."""
    skipping = skip_bad_rows and preview.skippable
    if not preview.ok and not skipping:
        raise ImportRejected(preview.errors or [RowError(0, "no rows to import")])
    items = [
        PriceItem(
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
    ]
    return _write_version(
        business,
        channel,
        user,
        items,
        source_name=preview.source_name,
        source_sha256=preview.sha256,
        skipped_rows=len(preview.errors) if skipping else 0,
    )


def restore_version(earlier: PriceListVersion, user: Any = None) -> PriceListVersion:
    """Roll the list back to an earlier version: a new current version copying its items
    (the history keeps every version, the restored one included)."""
    price_list = earlier.price_list
    items = [
        PriceItem(
            position=item.position,
            sku=item.sku,
            name=item.name,
            price=item.price,
            currency=item.currency,
            unit=item.unit,
            description=item.description,
            availability=item.availability,
            availability_note=item.availability_note,
            aliases=item.aliases,
        )
        for item in earlier.items.order_by("position")
    ]
    if not items:
        raise ImportRejected([RowError(0, f"version {earlier.number} has no items")])
    return _write_version(
        price_list.business,
        price_list.channel,
        user,
        items,
        source_name=earlier.source_name,
        source_sha256=earlier.source_sha256,
        restored_from=earlier,
    )


def _write_version(
    business: Business,
    channel: Channel | None,
    user: Any,
    items: list[PriceItem],
    *,
    source_name: str,
    source_sha256: str,
    skipped_rows: int = 0,
    restored_from: PriceListVersion | None = None,
) -> PriceListVersion:
    """The one writer of versions: number max + 1 under the list's row lock, the items, and
    the flip of `current_version`, in one transaction."""
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
            source_name=source_name[:255],
            source_sha256=source_sha256,
            item_count=len(items),
            skipped_rows=skipped_rows,
            restored_from=restored_from,
            created_by=user if getattr(user, "pk", None) else None,
        )
        for item in items:
            item.version = version
        PriceItem.objects.bulk_create(items, batch_size=1000)
        price_list.current_version = version
        price_list.save(update_fields=["current_version", "updated_at"])
    log.info(
        "price_list.applied",
        extra={
            "business_id": business.pk,
            "channel_id": channel.pk if channel else None,
            "version": version.number,
            "items": version.item_count,
            "skipped_rows": skipped_rows,
            "restored_from": restored_from.number if restored_from else None,
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


_UTF8_BOM = b"\xef\xbb\xbf"


def _decode_csv(data: bytes) -> str:
    """The file's text: UTF-8 (with or without a byte-order mark), else Windows-1251 (what a
    Russian Excel saves as "CSV"). A file that starts with the UTF-8 mark says it is UTF-8: a
    byte that is not is a file error naming its line. Read as cp1251 instead, the mark became
    "п»ї" glued to the first header, and that column (the SKU) was silently dropped."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if data.startswith(_UTF8_BOM):
            line = data.count(b"\n", 0, exc.start) + 1
            raise ValueError(
                f"the file is marked as UTF-8 but line {line} has a byte that is not UTF-8 "
                f"(0x{data[exc.start]:02x}); save it again as UTF-8"
            ) from None
    try:
        return data.decode("cp1251")
    except UnicodeDecodeError as exc:  # 0x98, the one byte cp1251 leaves undefined
        line = data.count(b"\n", 0, exc.start) + 1
        raise ValueError(f"line {line} is neither UTF-8 nor Windows-1251 text") from None


def _read_csv(data: bytes) -> list[tuple[int, list[str]]]:
    text = _decode_csv(data)
    sample = text[:20_000]
    try:
        dialect: Any = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    return [(reader.line_num, row[:MAX_COLUMNS]) for row in islice(reader, MAX_SCANNED_ROWS + 1)]


# Largest total an XLSX may unpack to. openpyxl reads the shared strings whole, even read-only:
# a 1 MB zip of repeated text could unpack to gigabytes in the web process. Python's zipfile
# never yields more than a member's declared size, so the declared sizes bound what is read.
MAX_XLSX_UNPACKED_BYTES = 200 * 1024 * 1024


def _read_xlsx(data: bytes) -> list[tuple[int, list[Any]]]:
    import zipfile

    import openpyxl

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        unpacked = sum(member.file_size for member in archive.infolist())
    if unpacked > MAX_XLSX_UNPACKED_BYTES:
        raise ValueError(
            f"it unpacks to {unpacked // (1024 * 1024)} MB, more than "
            f"{MAX_XLSX_UNPACKED_BYTES // (1024 * 1024)} MB"
        )
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
