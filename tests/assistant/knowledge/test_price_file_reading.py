"""How a price file's bytes are read: never a column silently lost to a wrong encoding guess,
never a zip bomb unpacked."""

from __future__ import annotations

from assistant.knowledge.price_import import parse_price_file

HEADER = "sku;name;price;currency\n"


def test_a_utf8_file_with_the_byte_order_mark_keeps_its_first_column() -> None:
    data = b"\xef\xbb\xbf" + (HEADER + "CH-1;Office chair;45 000;KZT\n").encode()

    preview = parse_price_file(data, "prices.csv")

    assert preview.errors == ()
    assert [(row.sku, row.name) for row in preview.rows] == [("CH-1", "Office chair")]


def test_a_utf8_marked_file_with_a_latin1_byte_is_a_clear_error_not_a_lost_column() -> None:
    """It fell back to cp1251: the mark became "п»ї" on the "sku" header and the SKU column
    was dropped without a word."""
    data = b"\xef\xbb\xbf" + HEADER.encode() + b"CH-1;Caf\xe9 chair;45 000;KZT\n"

    preview = parse_price_file(data, "prices.csv")

    assert preview.rows == ()
    (error,) = preview.errors
    assert "line 2" in str(error)
    assert "UTF-8" in str(error)


def test_a_windows_1251_file_without_the_mark_is_still_read() -> None:
    data = ("артикул;наименование;цена\nST-1;Стол дубовый;120 000\n").encode("cp1251")

    preview = parse_price_file(data, "мебель.csv")

    assert preview.errors == ()
    assert [(row.sku, row.name) for row in preview.rows] == [("ST-1", "Стол дубовый")]


def test_an_xlsx_that_unpacks_to_gigabytes_is_refused_before_it_is_unpacked() -> None:
    """A zip bomb: openpyxl reads the shared strings whole, even in read-only mode."""
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/sharedStrings.xml", b"<si><t>a</t></si>" * (16 * 1024 * 1024))
    data = buffer.getvalue()
    assert len(data) < 2 * 1024 * 1024

    preview = parse_price_file(data, "bomb.xlsx")

    assert preview.rows == ()
    (error,) = preview.errors
    assert "unpacks to" in str(error)
