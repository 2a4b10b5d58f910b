"""The price-list settings page: a readable preview with its diff, 'skip the bad rows', and
rollback after a confirmation showing its diff; each only for the admin's own businesses."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from assistant.knowledge import price_upload
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import PriceList
from tests import factories

pytestmark = pytest.mark.django_db

NBSP = "\u00a0"


def _admin(business: Any) -> tuple[Any, Client]:
    user = factories.manager(business, role="admin")
    client = Client()
    client.force_login(user)
    return user, client


def _staged_page(client: Client, user: Any, business: Any, csv: bytes) -> str:
    staged = price_upload.stage(csv, "new.csv", "KZT", business_id=business.pk, channel_id=None,
                                user=user)  # fmt: skip
    return client.get(f"/inbox/settings/price-list/?upload={staged.token}").content.decode()


def test_the_preview_is_readable_and_shows_what_changes() -> None:
    business = factories.business()
    user, client = _admin(business)
    apply_price_list(parse_price_file(b"name,price\nOak table,32000\nChair,9000\n", "a.csv",
                                      "KZT"), business)  # fmt: skip

    page = _staged_page(client, user, business,
                        b"name,price,in stock\nOak table,35000,yes\nLamp,4000,no\n")  # fmt: skip

    assert f"35{NBSP}000{NBSP}₸" in page
    assert "In stock" in page
    assert "Out of stock" in page
    assert "in_stock" not in page.split('id="price-diff"')[0].split("<tbody>")[1]
    assert 'data-diff="added">1<' in page
    assert 'data-diff="removed">1<' in page
    assert f"32{NBSP}000{NBSP}₸" in page  # the old price beside the new one
    assert "Chair" in page


def test_the_admin_may_apply_without_the_bad_rows() -> None:
    business = factories.business()
    user, client = _admin(business)
    page = _staged_page(client, user, business, b"name,price\nOak table,32000\nBroken,abc\n")
    assert 'data-action="apply-skipping-bad-rows"' in page
    token = page.split('name="token" value="')[1].split('"')[0]

    client.post("/inbox/settings/price-list/", {"token": token, "skip_bad_rows": "1"})

    version = PriceList.objects.get(business=business).current_version
    assert version is not None
    assert (version.item_count, version.skipped_rows) == (1, 1)


def test_rollback_restores_an_earlier_version_of_ones_own_list_only() -> None:
    business, other = factories.business(), factories.business()
    _, client = _admin(business)
    first = apply_price_list(parse_price_file(b"name,price\nOak,1000\n", "a.csv"), business)
    apply_price_list(parse_price_file(b"name,price\nOak,2000\n", "b.csv"), business)
    foreign = apply_price_list(parse_price_file(b"name,price\nPine,5\n", "c.csv"), other)

    assert (
        client.post(f"/inbox/settings/price-list/versions/{foreign.pk}/restore/").status_code == 404
    )
    assert (
        client.get(f"/inbox/settings/price-list/versions/{foreign.pk}/restore/").status_code == 404
    )
    # The link from the history asks first, showing what the rollback changes; nothing moves.
    confirm = client.get(f"/inbox/settings/price-list/versions/{first.pk}/restore/")
    assert confirm.status_code == 200
    assert "Roll back to version 1?" in confirm.content.decode()
    assert confirm.context["diff"].changed[0].new_price == Decimal("1000")
    assert PriceList.objects.get(business=business).current_version.number == 2  # type: ignore[union-attr]

    answer = client.post(f"/inbox/settings/price-list/versions/{first.pk}/restore/")

    assert answer.status_code == 302
    current = PriceList.objects.get(business=business).current_version
    assert current is not None
    assert current.number == 3
    assert current.restored_from_id == first.pk
    assert PriceList.objects.get(business=other).current_version_id == foreign.pk
    manager = Client()
    manager.force_login(factories.manager(business))
    assert (
        manager.post(f"/inbox/settings/price-list/versions/{first.pk}/restore/").status_code == 403
    )


def test_row_errors_are_listed_and_only_skipping_them_applies() -> None:
    business = factories.business()
    user, client = _admin(business)

    page = _staged_page(client, user, business, b"name,price\nChair,abc\nOak,1000\n")

    assert "line 2: the price &#x27;abc&#x27; is not a number" in page
    assert 'data-action="apply-price-list"' not in page
    assert 'data-action="apply-skipping-bad-rows"' in page
    assert not PriceList.objects.filter(business=business).exists()


def test_a_file_over_the_limit_is_refused_before_any_worker_reads_it() -> None:
    from assistant.knowledge import price_import

    business = factories.business()
    _, client = _admin(business)
    big = SimpleUploadedFile(
        "p.csv", b"sku,name,price\n" + b"A,chair,1\n" * (price_import.MAX_FILE_BYTES // 10 + 1)
    )

    page = client.post("/inbox/settings/price-list/", {"target": f"b{business.pk}", "file": big})

    assert page.status_code == 200  # the form again, no redirect to a waiting upload
    assert "The file is too large." in page.content.decode()
    assert not PriceList.objects.exists()
