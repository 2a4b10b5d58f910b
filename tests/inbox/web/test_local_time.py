"""Times a manager sees are the business's local times; the business admin sets the zone and
the language, which is the assistant's default (inbox/web/local_time.py,
inbox/web/settings/business_settings.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from assistant.turn import build_input
from inbox.conversations import turns
from inbox.conversations.models import Business, Handoff, Membership, Message
from inbox.web import fragments, local_time
from tests import factories

pytestmark = pytest.mark.django_db
NOON_UTC = datetime(2026, 11, 2, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _fresh_zone_cache() -> None:
    local_time._zones.clear()


def login(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


def seeded(zone: str):  # type: ignore[no-untyped-def]
    business = factories.business(timezone=zone)
    channel = factories.channel(business)
    chat = factories.chat(channel, customer_name="Ivan")
    message = factories.customer_message(chat, "when do you open?")
    Message.objects.filter(pk=message.pk).update(created_at=NOON_UTC)
    handoff = Handoff.objects.create(chat=chat, reason="outside_knowledge_base")
    Handoff.objects.filter(pk=handoff.pk).update(created_at=NOON_UTC)
    admin = factories.manager(business, role=Membership.Role.ADMIN)
    return business, chat, message, admin


def test_pages_show_the_business_local_time() -> None:
    _, _, _, admin = seeded("Asia/Almaty")  # UTC+5
    html = login(admin).get("/inbox/review/").content.decode()
    assert "2026-11-02 17:00" in html
    assert "2026-11-02 12:00" not in html


def test_each_user_sees_their_own_business_zone() -> None:
    _, _, _, almaty_admin = seeded("Asia/Almaty")
    _, _, _, utc_admin = seeded("UTC")
    assert "2026-11-02 17:00" in login(almaty_admin).get("/inbox/review/").content.decode()
    assert "2026-11-02 12:00" in login(utc_admin).get("/inbox/review/").content.decode()


def test_a_pushed_message_fragment_is_in_the_business_local_time() -> None:
    _, _, message, _ = seeded("Europe/Moscow")  # UTC+3
    item = Message.objects.select_related("chat", "channel").get(pk=message.pk)
    assert ">15:00</time>" in fragments.message(item)["html"]


def test_a_pushed_chat_row_shows_the_last_message_time_in_the_business_zone() -> None:
    """The row's clock and its machine-readable time (which the page sorts and ages by) are
    both the business's: 12:00 UTC is 17:00 in Almaty, written with its +05:00 offset."""
    _, chat, message, _ = seeded("Asia/Almaty")
    chat.last_message_at = NOON_UTC
    chat.last_message = Message.objects.get(pk=message.pk)

    html = fragments.row(chat)["html"]
    message_html = fragments.message(
        Message.objects.select_related("chat", "channel").get(pk=message.pk)
    )["html"]

    assert '<time class="row-time" datetime="2026-11-02T17:00:00+05:00">17:00</time>' in html
    assert '<time datetime="2026-11-02T17:00:00+05:00">17:00</time>' in message_html


def test_the_admin_sets_the_time_zone_and_language() -> None:
    business, _, _, admin = seeded("UTC")
    client = login(admin)
    response = client.post(
        f"/inbox/settings/business/?business={business.pk}",
        {"timezone": "Europe/Moscow", "language": "ru", "resolve_returns_to": "bot"},
    )
    assert response.status_code == 302
    business.refresh_from_db()
    assert (business.timezone, business.language) == ("Europe/Moscow", "ru")
    bad = client.post(
        f"/inbox/settings/business/?business={business.pk}",
        {"timezone": "Mars/Olympus", "language": "xx"},
    )
    assert bad.status_code == 200
    assert "IANA time zone" in bad.content.decode()
    business.refresh_from_db()
    assert business.timezone == "Europe/Moscow"


def test_a_business_in_kazakhstan_sets_the_assistant_to_kazakh() -> None:
    business, _, _, admin = seeded("UTC")
    response = login(admin).post(
        f"/inbox/settings/business/?business={business.pk}",
        {"timezone": "Asia/Almaty", "language": "kk", "resolve_returns_to": "bot"},
    )
    assert response.status_code == 302
    business.refresh_from_db()
    assert business.language == "kk"


def test_only_the_business_admin_can_change_it() -> None:
    business, _, _, _ = seeded("UTC")
    manager = factories.manager(business)
    assert login(manager).get("/inbox/settings/business/").status_code == 403
    _, _, _, other_admin = seeded("Asia/Almaty")
    client = login(other_admin)
    url = f"/inbox/settings/business/?business={business.pk}"
    assert client.get(url).status_code == 404
    assert client.post(url, {"timezone": "Asia/Tokyo", "language": "en"}).status_code == 404
    assert Business.objects.get(pk=business.pk).timezone == "UTC"
    assert business.name not in client.get("/inbox/settings/business/").content.decode()


def test_the_assistant_speaks_the_business_language_where_the_channel_names_none() -> None:
    business, chat, _, _ = seeded("UTC")
    Business.objects.filter(pk=business.pk).update(language="ru")
    pending = turns.collect(chat.pk)
    assert pending is not None
    assert build_input(pending).language == "ru"
    chat.channel.language = "en"
    chat.channel.save(update_fields=["language"])
    pending = turns.collect(chat.pk)
    assert pending is not None
    assert build_input(pending).language == "en"
