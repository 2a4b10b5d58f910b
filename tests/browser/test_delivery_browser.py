"""A manager's message that WhatsApp does not deliver: the reason appears under it in plain
words, without a reload, on a real stack (daphne, the ingest consumer, a Celery worker; WhatsApp
played by the Graph API emulator, which accepts the send and then posts a failed status)."""

from __future__ import annotations

from typing import Any

import pytest

from inbox.conversations.models import Chat, Message
from tests import factories
from tests.browser.support import CUSTOMER, csp_violations, logged_in, shot
from tests.emulators.graph_api import GraphApiEmulator
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


def test_a_message_to_a_number_not_on_whatsapp_says_so_under_it_live(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    chat = factories.chat(
        people["channel"], customer_key=CUSTOMER, customer_phone=CUSTOMER, customer_name="Aigerim"
    )
    factories.customer_message(chat, "Is the oak table in stock?")
    graph.fail_async(CUSTOMER, 131026)
    anna = logged_in(browser, stack, "anna")
    anna.goto(f"{stack}/inbox/chat/{chat.pk}/")
    expect(anna.locator("#live-status")).to_have_attribute("data-state", "live")

    anna.fill("[data-composer=reply] textarea", "Yes, <b>two</b> left.")
    anna.click("[data-action=send]")

    wait_for(lambda: graph.sent_to(CUSTOMER), message="the send")
    reply = anna.locator(f"#messages-{chat.pk} .msg.author-manager")
    expect(reply).to_contain_text("Yes, <b>two</b> left.")
    # The failed status arrives by webhook after the send: the page changes by itself.
    explanation = reply.locator("[data-explanation]")
    expect(explanation).to_contain_text("This number is not on WhatsApp or cannot receive messages")
    expect(reply.locator("[data-status]")).to_have_text("Failed")
    expect(reply.locator("[data-resend-refused]")).to_contain_text("sending again will fail")
    expect(reply.locator("[data-action=resend]")).to_have_count(0)
    expect(anna.locator(f"#chat-header-{chat.pk} [data-undeliverable]")).to_be_visible()
    expect(anna.locator("#toasts .toast", has_text="was not delivered")).to_contain_text("Aigerim")
    assert Message.objects.get(chat=chat, author="manager").error_code == "131026"
    assert Chat.objects.get(pk=chat.pk).undeliverable_at is not None
    shot(anna, "message-undeliverable")
    assert csp_violations == []
