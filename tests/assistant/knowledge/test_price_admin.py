"""The price-list admin's tools: money as people write it, the diff against the current list,
'skip the bad rows', and rollback as a new version copying an earlier one."""

from __future__ import annotations

from decimal import Decimal

import pytest

from assistant.knowledge.money import display_money
from assistant.knowledge.price_diff import diff_against_current
from assistant.knowledge.price_import import (
    ImportRejected,
    apply_price_list,
    parse_price_file,
    restore_version,
)
from assistant.models import PriceList
from tests import factories

pytestmark = pytest.mark.django_db

NBSP = "\u00a0"


def test_money_is_written_the_way_each_currency_is() -> None:
    assert display_money(Decimal("32000.00"), "KZT") == f"32{NBSP}000{NBSP}₸"
    assert display_money(Decimal("1200.50"), "RUB") == f"1{NBSP}200,50{NBSP}₽"
    assert display_money(Decimal("1200.50"), "USD") == "$1,200.50"
    assert display_money(Decimal("15"), "") == "15"
    assert display_money(Decimal("990"), "CHF") == f"990{NBSP}CHF"


def _apply(csv: str, business: object) -> object:
    return apply_price_list(parse_price_file(csv.encode(), "p.csv"), business)  # type: ignore[arg-type]


def test_the_diff_names_added_removed_and_changed_prices_with_old_and_new() -> None:
    business = factories.business()
    _apply("sku,name,price,currency\nA1,Oak table,32000,KZT\nB2,Chair,9000,KZT\n", business)
    new = parse_price_file(
        b"sku,name,price,currency\nA1,Oak table,35000,KZT\nC3,Lamp,4000,KZT\n", "p.csv"
    )

    diff = diff_against_current(business.pk, None, new.rows)

    assert [r.name for r in diff.added] == ["Lamp"]
    assert [r.name for r in diff.removed] == ["Chair"]
    (change,) = diff.changed
    assert (change.name, change.old_price, change.new_price) == (
        "Oak table",
        Decimal("32000.00"),
        Decimal("35000.00"),
    )


def test_bad_rows_block_the_file_unless_the_admin_skips_them() -> None:
    business = factories.business()
    preview = parse_price_file(
        b"name,price\nOak table,32000\nBroken,abc\nChair,9000\n", "p.csv", "KZT"
    )
    assert preview.skippable
    assert not preview.ok

    with pytest.raises(ImportRejected):
        apply_price_list(preview, business)
    assert not PriceList.objects.filter(business=business).exists()

    version = apply_price_list(preview, business, skip_bad_rows=True)
    assert (version.item_count, version.skipped_rows) == (2, 1)


def test_a_file_error_cannot_be_skipped() -> None:
    preview = parse_price_file(b"", "p.csv")
    assert not preview.skippable
    with pytest.raises(ImportRejected):
        apply_price_list(preview, factories.business(), skip_bad_rows=True)


def test_rollback_is_a_new_version_copying_the_earlier_one() -> None:
    business = factories.business()
    first = _apply("name,price,currency\nOak table,32000,KZT\n", business)
    _apply("name,price,currency\nOak table,99000,KZT\n", business)

    restored = restore_version(first)  # type: ignore[arg-type]

    price_list = PriceList.objects.get(business=business)
    assert price_list.current_version_id == restored.pk
    assert (restored.number, restored.restored_from_id) == (3, first.pk)  # type: ignore[attr-defined]
    assert [i.price for i in restored.items.all()] == [Decimal("32000.00")]
    assert price_list.versions.count() == 3  # the history stays
