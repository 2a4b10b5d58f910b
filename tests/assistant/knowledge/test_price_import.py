"""Price-list import: tolerant headers and numbers, row-level errors, atomic versions, overrides."""

from __future__ import annotations

import dataclasses
import io
import tracemalloc
import zipfile
from decimal import Decimal

import openpyxl
import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError

from assistant.knowledge.effective import knowledge_for_channel
from assistant.knowledge.money import parse_amount
from assistant.knowledge.price_import import ImportRejected, apply_price_list, parse_price_file
from assistant.models import Availability, PriceList, PriceListVersion
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("120 000", "120000"),
        ("120,000.50", "120000.50"),
        ("120 000,50", "120000.50"),
        ("1.200,50", "1200.50"),
        ("1,200", "1200"),
        ("1.200", "1200"),
        ("12,5", "12.5"),
        ("₸ 45 000", "45000"),
        ("45 000 тг", "45000"),
        ("$1,299.99", "1299.99"),
        ("120\u00a0000 ₽", "120000"),
        ("0.500", "0.500"),
    ],
)
def test_amounts_parse_in_the_formats_price_lists_use(text, expected):
    assert parse_amount(text) == Decimal(expected)


@pytest.mark.parametrize("text", ["", "call us", "12-14", "1,20,0"])
def test_non_amounts_are_rejected(text):
    assert parse_amount(text) is None


def test_russian_csv_with_title_row_semicolons_and_cp1251():
    text = (
        "Прайс-лист ТОО Мебель на 01.03\n"
        "Артикул;Наименование товара;Цена, тг;Ед. изм.;Наличие;Описание\n"
        "CH-101;Кресло офисное Lux;45 000;шт;есть;Сетка, подлокотники\n"
        'TB-201;Стол обеденный дуб 160;"120 000,50";шт;под заказ 2 недели;\n'
        "SF-301;Диван Milano;310000;шт;0;\n"
    )
    preview = parse_price_file(text.encode("cp1251"), "мебель.csv")
    assert preview.ok, preview.errors
    assert preview.columns["price"] == "Цена, тг"
    assert [r.sku for r in preview.rows] == ["CH-101", "TB-201", "SF-301"]
    lux, table, sofa = preview.rows
    assert (lux.price, lux.currency, lux.unit) == (Decimal("45000.00"), "KZT", "шт")
    assert lux.availability == Availability.IN_STOCK
    assert table.price == Decimal("120000.50")
    assert (table.availability, table.availability_note) == (
        Availability.ON_ORDER,
        "под заказ 2 недели",
    )
    assert sofa.availability == Availability.OUT_OF_STOCK
    assert lux.line == 3


def test_xlsx_with_english_headers_and_numeric_cells():
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    sheet.append(["Article", "Product", "Price", "Currency", "In stock", "Unit"])
    sheet.append(["R-25", "Red roses bouquet (25)", 27500, "₸", "yes", "bouquet"])
    sheet.append(["T-11", "Tulips, 11 stems", "9,900.00", "KZT", 12, ""])
    buffer = io.BytesIO()
    workbook.save(buffer)
    preview = parse_price_file(buffer.getvalue(), "flowers.xlsx")
    assert preview.ok, preview.errors
    roses, tulips = preview.rows
    assert (roses.price, roses.currency, roses.line) == (Decimal("27500.00"), "KZT", 2)
    assert tulips.price == Decimal("9900.00")
    assert (tulips.availability, tulips.availability_note) == (Availability.IN_STOCK, "12")


