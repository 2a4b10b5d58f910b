"""The Django admin: price lists (their upload is the settings page's), aliases, and the
knowledge-gap review."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from inbox.conversations.models import Handoff
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    user = get_user_model().objects.create_superuser("root", "", "pw-for-tests-only")
    client.force_login(user)
    return client


def test_the_admin_import_url_leads_to_the_one_upload_page(admin_client):
    # The settings page has the upload, its preview and its row errors
    # (tests/inbox/web/settings/test_price_list_pages.py); a worker reads the file there.
    page = admin_client.get(reverse("admin:assistant_pricelist_import"))
    assert page.status_code == 302
    assert page["Location"] == reverse("settings_price_list")
    changelist = admin_client.get(reverse("admin:assistant_pricelist_changelist"))
    assert reverse("admin:assistant_pricelist_import") in changelist.content.decode()


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
