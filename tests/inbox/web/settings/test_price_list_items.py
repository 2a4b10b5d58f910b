"""The current price list as a page: searchable in any script, a row's price and aliases
edited in place as a new version, checked like an uploaded row; only the admin's own lists."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import PriceList
from inbox.conversations.models import Membership
from tests import factories

pytestmark = pytest.mark.django_db

FILE = (
    "sku,name,price,currency,aliases,description\n"
    "S-1,Boston sofa,120000,KZT,диван Бостон,three seats\n"
    "C-2,Chair,9000,KZT,,oak\n"
    "L-3,Lamp,4000,KZT,Лампа,\n"
).encode()


def _setup() -> tuple[PriceList, Client]:
    business = factories.business()
    apply_price_list(parse_price_file(FILE, "first.csv"), business)
    admin = factories.manager(business, role=Membership.Role.ADMIN)
    client = Client()
    client.force_login(admin)
    return PriceList.objects.get(business=business), client


def _current(price_list: PriceList) -> dict[str, tuple[Decimal, str]]:
    price_list.refresh_from_db()
    assert price_list.current_version is not None
    return {i.name: (i.price, i.aliases) for i in price_list.current_version.items.all()}


def test_the_current_list_is_a_page_searchable_by_alias_in_any_case() -> None:
    price_list, client = _setup()
    page = client.get(f"/inbox/settings/price-list/{price_list.pk}/items/")
    assert page.status_code == 200
    assert [i.name for i in page.context["page"]] == ["Boston sofa", "Chair", "Lamp"]
    # From the upload page's list of lists, one click.
    assert f"/inbox/settings/price-list/{price_list.pk}/items/" in (
        client.get("/inbox/settings/price-list/").content.decode()
    )

    found = client.get(f"/inbox/settings/price-list/{price_list.pk}/items/", {"q": "ДИВАН"})
    assert [i.name for i in found.context["page"]] == ["Boston sofa"]
    found = client.get(f"/inbox/settings/price-list/{price_list.pk}/items/", {"q": "oak"})
    assert [i.name for i in found.context["page"]] == ["Chair"]


def test_a_price_edit_is_a_new_version_checked_like_an_upload() -> None:
    price_list, client = _setup()
    chair = price_list.current_version.items.get(name="Chair")  # type: ignore[union-attr]

    answer = client.post(
        f"/inbox/settings/price-list/items/{chair.pk}/",
        {"price": "9 500", "aliases": "стул; stool", "q": "chair"},
        follow=True,
    )

    assert answer.redirect_chain[-1][0].endswith(f"/{price_list.pk}/items/?q=chair")
    assert "the list is now version 2" in answer.content.decode()
    assert _current(price_list) == {
        "Boston sofa": (Decimal("120000.00"), "диван Бостон"),
        "Chair": (Decimal("9500.00"), "стул, stool"),
        "Lamp": (Decimal("4000.00"), "Лампа"),
    }
    assert price_list.current_version.items.get(name="Chair").currency == "KZT"  # type: ignore[union-attr]
    assert price_list.versions.count() == 2

    for bad in ("a lot", "-5", ""):
        chair = price_list.current_version.items.get(name="Chair")  # type: ignore[union-attr]
        refused = client.post(
            f"/inbox/settings/price-list/items/{chair.pk}/",
            {"price": bad, "aliases": ""},
            follow=True,
        )
        assert "was not changed" in refused.content.decode()
    assert price_list.versions.count() == 2


def test_an_item_of_an_older_version_is_not_edited() -> None:
    price_list, client = _setup()
    old_chair = price_list.current_version.items.get(name="Chair")  # type: ignore[union-attr]
    apply_price_list(parse_price_file(FILE, "second.csv"), price_list.business)

    refused = client.post(
        f"/inbox/settings/price-list/items/{old_chair.pk}/",
        {"price": "1", "aliases": ""},
        follow=True,
    )

    assert "the list changed since this page was opened" in refused.content.decode()
    assert _current(price_list)["Chair"][0] == Decimal("9000.00")


def test_another_business_list_and_item_are_404_and_a_manager_403() -> None:
    price_list, _ = _setup()
    mine, client = _setup()
    item = price_list.current_version.items.get(name="Chair")  # type: ignore[union-attr]
    assert client.get(f"/inbox/settings/price-list/{price_list.pk}/items/").status_code == 404
    edit = client.post(f"/inbox/settings/price-list/items/{item.pk}/", {"price": "1"})
    assert edit.status_code == 404
    assert _current(price_list)["Chair"][0] == Decimal("9000.00")
    manager = Client()
    manager.force_login(factories.manager(mine.business))
    assert manager.get(f"/inbox/settings/price-list/{mine.pk}/items/").status_code == 403
