"""A business admin adds a manager limited to one channel from the Team page, hands over the
one-time link, and the new manager sets a password, logs in and sees only that channel's chats.
The link does not work a second time."""

from __future__ import annotations

from typing import Any

import pytest
from django.utils import timezone

from inbox.conversations.models import Channel
from tests import factories
from tests.browser.support import DESKTOP, PHONE, csp_violations, logged_in, shot, watched

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(180)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

NEW_PASSWORD = "Quiet-Lake-42"


def test_admin_adds_a_channel_manager_who_sets_a_password_once_and_sees_only_that_channel(
    stack: str, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    second = factories.channel(people["business"], kind=Channel.Kind.SANDBOX, name="Second number")
    for channel, name in [(people["channel"], "Dana Main"), (second, "Erlan Second")]:
        chat = factories.chat(channel, customer_name=name, last_message_at=timezone.now())
        factories.customer_message(chat, f"hello from {name}")

    anna = logged_in(browser, stack, "anna")
    anna.locator("#menu-button").click()  # an admin's menu does not fit a 1366 px bar
    anna.click("nav.topnav >> text=Team")
    expect(anna.locator("h1")).to_have_text("Team")
    form = anna.locator("#invite-form")
    form.locator("input[name=username]").fill("carla")
    form.locator("input[name=email]").fill("carla@example.com")
    form.locator("select[name=role]").select_option("manager")
    form.get_by_label("Second number").check()
    form.get_by_label("Show me the one-time link to hand over myself").check()
    form.get_by_role("button", name="Add member").click()
    link = anna.locator("#one-time-link").inner_text()
    assert "/accounts/reset/" in link
    expect(anna.locator("tr[data-member=carla]")).to_contain_text("has not logged in yet")
    shot(anna, "team-desktop")
    anna.set_viewport_size(PHONE)
    shot(anna, "team-phone")

    carla = watched(browser.new_context(viewport=DESKTOP).new_page())
    carla.goto(link)
    carla.locator("input[name=new_password1]").fill(NEW_PASSWORD)
    carla.locator("input[name=new_password2]").fill(NEW_PASSWORD)
    carla.get_by_role("button", name="Set password").click()
    expect(carla.locator("h1")).to_have_text("Password set")
    carla.get_by_role("link", name="Log in").click()
    carla.fill("#id_username", "carla")
    carla.fill("#id_password", NEW_PASSWORD)
    carla.click("button[type=submit]")
    carla.wait_for_url(f"{stack}/inbox/")
    expect(carla.get_by_text("Erlan Second").first).to_be_visible()
    expect(carla.get_by_text("Dana Main")).to_have_count(0)
    shot(carla, "team-new-manager-inbox")

    again = watched(browser.new_context(viewport=DESKTOP).new_page())
    again.goto(link)
    expect(again.locator("#link-used")).to_be_visible()
    expect(again.locator("input[name=new_password1]")).to_have_count(0)
    assert csp_violations == []
