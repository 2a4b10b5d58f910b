"""The Django admin: price-list upload → preview → apply, and the knowledge-gap review."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from assistant.models import PriceList
from inbox.conversations.models import Handoff
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    user = get_user_model().objects.create_superuser("root", "", "pw-for-tests-only")
    client.force_login(user)
    return client


def test_upload_preview_writes_nothing_then_apply_creates_the_version(admin_client):
    biz = factories.business()
    url = reverse("admin:assistant_pricelist_import")
    upload = SimpleUploadedFile("p.csv", "Артикул,Наименование,Цена\nX1,Стул,12 500 тг\n".encode())
    page = admin_client.post(url, {"business": biz.pk, "file": upload})
    assert page.status_code == 200
    assert "Стул" in page.content.decode()
    assert not PriceList.objects.filter(business=biz).exists()

    token = page.context["token"]
    done = admin_client.post(url, {"token": token})
    assert done.status_code == 302
    item = PriceList.objects.get(business=biz).current_version.items.get()
    assert (item.sku, item.price, item.currency) == ("X1", 12500, "KZT")


def test_broken_upload_shows_row_errors_and_offers_no_apply(admin_client):
    biz = factories.business()
    upload = SimpleUploadedFile("p.csv", b"name,price\nChair,abc\n")
    page = admin_client.post(
        reverse("admin:assistant_pricelist_import"), {"business": biz.pk, "file": upload}
    )
    body = page.content.decode()
    assert "line 2: the price &#x27;abc&#x27; is not a number" in body
    assert "Apply as the new version" not in body


def test_knowledge_gap_review_lists_only_outside_knowledge_base_handoffs(admin_client):
    chat = factories.chat()
    Handoff.objects.create(chat=chat, reason="outside_knowledge_base", summary="asks about sofas")
    Handoff.objects.create(chat=chat, reason="complaint", summary="broken leg")
    page = admin_client.get(reverse("admin:assistant_knowledgegap_changelist") + "?week=0")
    body = page.content.decode()
    assert "asks about sofas" in body
    assert "broken leg" not in body


def test_aliases_are_editable_in_the_version_page_and_matching_uses_them_at_once(admin_client):
    from assistant.knowledge.effective import knowledge_for_channel
    from assistant.knowledge.price_import import apply_price_list, parse_price_file

    biz = factories.business()
    chan = factories.channel(biz)
    version = apply_price_list(parse_price_file(b"name,price\nVarta 75Ah,52000\n", "p.csv"), biz)
    item = version.items.get()
    assert knowledge_for_channel(chan.pk).catalogue.order_lines("аккумулятор 75") == []

    url = reverse("admin:assistant_pricelistversion_change", args=[version.pk])
    page = admin_client.get(url)
    assert 'name="items-0-aliases"' in page.content.decode()
    form = {
        "items-TOTAL_FORMS": "1",
        "items-INITIAL_FORMS": "1",
        "items-MIN_NUM_FORMS": "0",
        "items-MAX_NUM_FORMS": "1000",
        "items-0-id": str(item.pk),
        "items-0-version": str(version.pk),
        "items-0-aliases": "аккумулятор, battery",
    }
    assert admin_client.post(url, form).status_code == 302
    item.refresh_from_db()
    assert item.aliases == "аккумулятор, battery"
    [(group, _qty)] = knowledge_for_channel(chan.pk).catalogue.order_lines("аккумулятор 75")
    assert group[0].index == 0
