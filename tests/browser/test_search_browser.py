"""A manager's working day in a real browser on the live stack: search a message and land on
it highlighted, insert a canned reply with "/", label a chat and filter by the label, read
the contact panel. Screenshots at 1366 and 390 px go to test-artifacts/."""

from __future__ import annotations

from typing import Any

import pytest

from inbox.conversations import status
from inbox.conversations.models import CannedReply, Channel, Label, Message
from tests import factories
from tests.browser.support import (
    CUSTOMER,
    DESKTOP,
    PHONE,
    csp_violations,
    logged_in,
    shot,
)
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
expect = sync_api.expect


def a_working_day(people: dict[str, Any]) -> dict[str, Any]:
    """Aliya's chat with a long history (the sofa question is far back), her earlier chat on
    a second number, another customer, a label and a canned reply of the business."""
    business = people["business"]
    chat = factories.chat(people["channel"], customer_key=CUSTOMER, customer_name="Aliya")
    for n in range(5):
        factories.customer_message(chat, f"hello number {n}")
    old = factories.customer_message(chat, "Do you have the corner sofa in <b>grey</b>?")
    for n in range(70):
        factories.customer_message(chat, f"later talk {n}")
    second = factories.channel(business, kind=Channel.Kind.SANDBOX, name="Second number")
    earlier = factories.chat(second, customer_key=CUSTOMER, customer_name="Aliya")
    factories.customer_message(earlier, "last year's order")
    other = factories.chat(people["channel"], customer_name="Bob")
    factories.customer_message(other, "just browsing")
    done = factories.chat(people["channel"], customer_name="Dana")
    credit = factories.customer_message(done, "Оформили рассрочку, спасибо!")
    status.resolve(done.pk, manager=None)
    Label.objects.create(business=business, name="VIP", colour="amber")
    CannedReply.objects.create(
        business=business,
        title="Greeting",
        shortcut="hi",
        text="Hello {customer_name}, this is {manager_name} <script>x</script>.",
    )
    return {"chat": chat, "old": old, "earlier": earlier, "other": other, "credit": credit}


def test_search_canned_reply_label_and_contact_panel(
    people: dict[str, Any], stack: str, browser: Any
) -> None:
    day = a_working_day(people)
    chat, old = day["chat"], day["old"]
    page = logged_in(browser, stack, "boris", viewport=DESKTOP)
    wait_for(lambda: page.evaluate("window.inboxLive.connected"), timeout=20)

    # Another form of a Russian word finds a resolved chat's message, its status shown.
    page.fill("#filter-q", "рассрочка")
    credit = page.locator(f"#hit-{day['credit'].pk}")
    expect(credit.locator("mark")).to_have_text("рассрочку")
    expect(credit.locator("[data-status-badge]")).to_have_text("Resolved")
    expect(page.locator(f"#chat-row-{day['credit'].chat_id}")).to_have_count(0)  # a hit, not a row
    shot(page, "search-word-forms-1366")

    # Search over message text: the hit is listed with the words marked, and opens the chat
    # scrolled to the message, highlighted, though it is older than the first page.
    page.fill("#filter-q", "corner sof")
    hit = page.locator(f"#hit-{old.pk}")
    expect(hit).to_be_visible()
    expect(hit.locator("mark").first).to_have_text("corner")
    shot(page, "search-hits-1366")
    hit.click()
    page.wait_for_url(f"**/inbox/chat/{chat.pk}/?message={old.pk}*")
    message = page.locator(f"#msg-{old.pk}")
    expect(message).to_have_class(_has("msg-hit"))
    expect(message).to_be_in_viewport()
    expect(message).to_contain_text("<b>grey</b>")  # the customer's markup stays text

    # The contact panel lists the earlier chat on the second number.
    panel = page.locator("[data-contact-panel]")
    expect(panel.locator(f"[data-earlier-chat='{day['earlier'].pk}']")).to_contain_text(
        "Second number"
    )
    expect(panel.locator("[data-contact-name]")).to_have_text("Aliya")
    shot(page, "search-hit-contact-panel-1366")

    # "/" offers the canned replies; Enter inserts one, filled for this chat, as text.
    area = page.locator(f"#composer-{chat.pk} textarea[data-canned-url]")
    area.click()
    area.press_sequentially("Hi! /gre")
    option = page.locator(f"#canned-{chat.pk} [role=option]").first
    expect(option).to_contain_text("Greeting")
    shot(page, "canned-popup-1366")
    area.press("Enter")
    expect(area).to_have_value("Hi! Hello Aliya, this is Boris Manager <script>x</script>.")
    expect(page.locator(f"#canned-{chat.pk}")).to_be_hidden()
    area.press_sequentially(" /")
    expect(option).to_be_visible()
    area.press("Escape")
    expect(page.locator(f"#canned-{chat.pk}")).to_be_hidden()

    # A label added in the header shows on the chat's row (pushed live) and filters the list.
    page.locator(f"#chat-labels-{chat.pk} select[name=label]").select_option(label="VIP")
    expect(page.locator(f"#chat-labels-{chat.pk} [data-label-chip]")).to_have_text("VIP×")
    expect(page.locator(f"#chat-row-{chat.pk} [data-label-chip]")).to_have_text("VIP")
    page.fill("#filter-q", "")
    expect(page.locator(f"#chat-row-{day['other'].pk}")).to_be_visible()
    page.locator("#filters select[name=label]").select_option(label="VIP")
    expect(page.locator(f"#chat-row-{day['other'].pk}")).to_have_count(0)
    expect(page.locator(f"#chat-row-{chat.pk}")).to_be_visible()
    shot(page, "labels-filter-1366")
    # Taken off again: the chip goes, and the row leaves the filtered list, live.
    page.locator(f"#chat-labels-{chat.pk} .chip-remove").click()
    expect(page.locator(f"#chat-labels-{chat.pk} [data-label-chip]")).to_have_count(0)
    expect(page.locator(f"#chat-row-{chat.pk}")).to_have_count(0)
    assert Message.objects.filter(chat=chat, direction="out").count() == 0
    assert csp_violations == []

    # On a phone the contact panel starts folded above the conversation and opens on a tap.
    phone = logged_in(browser, stack, "boris", viewport=PHONE)
    phone.goto(f"{stack}/inbox/chat/{chat.pk}/?message={old.pk}")
    folded = phone.locator("[data-contact-panel]")
    expect(folded).not_to_have_attribute("open", "")
    expect(phone.locator(f"#msg-{old.pk}")).to_be_in_viewport()
    shot(phone, "search-hit-390")
    folded.locator("summary").click()
    expect(folded.locator(f"[data-earlier-chat='{day['earlier'].pk}']")).to_be_visible()
    shot(phone, "contact-panel-390")
    assert csp_violations == []


def _has(name: str) -> Any:
    import re

    return re.compile(rf"(^|\s){name}(\s|$)")
