"""A price file as a table of (line, cells): CSV (UTF-8, else Windows-1251; its delimiter
sniffed) or XLSX (the first sheet with a header in its top rows), read within limits that keep
a hostile file from costing the web process minutes or gigabytes; and which row is the header,
which column is which field (`HEADER_ALIASES`, matched tolerantly across EN/RU/KK)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Sequence
from itertools import islice
from typing import Any

from django.utils.translation import gettext_noop

from assistant.knowledge.price_rows import UnreadableFile, normalise_header

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
            text = gettext_noop(
                "could not read the file as CSV: the file is marked as UTF-8 but line %(line)s "
                "has a byte that is not UTF-8 (%(byte)s); save it again as UTF-8"
            )
            byte = f"0x{data[exc.start]:02x}"
            raise UnreadableFile(text, {"line": str(line), "byte": byte}) from None
    try:
        return data.decode("cp1251")
    except UnicodeDecodeError as exc:  # 0x98, the one byte cp1251 leaves undefined
        line = data.count(b"\n", 0, exc.start) + 1
        text = gettext_noop(
            "could not read the file as CSV: line %(line)s is neither UTF-8 nor Windows-1251 text"
        )
        raise UnreadableFile(text, {"line": str(line)}) from None


def read_csv(data: bytes) -> list[tuple[int, list[str]]]:
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


# Largest sheet a file may declare (its `<dimension ref="A1:E1200"/>`): a sheet declaring more
# rows than are ever read, or a spreadsheet's full width, is refused before openpyxl starts.
MAX_DECLARED_COLUMNS = 1024
# The head of a sheet's XML that holds its dimension (it comes before the cells).
DIMENSION_SCAN_BYTES = 64 * 1024
_DIMENSION = re.compile(rb"<(?:\w+:)?dimension\s+ref=\"([A-Z]*)(\d*)(?::([A-Z]+)(\d+))?\"")
_SHEET_MEMBER = re.compile(r"xl/worksheets/[^/]+\.xml")


def read_xlsx(data: bytes) -> list[tuple[int, list[Any]]]:
    import zipfile

    import openpyxl

    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        unpacked = sum(member.file_size for member in archive.infolist())
        if unpacked > MAX_XLSX_UNPACKED_BYTES:
            text = gettext_noop(
                "could not read the file as Excel: it unpacks to %(mb)s MB, more than %(most)s MB"
            )
            sizes = {
                "mb": str(unpacked // (1024 * 1024)),
                "most": str(MAX_XLSX_UNPACKED_BYTES // (1024 * 1024)),
            }
            raise UnreadableFile(text, sizes)
        check_declared_size(archive)
    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    try:
        sheets = workbook.worksheets
        # The first sheet whose top rows hold a header; else the first sheet (reported then).
        chosen = next(
            (s for s in sheets if find_header(_sheet_rows(s, HEADER_SCAN_ROWS))[0] is not None),
            sheets[0] if sheets else None,
        )
        return _sheet_rows(chosen, MAX_SCANNED_ROWS + 1) if chosen is not None else []
    finally:
        workbook.close()


def check_declared_size(archive: Any) -> None:
    """Refuse a workbook whose sheets declare more rows than are ever read (MAX_SCANNED_ROWS) or
    more than MAX_DECLARED_COLUMNS columns, from the head of each sheet's XML: a few kilobytes
    decompressed instead of openpyxl reading the shared strings and every row."""
    for member in archive.infolist():
        if not _SHEET_MEMBER.fullmatch(member.filename):
            continue
        with archive.open(member) as sheet:
            head = sheet.read(DIMENSION_SCAN_BYTES)
        found = _DIMENSION.search(head)
        if found is None:
            continue  # no dimension declared: the read limits still hold
        last_column = (found.group(3) or found.group(1)).decode()
        last_row = (found.group(4) or found.group(2)).decode()
        rows = int(last_row) if last_row else 0
        columns = _column_number(last_column) if last_column else 0
        name = member.filename.rsplit("/", 1)[-1].removesuffix(".xml")
        if rows > MAX_SCANNED_ROWS:
            text = gettext_noop(
                "could not read the file as Excel: %(sheet)s declares %(rows)s rows, more than "
                "the %(most)s read; delete the empty rows below the list (or save only the list) "
                "and upload again"
            )
            raise UnreadableFile(
                text, {"sheet": name, "rows": f"{rows:,}", "most": f"{MAX_SCANNED_ROWS:,}"}
            )
        if columns > MAX_DECLARED_COLUMNS:
            text = gettext_noop(
                "could not read the file as Excel: %(sheet)s declares %(columns)s columns, more "
                "than %(most)s; delete the empty columns beside the list and upload again"
            )
            counts = {"sheet": name, "columns": f"{columns:,}", "most": f"{MAX_DECLARED_COLUMNS:,}"}
            raise UnreadableFile(text, counts)


def _column_number(letters: str) -> int:
    """ "A" → 1, "Z" → 26, "AA" → 27, "XFD" → 16 384."""
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - ord("A") + 1
    return number


def _sheet_rows(sheet: Any, limit: int) -> list[tuple[int, list[Any]]]:
    rows = sheet.iter_rows(values_only=True, max_col=MAX_COLUMNS)
    return [(i, list(r)) for i, r in enumerate(islice(rows, limit), 1)]


def find_header(rows: Sequence[tuple[int, Sequence[Any]]]) -> tuple[int | None, dict[str, int]]:
    for index, (_line, cells) in enumerate(rows[:HEADER_SCAN_ROWS]):
        columns = match_columns(cells)
        if "name" in columns and "price" in columns:
            return index, columns
    return None, {}
