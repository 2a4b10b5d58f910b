"""An owner connects a number without the command line: Channels → Add a channel → the kind →
its fields → the new channel's page, which says where Meta must send the events."""

from __future__ import annotations

from typing import Any

import pytest

from inbox.conversations.models import Channel
from tests.browser.support import csp_violations, logged_in, shot

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(120)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


def test_an_admin_adds_a_cloud_api_number_from_the_web(
    stack: str, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    page = logged_in(browser, stack, "anna")
    page.goto(f"{stack}/inbox/settings/channels/")
    page.click('[data-action="add-channel"]')
    page.click('[data-kind="cloud_api"]')
    page.fill("#id_name", "Almaty shop")
    page.fill("#id_phone_number_id", "106540352277777")
    page.fill("#id_access_token", "EAAG-browser-token")
    page.click('button[data-action="add-channel"]')

    expect(page.locator("h1")).to_have_text("Almaty shop")
    expect(page.locator('[data-setting="webhook-url"]')).to_be_visible()
    assert page.locator('[data-setting="webhook-url"]').inner_text().endswith("/webhooks/whatsapp/")
    assert "EAAG-browser-token" not in page.content()
    channel = Channel.objects.get(phone_number_id="106540352277777")
    assert (channel.business_id, channel.name) == (people["business"].pk, "Almaty shop")
    shot(page, "channel-added")
    page.context.close()
    assert csp_violations == []
