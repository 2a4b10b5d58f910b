"""A manager's working day in two real browsers on the live stack: resolving a chat takes it out
of the Open list and the customer's next message brings it back; each manager's unread badge is
their own (none rises on the chat a manager has open); assigning a chat tells the assignee at
once; a snooze ends with a notice (the beat task run by the stack's real Celery worker); the
Mine / Unassigned / All views show the right rows. Screenshots at 1366 and 390 px."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from inbox.conversations import status
from inbox.conversations.models import Chat, ReadMarker
from inbox.upkeep.tasks import wake_snoozed_chats
from tests.browser.support import (
    CUSTOMER,
    PHONE,
    PHONE_NUMBER_ID,
    csp_violations,
    in_thread,
    logged_in,
    shot,
)
from tests.emulators.graph_api import GraphApiEmulator, contact, envelope, text_message
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

OTHER_CUSTOMER = "77017654321"


def customer_writes(graph: GraphApiEmulator, number: str, name: str, text: str) -> None:
    delivered = graph.deliver(
        envelope(
            PHONE_NUMBER_ID,
            contacts=[contact(number, name=name)],
            messages=[text_message(number, text)],
        )
    )
    assert delivered == 200


def test_resolve_reopen_unread_views_and_assignment_notice(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    anna = logged_in(browser, stack, "anna")
    boris = logged_in(browser, stack, "boris")
    for page in (anna, boris):
        expect(page.locator("#live-status")).to_have_attribute("data-state", "live")

    customer_writes(graph, CUSTOMER, "Aigerim", "Do you have oak tables?")
    customer_writes(graph, OTHER_CUSTOMER, "Dana", "Is the sofa in stock?")
    aigerim = wait_for(lambda: Chat.objects.filter(customer_key=CUSTOMER).first())
    dana = wait_for(lambda: Chat.objects.filter(customer_key=OTHER_CUSTOMER).first())
    anna_row = anna.locator(f"#chat-row-{aigerim.pk}")
    expect(anna_row.locator("[data-unread]")).to_have_text("1")

    # Boris opens Aigerim's chat; her next message arrives while he has it open.
    boris.locator(f"#chat-row-{aigerim.pk}").click()
    boris.wait_for_url(f"{stack}/inbox/chat/{aigerim.pk}/")
    expect(boris.locator("#live-status")).to_have_attribute("data-state", "live")
    customer_writes(graph, CUSTOMER, "Aigerim", "Two of them, for Almaty")
    expect(boris.locator(f"#messages-{aigerim.pk}")).to_contain_text("Two of them")
    expect(anna_row.locator("[data-unread]")).to_have_text("2")
    expect(boris.locator(f"#chat-row-{aigerim.pk} [data-unread]")).to_be_hidden()
    wait_for(
        lambda: ReadMarker.objects.filter(user=people["boris"], chat=aigerim, read_count=2).first()
    )
    expect(boris.locator(f"#chat-row-{dana.pk} [data-unread]")).to_have_text("1")

    # Anna opens the chat and gives it to Boris: a notice reaches his page at once.
    anna_row.click()
    anna.wait_for_url(f"{stack}/inbox/chat/{aigerim.pk}/")
    expect(anna.locator("#live-status")).to_have_attribute("data-state", "live")
    expect(anna_row.locator("[data-unread]")).to_be_hidden()
    anna.locator(f"#chat-header-{aigerim.pk} select[name=assignee]").select_option(
        label="Boris Manager"
    )
    notice = boris.locator("#toasts .toast", has_text="Assigned to you")
    expect(notice).to_contain_text("Aigerim")
    expect(anna.locator("#toasts .toast", has_text="Assigned to you")).to_have_count(0)
    shot(boris, "status-assigned-notice-1366")

    # Boris's views: Mine, Unassigned, All.
    for view, shown, hidden in [
        ("mine", [aigerim], [dana]),
        ("unassigned", [dana], [aigerim]),
        ("all", [aigerim, dana], []),
    ]:
        boris.locator(f"label[data-view-tab={view}]").click()
        for chat in shown:
            expect(boris.locator(f"#chat-list-items #chat-row-{chat.pk}")).to_be_visible()
        for chat in hidden:
            expect(boris.locator(f"#chat-list-items #chat-row-{chat.pk}")).to_have_count(0)

    # Anna resolves: it leaves her Open list (and Boris's) live, and nobody holds it any more.
    anna.locator(f"#chat-header-{aigerim.pk} [data-action=resolve]").click()
    expect(anna.locator(f"#chat-header-{aigerim.pk} [data-action=reopen]")).to_be_visible()
    expect(anna.locator(f"#chat-header-{aigerim.pk} .assignee")).to_have_count(0)
    expect(anna.locator(f"#chat-list-items #chat-row-{aigerim.pk}")).to_have_count(0)
    expect(boris.locator(f"#chat-list-items #chat-row-{aigerim.pk}")).to_have_count(0)
    shot(anna, "status-resolved-1366")

    # The customer writes again: the chat is open again, back in both lists.
    customer_writes(graph, CUSTOMER, "Aigerim", "One more question")
    expect(anna.locator(f"#chat-list-items #chat-row-{aigerim.pk}")).to_be_visible()
    expect(anna.locator(f"#chat-header-{aigerim.pk} [data-action=resolve]")).to_be_visible()
    expect(boris.locator(f"#chat-list-items #chat-row-{aigerim.pk}")).to_be_visible()
    assert Chat.objects.get(pk=aigerim.pk).status == "open"

    # Dana's chat is snoozed; when its time has come the beat task (on the stack's real
    # worker) opens it again and every dashboard says so.
    in_thread(status.snooze, dana.pk, until=timezone.now() + timedelta(minutes=5), manager=None)
    expect(anna.locator(f"#chat-list-items #chat-row-{dana.pk}")).to_have_count(0)
    Chat.objects.filter(pk=dana.pk).update(snoozed_until=timezone.now() - timedelta(seconds=1))
    wake_snoozed_chats.delay()
    expect(anna.locator("#toasts .toast", has_text="Snooze ended")).to_contain_text("Dana")
    expect(anna.locator(f"#chat-list-items #chat-row-{dana.pk}")).to_be_visible()

    # On a phone: the views and the badges fit.
    phone = logged_in(browser, stack, "boris", viewport=PHONE)
    # The resolve gave Aigerim's chat up: it is no longer Boris's, it is unassigned.
    phone.locator("label[data-view-tab=mine]").click()
    expect(phone.locator(f"#chat-list-items #chat-row-{aigerim.pk}")).to_have_count(0)
    phone.locator("label[data-view-tab=unassigned]").click()
    expect(phone.locator(f"#chat-list-items #chat-row-{aigerim.pk}")).to_be_visible()
    expect(phone.locator(f"#chat-list-items #chat-row-{dana.pk}")).to_be_visible()
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"]
    shot(phone, "status-views-390")
    anna.set_viewport_size(PHONE)
    shot(anna, "status-chat-390")

    assert csp_violations == []
