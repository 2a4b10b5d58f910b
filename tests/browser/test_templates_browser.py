"""Past WhatsApp's 24-hour window in a real browser on the live stack: the manager who opens a
chat whose customer wrote 25 hours ago is led from the locked reply box to the template picker,
fills a variable (the customer's name is already in), sees what the customer will read and
sends it; then keeps a free-text answer, which goes out by itself when the customer writes back
through the webhook."""

from __future__ import annotations

import time
from typing import Any

import pytest

from inbox.conversations.models import Chat, Message
from integrations.whatsapp import template_sync
from tests.browser.support import (
    CUSTOMER,
    GRAPH_TOKEN,
    PHONE_NUMBER_ID,
    csp_violations,
    logged_in,
    shot,
)
from tests.emulators.graph_api import GraphApiEmulator, contact, envelope, text_message
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

WABA = "102290129349876"


def test_a_template_past_the_window_and_the_kept_answer_on_the_customers_return(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    graph.register_number(PHONE_NUMBER_ID, GRAPH_TOKEN, waba_id=WABA)
    if graph.templates.find(WABA, "order_ready", "en_US") is None:
        graph.templates.add(WABA, "order_ready", body="Hello {{1}}, your order {{2}} is ready.")
        graph.templates.add(WABA, "answer_ready", parameter_format="NAMED",
                            body="Hi {{customer_name}}, we have an answer: reply to see it.")  # fmt: skip
    channel = people["channel"]
    channel.waba_id = WABA
    channel.reengage_template_name, channel.reengage_template_language = "answer_ready", "en_US"
    channel.save()
    template_sync.sync(channel)
    written = int(time.time()) - 25 * 3600
    assert graph.deliver(
        envelope(
            PHONE_NUMBER_ID,
            contacts=[contact(CUSTOMER, name="Aigerim")],
            messages=[text_message(CUSTOMER, "Is my order ready?", ts=written)],
        )
    ) == 200  # fmt: skip
    chat = wait_for(lambda: Chat.objects.filter(customer_key=CUSTOMER).first())

    boris = logged_in(browser, stack, "boris")
    boris.goto(f"{stack}/inbox/chat/{chat.pk}/")
    composer = boris.locator(f"#composer-{chat.pk}")
    expect(composer.get_by_label("Reply")).to_be_disabled()
    composer.locator("[data-action=choose-template]").click()
    form = composer.locator("[data-template-form]")
    expect(form.locator("[data-template-select]")).to_contain_text("order_ready · en_US · Utility")
    # The picker was just swapped in: choose once htmx has settled it (its change handler bound),
    # as a person's hand would; on a loaded runner the choice came first and was lost.
    boris.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')"
    )
    # Choosing re-renders the picker; typing before that swap lands would be wiped by it.
    with boris.expect_response(lambda r: f"/inbox/chat/{chat.pk}/templates/" in r.url):
        form.locator("[data-template-select]").select_option(label="order_ready · en_US · Utility")
    boris.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling, .htmx-added')"
    )
    expect(form.locator("[data-variable='1']")).to_have_value("Aigerim")
    form.locator("[data-variable='2']").fill("#42")
    expect(form.locator("[data-template-preview]")).to_have_text(
        "Hello Aigerim, your order #42 is ready."
    )
    shot(boris, "template-picker-1366")
    form.locator("[data-action=send-template]").click()

    messages = boris.locator(f"#messages-{chat.pk}")
    expect(messages).to_contain_text("Hello Aigerim, your order #42 is ready.")
    expect(composer).to_contain_text("Template sent.")
    (sent,) = [s for s in graph.templates.sends if s.name == "order_ready"]
    assert sent.body["template"]["components"][0]["parameters"][1] == {
        "type": "text", "text": "#42",
    }  # fmt: skip

    # A free-text answer is kept; the channel's template invites the customer back.
    composer.locator("[data-pending-input]").fill("Your order ships on Friday.")
    composer.locator("[data-action=keep-pending]").click()
    expect(composer.locator("[data-pending-reply]")).to_contain_text("Your order ships on Friday.")
    expect(composer.locator("[data-pending-reply]")).to_contain_text(
        "Will be sent when the customer replies"
    )
    wait_for(lambda: any(s.name == "answer_ready" for s in graph.templates.sends))
    assert not any(m.text == "Your order ships on Friday." for m in graph.sent_to(CUSTOMER))

    # The customer writes back: the window reopens and the kept answer goes out by itself.
    assert graph.deliver(
        envelope(PHONE_NUMBER_ID, contacts=[contact(CUSTOMER, name="Aigerim")],
                 messages=[text_message(CUSTOMER, "Yes?", ts=int(time.time()))])
    ) == 200  # fmt: skip
    wait_for(
        lambda: [m for m in graph.sent_to(CUSTOMER) if m.text == "Your order ships on Friday."],
        timeout=30,
        message="the kept answer sent on the customer's return",
    )
    expect(messages).to_contain_text("Your order ships on Friday.")
    expect(composer.locator("[data-pending-reply]")).to_have_count(0)  # pushed: no reload
    answer = Message.objects.get(chat=chat, text="Your order ships on Friday.")
    assert (answer.sent_by_id, answer.status) == (people["boris"].pk, Message.Status.SENT)
    assert csp_violations == []
