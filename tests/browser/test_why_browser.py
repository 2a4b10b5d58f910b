"""A manager asks why the assistant said what it said, in a real browser: opens "Why?" on the
bot's reply, reads the item and the amount it computed, flags it as a wrong amount with a note,
and the admin finds the flag on the Review page."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.turn import take_turn
from inbox.conversations.models import Chat, MessageFlag
from tests import factories
from tests.browser.support import CUSTOMER, csp_violations, in_thread, logged_in, shot
from tests.emulators.graph_api import GraphApiEmulator

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

PRICES = "SKU,Name,Price,Currency\nCH-101,Office chair Lux,45000,KZT\n"


def test_a_manager_asks_why_flags_a_wrong_amount_and_the_admin_reviews_it(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), people["business"])
    chat = factories.chat(people["channel"], customer_phone=CUSTOMER, customer_name="Dana")
    factories.customer_message(chat, "How much for 4 Office chair Lux?")
    Chat.objects.filter(pk=chat.pk).update(version=1)
    turn = in_thread(take_turn, chat.pk)
    reply = turn.reply_message

    boris = logged_in(browser, stack, "boris")
    boris.goto(f"{stack}/inbox/chat/{chat.pk}/")
    message = boris.locator(f"#msg-{reply.pk}")
    message.get_by_role("button", name="Why?").click()
    panel = message.locator(".why-panel")
    expect(panel.locator("[data-why-item]")).to_have_text("Office chair Lux (CH-101) × 4")
    expect(panel.locator("[data-why-line]")).to_contain_text("4 × 45 000 KZT = 180 000 KZT")
    expect(panel.locator("[data-why-proof]").last).to_contain_text("180 000 KZT: 4 × 45 000 KZT")
    expect(panel).to_contain_text("Catalogue assistant")

    panel.get_by_label("Flag as wrong").select_option("wrong_amount")
    panel.get_by_label("Note").fill("We sell 4 chairs at 170 000")
    panel.get_by_role("button", name="Flag").click()
    expect(message.locator("[data-why-flag]")).to_contain_text(
        "Wrong amount · We sell 4 chairs at 170 000"
    )
    assert MessageFlag.objects.filter(message=reply, flagged_by=people["boris"]).exists()
    shot(boris, "why-panel")

    anna = logged_in(browser, stack, "anna")
    anna.goto(f"{stack}/inbox/review/")
    group = anna.locator('.review-flag-group[data-category="wrong_amount"]')
    expect(group.get_by_role("heading")).to_contain_text("Wrong amount")
    expect(group).to_contain_text("We sell 4 chairs at 170 000")
    expect(group).to_contain_text("180 000 KZT")
    group.get_by_role("link", name="Dana").click()
    expect(anna).to_have_url(f"{stack}/inbox/chat/{chat.pk}/#msg-{reply.pk}")
    assert not csp_violations, csp_violations