def test_row_errors_name_the_line_and_leave_the_current_list_untouched():
    biz = factories.business()
    good = b"sku,name,price\nA1,Chair,45000\nA2,Table,120000\n"
    first = apply_price_list(parse_price_file(good, "v1.csv"), biz)
    broken = (
        b"sku,name,price,currency\n"
        b"A1,Chair,46000,KZT\n"
        b"A2,,1000,KZT\n"
        b"A3,Sofa,call us,KZT\n"
        b"A4,Lamp,-5,KZT\n"
        b"A1,Chair again,1,KZT\n"
        b"A5,Shelf,10,bitcoins\n"
    )
    preview = parse_price_file(broken, "v2.csv")
    assert not preview.ok
    assert [str(e) for e in preview.errors] == [
        "line 3: the name is empty",
        "line 4: the price 'call us' is not a number",
        "line 5: the price -5 is negative",
        "line 6: duplicate SKU A1 (also on line 2)",
        "line 7: unknown currency 'bitcoins'",
    ]
    with pytest.raises(ImportRejected):
        apply_price_list(preview, biz)
    price_list = PriceList.objects.get(business=biz, channel=None)
    assert price_list.current_version == first
    assert price_list.versions.count() == 1
    assert {(i.sku, i.price) for i in first.items.all()} == {
        ("A1", Decimal("45000")),
        ("A2", Decimal("120000")),
    }


def test_unreadable_or_headerless_files_are_errors_not_crashes():
    assert not parse_price_file(b"PK\x03\x04garbage", "x.xlsx").ok
    headless = parse_price_file(b"foo,bar\n1,2\n", "x.csv")
    assert "no header row" in str(headless.errors[0])
    assert not parse_price_file(b"", "x.csv").ok


def _xlsx_bomb(rows: int, columns: str = "A1:B2") -> bytes:
    """An XLSX whose one sheet declares `rows` rows under a price-list header: a million rows
    compress to a few hundred KB."""
    body = "".join(f'<row r="{i}"><c r="A{i}" t="inlineStr"><is><t>x</t></is></c></row>'
                   for i in range(2, rows + 2))  # fmt: skip
    sheet = (
        '<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org'
        f'/spreadsheetml/2006/main"><dimension ref="{columns}"/><sheetData><row r="1">'
        '<c r="A1" t="inlineStr"><is><t>Name</t></is></c><c r="B1" t="inlineStr"><is><t>Price'
        f"</t></is></c></row>{body}</sheetData></worksheet>"
    )
    workbook = openpyxl.Workbook()
    raw = io.BytesIO()
    workbook.save(raw)
    out = io.BytesIO()
    with zipfile.ZipFile(raw) as source, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bomb:
        for item in source.infolist():
            data = sheet.encode() if item.filename == "xl/worksheets/sheet1.xml" else None
            bomb.writestr(item, data if data is not None else source.read(item))
    return out.getvalue()


def test_an_xlsx_declaring_a_million_rows_is_refused_without_reading_them_all():
    bomb = _xlsx_bomb(1_000_000, columns="A1:XFD1000001")
    assert len(bomb) < 5 * 1024 * 1024

    tracemalloc.start()
    preview = parse_price_file(bomb, "bomb.xlsx")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    assert not preview.ok
    assert "more than" in str(preview.errors[0])
    assert peak < 150 * 1024 * 1024, f"peak {peak / 2**20:.0f} MB"


def test_each_apply_is_a_new_version_and_a_failed_write_leaves_none():
    biz = factories.business()
    v1 = apply_price_list(parse_price_file(b"name,price\nChair,100\n", "a.csv"), biz)
    v2 = apply_price_list(parse_price_file(b"name,price\nChair,110\nSofa,900\n", "b.csv"), biz)
    assert (v1.number, v2.number) == (1, 2)
    assert PriceList.objects.get(business=biz).current_version == v2
    assert v1.items.count() == 1  # the old version stays for comparison

    preview = parse_price_file(b"name,price\nChair,120\nTable,300\n", "c.csv")
    # A row the database refuses halfway through the write (NOT NULL) rolls the whole import back.
    broken = dataclasses.replace(
        preview, rows=(preview.rows[0], dataclasses.replace(preview.rows[1], sku=None))
    )
    with pytest.raises(IntegrityError):
        apply_price_list(broken, biz)
    assert PriceList.objects.get(business=biz).current_version == v2
    assert PriceListVersion.objects.filter(price_list__business=biz).count() == 2


