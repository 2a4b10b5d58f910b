"""WhatsApp's 24-hour customer-service window in a real browser on the live stack: a customer
message whose provider timestamp is 25 hours old arrives through the webhook; the manager who
opens the chat sees the window closed and the reply box locked with the reason (an internal
note still goes in). A chat whose window runs out while it is open locks without a reload."""

from __future__ import annotations

import time
from typing import Any

import pytest

from inbox.conversations.models import Chat, Message
from tests.browser.support import CUSTOMER, PHONE_NUMBER_ID, csp_violations, logged_in, shot
from tests.emulators.graph_api import GraphApiEmulator, contact, envelope, text_message
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

LATE_CUSTOMER = "77019998877"


def test_a_25_hour_old_chat_has_its_window_closed_and_the_reply_box_locked(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    written = int(time.time()) - 25 * 3600
    delivered = graph.deliver(
        envelope(
            PHONE_NUMBER_ID,
            contacts=[contact(CUSTOMER, name="Aigerim")],
            messages=[text_message(CUSTOMER, "Do you deliver to Almaty?", ts=written)],
        )
    )
    assert delivered == 200
    chat = wait_for(lambda: Chat.objects.filter(customer_key=CUSTOMER).first())

    boris = logged_in(browser, stack, "boris")
    boris.goto(f"{stack}/inbox/chat/{chat.pk}/")
    header = boris.locator(f"#chat-header-{chat.pk}")
    expect(header.locator("[data-window]")).to_have_text("WhatsApp window closed: template only")
    composer = boris.locator(f"#composer-{chat.pk}")
    expect(composer.locator("[data-window-locked]")).to_be_visible()
    expect(composer.locator("[data-window-locked]")).to_contain_text(
        "only an approved template can be sent to this customer now"
    )
    expect(composer.get_by_label("Reply")).to_be_disabled()
    expect(composer.locator("[data-action=send]")).to_be_disabled()
    shot(boris, "window-closed-1366")

    # An internal note still goes in.
    composer.locator("[data-composer-tab=note]").click()
    composer.get_by_label("Internal note").fill("Needs a template: call her instead")
    composer.locator("[data-action=add-note]").click()
    expect(boris.locator(f"#messages-{chat.pk}")).to_contain_text("call her instead")
    assert graph.sent_to(CUSTOMER) == []
    assert not Message.objects.filter(chat=chat, direction=Message.Direction.OUTBOUND).exists()

    # Another customer wrote 23 h 59 min 30 s ago (a webhook held back at the provider): her
    # window runs out while Boris has the chat open, and the reply box locks without a reload.
    graph.deliver(
        envelope(
            PHONE_NUMBER_ID,
            contacts=[contact(LATE_CUSTOMER, name="Dana")],
            messages=[
                text_message(LATE_CUSTOMER, "Is the sofa in stock?", ts=int(time.time()) - 86370)
            ],
        )
    )
    dana = wait_for(
        lambda: Chat.objects.filter(customer_key=LATE_CUSTOMER, customer_messages=1).first()
    )
    boris.goto(f"{stack}/inbox/chat/{dana.pk}/")
    dana_composer = boris.locator(f"#composer-{dana.pk}")
    expect(boris.locator(f"#window-{dana.pk}")).to_have_text("Window closes in 1 min")
    expect(dana_composer.get_by_label("Reply")).to_be_enabled()
    expect(boris.locator(f"#window-{dana.pk}")).to_have_text(
        "WhatsApp window closed: template only", timeout=45_000
    )
    expect(dana_composer.get_by_label("Reply")).to_be_disabled()
    expect(dana_composer.locator("[data-window-locked]")).to_be_visible()
    assert csp_violations == []
