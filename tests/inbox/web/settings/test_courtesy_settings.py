"""A business admin turns a Cloud API number's read receipts and typing indicator off on the
channel page (a linked-device or sandbox channel has no such switches), and sets the
business's own opt-out words on the business page."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from inbox.conversations import opt_outs
from inbox.conversations.models import Business, Channel
from tests import factories
from tests.inbox.tenants import tenant

pytestmark = pytest.mark.django_db

FORM = {
    "name": "Main number", "is_active": "on", "language": "en",
    "phone_number_id": "106540352200077", "display_phone_number": "", "access_token": "",
    "debounce_seconds": "4", "idle_release_hours": "4", "late_answer_cutoff_minutes": "30",
    "voice_confidence_threshold": "0.6", "silent_alert_minutes": "120",
}  # fmt: skip


def _admin_client(admin: Any) -> Client:
    client = Client()
    client.force_login(admin)
    return client


def test_a_cloud_number_shows_both_switches_on_and_saves_them_off() -> None:
    side = tenant("A")
    channel = factories.channel(side.business, kind=Channel.Kind.CLOUD_API)
    client = _admin_client(side.admin)
    url = f"/inbox/settings/channels/{channel.pk}/"

    page = client.get(url).content.decode()
    assert 'name="read_receipts"' in page
    assert 'name="typing_indicator"' in page

    response = client.post(url, {**FORM, "read_receipts": "on"})  # typing left unticked

    assert response.status_code == 302
    channel.refresh_from_db()
    assert (channel.read_receipts, channel.typing_indicator) == (True, False)


def test_a_sandbox_channel_has_no_switches_and_keeps_its_values() -> None:
    side = tenant("B")
    client = _admin_client(side.admin)
    url = f"/inbox/settings/channels/{side.channel.pk}/"

    assert 'name="read_receipts"' not in client.get(url).content.decode()
    sandbox_form = {k: v for k, v in FORM.items() if k not in ("phone_number_id", "access_token",
                                                               "display_phone_number")}  # fmt: skip
    assert client.post(url, sandbox_form).status_code == 302
    side.channel.refresh_from_db()
    assert side.channel.read_receipts
    assert side.channel.typing_indicator


def test_the_business_sets_its_own_opt_out_words() -> None:
    side = tenant("C")
    client = _admin_client(side.admin)
    url = f"/inbox/settings/business/?business={side.business.pk}"
    assert "отписаться" in client.get(url).content.decode()  # the built-in list is shown

    response = client.post(
        url,
        {
            "timezone": "UTC",
            "language": "en",
            "resolve_returns_to": "bot",
            "opt_out_keywords": "  Basta  \n\nхватит  уже\n",
        },
    )

    assert response.status_code == 302
    business = Business.objects.get(pk=side.business.pk)
    assert business.opt_out_keywords == "Basta\nхватит уже"
    assert opt_outs.keyword_language(business, "basta!") == ""
    assert opt_outs.keyword_language(business, "STOP") is None
