"""The business admin turns the follow-up ladder on and words its steps on the business
settings page (inbox/web/settings/business_settings.py)."""

from __future__ import annotations

import pytest
from django.test import Client

from inbox.conversations.models import Business, Membership
from tests import factories

pytestmark = pytest.mark.django_db
FIELDS = {"timezone": "UTC", "language": "ru", "resolve_returns_to": "bot"}


def _admin_client(business: Business) -> Client:
    client = Client()
    client.force_login(factories.manager(business, role=Membership.Role.ADMIN))
    return client


def test_the_admin_sets_the_steps_and_their_words() -> None:
    business = factories.business()
    client = _admin_client(business)
    url = f"/inbox/settings/business/?business={business.pk}"
    page = client.get(url).content.decode()
    assert "Остались вопросы по заказу? Я на связи." in page  # the built-in nudge shown

    response = client.post(
        url,
        {**FIELDS, "followup_steps": " 2 ,24 ",
         "followup_texts": "Вы ещё думаете?\n\n  Стол ждёт вас.  "},
    )  # fmt: skip

    assert response.status_code == 302
    business.refresh_from_db()
    assert business.followup_steps == "2, 24"
    assert business.followup_texts == "Вы ещё думаете?\nСтол ждёт вас."


def test_steps_out_of_order_or_range_are_refused_in_words() -> None:
    business = factories.business()
    client = _admin_client(business)
    url = f"/inbox/settings/business/?business={business.pk}"
    for bad, words in (("24, 2", "ascending"), ("500", "between"), ("soon", "Hours, e.g.")):
        response = client.post(url, {**FIELDS, "followup_steps": bad})
        assert response.status_code == 200
        assert words in response.content.decode()
    business.refresh_from_db()
    assert business.followup_steps == ""  # still off


def test_off_by_default() -> None:
    assert factories.business().followup_steps == ""
