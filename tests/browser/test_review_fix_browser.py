"""The admin fixes a flag from the weekly review in a real browser: opens Review, clicks "Add
alias" on the flagged reply, finds the customer's words prefilled, chooses the item, saves,
and the flag shows as fixed (the price list has a new version with the alias)."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import PriceList
from assistant.turn import take_turn
from inbox.conversations.flags import flag_message
from inbox.conversations.models import Chat, MessageFlag
from tests import factories
from tests.browser.support import CUSTOMER, csp_violations, in_thread, logged_in, shot
from tests.emulators.graph_api import GraphApiEmulator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

PRICES = "SKU,Name,Price,Currency\nCH-101,Office chair Lux,45000,KZT\n"


def test_an_admin_adds_an_alias_from_a_flag_and_the_flag_shows_as_fixed(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), people["business"])
    chat = factories.chat(people["channel"], customer_phone=CUSTOMER, customer_name="Dana")
    factories.customer_message(chat, "boss throne")
    Chat.objects.filter(pk=chat.pk).update(version=1)
    reply = in_thread(take_turn, chat.pk).reply_message
    flag = in_thread(
        flag_message, people["boris"], chat.pk, reply.pk, MessageFlag.Category.WRONG_ITEM, ""
    )

    anna = logged_in(browser, stack, "anna")
    anna.goto(f"{stack}/inbox/review/")
    entry = anna.locator(f'.review-flag-group [data-entry="flag:{flag.pk}"]')
    expect(entry).to_contain_text("boss throne")
    entry.get_by_role("link", name="Add alias").click()

    form = anna.locator('[data-fix-form="alias"]')
    expect(form.get_by_label("The customer's words")).to_have_value("boss throne")
    form.get_by_label("Mean this item").select_option(label="CH-101 · Office chair Lux")
    form.get_by_role("button", name="Save alias").click()

    expect(anna).to_have_url(f"{stack}/inbox/review/")
    expect(anna.locator(".messages, body")).to_contain_text("the price list is now version 2")
    fixed = anna.locator(f'[data-resolved="flag:{flag.pk}"]')
    expect(fixed).to_contain_text("fixed by anna")
    expect(fixed).to_contain_text("alias “boss throne” → Office chair Lux (v2)")
    expect(anna.locator(f'[data-entry="flag:{flag.pk}"]')).to_have_count(0)
    current = in_thread(lambda: PriceList.objects.get(business=people["business"]).current_version)
    assert "boss throne" in in_thread(lambda: current.items.get(sku="CH-101").aliases)
    shot(anna, "review-fixed")
    assert not csp_violations, csp_violations
