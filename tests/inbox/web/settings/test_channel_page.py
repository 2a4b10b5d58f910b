"""A business admin's channel page: what a refused number tells them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from inbox.conversations.models import Channel
from tests import factories
from tests.inbox.tenants import tenant

pytestmark = pytest.mark.django_db

TAKEN = "106540352200001"


def _form(phone_number_id: str) -> dict[str, str]:
    return {
        "name": "Main number", "is_active": "on", "language": "en",
        "phone_number_id": phone_number_id, "display_phone_number": "",
        "access_token": "", "debounce_seconds": "4", "idle_release_hours": "4",
        "late_answer_cutoff_minutes": "30", "voice_confidence_threshold": "0.6",
        "silent_alert_minutes": "120",
    }  # fmt: skip


def _refusal(admin: Any, channel: Channel, phone_number_id: str) -> str:
    client = Client()
    client.force_login(admin)
    response = client.post(f"/inbox/settings/channels/{channel.pk}/", _form(phone_number_id))
    assert response.status_code == 200  # refused: the form again, with its errors
    page = response.content.decode()
    return " ".join(re.findall(r'<ul class="errorlist[^"]*">(.*?)</ul>', page, re.S))


def test_a_number_another_business_uses_is_refused_like_any_taken_number() -> None:
    """The uniqueness error told a business admin that some other tenant had the number."""
    a, b = tenant("A"), tenant("B")
    factories.channel(a.business, name="Kaspi line", kind="cloud_api", phone_number_id=TAKEN)
    b_channel = factories.channel(b.business, name="New line", kind="cloud_api")
    before = b_channel.phone_number_id
    own_taken = "106540352200002"
    factories.channel(b.business, name="Old line", kind="cloud_api", phone_number_id=own_taken)

    foreign = _refusal(b.admin, b_channel, TAKEN)
    own = _refusal(b.admin, b_channel, own_taken)

    assert foreign
    assert foreign == own  # nothing tells "used by another business" from any other refusal
    for leak in ("Business A", "Kaspi", "exist", "already", "another", "constraint", "unique"):
        assert leak.lower() not in foreign.lower()
    b_channel.refresh_from_db()
    assert b_channel.phone_number_id == before
    assert Channel.objects.filter(phone_number_id=TAKEN).count() == 1