def test_channel_override_replaces_by_sku_and_adds_items():
    biz = factories.business()
    almaty, astana = factories.channel(biz), factories.channel(biz)
    apply_price_list(
        parse_price_file(
            b"sku,name,price,currency\nA1,Chair,45000,KZT\nA2,Table,120000,KZT\n", "b.csv"
        ),
        biz,
    )
    apply_price_list(
        parse_price_file(b"sku,name,price,currency\nA2,Table,125000,KZT\nA9,Stool,9000,KZT\n", "o"),
        biz,
        channel=astana,
    )
    base = {i.sku: i.price for i in knowledge_for_channel(almaty.pk).items}
    branch = {i.sku: i.price for i in knowledge_for_channel(astana.pk).items}
    assert base == {"A1": Decimal("45000"), "A2": Decimal("120000")}
    assert branch == {"A1": Decimal("45000"), "A2": Decimal("125000"), "A9": Decimal("9000")}

    # A new business version shows through the override at once.
    apply_price_list(
        parse_price_file(b"sku,name,price,currency\nA1,Chair,47000,KZT\n", "b2.csv"), biz
    )
    assert {i.sku: i.price for i in knowledge_for_channel(astana.pk).items}["A1"] == 47000


def test_override_for_a_channel_of_another_business_is_refused():
    biz, other = factories.business(), factories.business()
    preview = parse_price_file(b"name,price\nChair,1\n", "x.csv")
    with pytest.raises(ImportRejected):
        apply_price_list(preview, biz, channel=factories.channel(other))


def test_management_command_previews_then_applies(tmp_path, capsys):
    biz = factories.business("Mebel Plus")
    path = tmp_path / "prices.csv"
    path.write_text("Код;Товар;Цена;Валюта\nCH-1;Стул;12 500;₸\n", encoding="utf-8")
    call_command("import_price_list", str(path), business="Mebel Plus")
    out = capsys.readouterr().out
    assert "Стул" in out
    assert "--apply" in out
    assert not PriceList.objects.filter(business=biz).exists()

    call_command("import_price_list", str(path), business="Mebel Plus", apply=True)
    assert PriceList.objects.get(business=biz).current_version.items.get().price == 12500

    path.write_text("Код;Товар;Цена\nCH-1;Стул;дорого\n", encoding="utf-8")
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_price_list", str(path), business="Mebel Plus", apply=True)
    assert PriceList.objects.get(business=biz).current_version.number == 1


def test_demo_price_list_imports_once():
    from assistant.demo import ensure_demo_assistant

    biz = factories.business()
    assert ensure_demo_assistant(biz)
    assert not ensure_demo_assistant(biz)
    k = knowledge_for_channel(factories.channel(biz).pk)
    assert len(k.items) == 24
    assert k.default_currency == "KZT"


def test_knowledge_follows_a_renamed_business():
    biz = factories.business("Old name")
    channel = factories.channel(biz)
    apply_price_list(parse_price_file(b"name,price\nChair,100\n", "a.csv"), biz)
    assert knowledge_for_channel(channel.pk).business_name == "Old name"
    biz.name = "New name"
    biz.save()
    assert knowledge_for_channel(channel.pk).business_name == "New name"


@pytest.mark.parametrize("header", ["Aliases", "Keywords", "Синонимы", "Ключевые слова"])
def test_an_aliases_column_gives_items_the_other_names_customers_use(header):
    biz = factories.business()
    chan = factories.channel(biz)
    text = f"Name;Price;{header}\nДиван угловой Бостон;420 000;Boston sofa, corner couch\n"
    preview = parse_price_file(text.encode(), "prices.csv", "KZT")
    assert preview.ok, preview.errors
    assert preview.columns["aliases"] == header
    assert preview.rows[0].aliases == "Boston sofa, corner couch"
    apply_price_list(preview, biz)

    knowledge = knowledge_for_channel(chan.pk)
    assert knowledge.items[0].aliases == ("Boston sofa", "corner couch")
    [(group, qty)] = knowledge.catalogue.order_lines("how much is the corner couch?")
    assert (knowledge.items[group[0].index].name, qty) == ("Диван угловой Бостон", 1)
