"""A manager's working day on a phone and on a desk: the phone layout (list or chat, a menu),
the chat list by keyboard, desktop notifications per manager, and a reconnect that brings back
what was missed at once. A real browser on the shared live stack.

Screenshots at 390 px (list, chat, menu open) and 1920 px go to test-artifacts/."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model

from inbox.conversations.handoff import hand_off
from inbox.conversations.models import Chat, Membership, Message
from tests import factories
from tests.browser.support import (
    CUSTOMER,
    DESKTOP,
    PASSWORD,
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

NO_SIDEWAYS_SCROLL = "document.documentElement.scrollWidth <= window.innerWidth"
# What sticks out on the right, to name in a failure.
WIDE = """Array.from(document.querySelectorAll('body *'))
  .filter(e => e.getBoundingClientRect().right > window.innerWidth + 0.5)
  .slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"""

# A recording stand-in for the browser's Notification (the test seam on the browser API): what
# the page shows is kept in window.__shown; permission questions are counted and passed on.
NOTIFICATION_SHIM = """
(() => {
  const Real = window.Notification;
  window.__shown = [];
  window.__asked = 0;
  class Recorded {
    constructor(title, options) {
      options = options || {};
      this.title = title; this.body = options.body; this.tag = options.tag;
      this.data = options.data; this.onclick = null;
      window.__shown.push(this);
    }
    close() { this.closed = true; }
    static get permission() { return Real ? Real.permission : "denied"; }
    static requestPermission(callback) {
      window.__asked += 1;
      return Real.requestPermission().then((answer) => { if (callback) callback(answer); return answer; });
    }
  }
  window.Notification = Recorded;
})();
"""
SHOWN = "window.__shown.map(n => [n.data.kind, n.data.chat, n.title, n.body])"


def long_chat(people: dict[str, Any], name: str, text: str) -> Chat:
    chat = factories.chat(people["channel"], customer_name=name, customer_phone="77015550101")
    factories.customer_message(chat, text)
    Chat.objects.filter(pk=chat.pk).update(last_message_at=chat.created_at)
    return chat


def handed_off(chat_id: int, summary: str = "Wants a sofa delivered.") -> None:
    chat = Chat.objects.get(pk=chat_id)
    asked = Message.objects.filter(chat=chat, direction="in").latest("pk")
    outcome = in_thread(
        hand_off, chat.pk, reason="outside_knowledge_base", summary=summary, facts={},
        message_to_customer="A manager will answer you shortly.",
        generated_at_version=chat.version, answered_up_to=asked.pk,
    )  # fmt: skip
    assert outcome.handed_off


def test_phone_layout_menu_and_keyboard_navigation(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    chats = [
        long_chat(people, "Aigerim Nurlanovna Kassymzhanova-Petrovskaya of Almaty", "x" * 300),
        long_chat(people, "Dauren", "Do you have the oak wardrobe with mirrored doors in stock?"),
        long_chat(people, "Saule", "Сколько стоит доставка в Астану?"),
    ]
    handed_off(chats[0].pk)
    anna = logged_in(browser, stack, "anna", viewport=PHONE)  # an admin: the longest menu
    pages = [
        "/inbox/", f"/inbox/chat/{chats[0].pk}/", f"/inbox/chat/{chats[0].pk}/history/",
        "/inbox/settings/notifications/", "/inbox/settings/channels/",
        f"/inbox/settings/channels/{people['channel'].pk}/", "/inbox/settings/price-list/",
        "/inbox/settings/assistant/", "/inbox/settings/bitrix24/", "/inbox/review/",
        "/inbox/settings/channels/new/", "/inbox/settings/channels/new/?kind=waha",
        "/inbox/settings/bitrix24/?mode=app",
    ]  # fmt: skip
    for width in (360, 390, 420):
        anna.set_viewport_size({"width": width, "height": 800})
        for path in pages:
            anna.goto(stack + path)
            assert anna.evaluate(NO_SIDEWAYS_SCROLL), (path, width, anna.evaluate(WIDE))

    # 390 px: the list alone, the navigation behind a menu button.
    anna.set_viewport_size(PHONE)
    anna.goto(f"{stack}/inbox/")
    menu, button = anna.locator("#site-menu"), anna.locator("#menu-button")
    expect(anna.locator("#chat-list-items .chat-row")).to_have_count(3)
    expect(anna.locator("#chat-pane")).to_be_hidden()
    expect(menu.get_by_role("link", name="Channels")).to_be_hidden()
    expect(anna.locator("#live-status")).to_have_text("Live")  # still in the bar
    shot(anna, "mobile-390-inbox-list")
    button.click()
    expect(button).to_have_attribute("aria-expanded", "true")
    expect(menu.get_by_role("link", name="Channels")).to_be_visible()
    expect(menu.get_by_role("link", name="Chats")).to_be_focused()
    shot(anna, "mobile-390-menu-open")
    anna.keyboard.press("Escape")
    expect(menu.get_by_role("link", name="Channels")).to_be_hidden()
    expect(button).to_have_attribute("aria-expanded", "false")
    expect(button).to_be_focused()

    # A chat replaces the list; "All chats" goes back to it.
    anna.locator("#chat-list-items .chat-row", has_text="Aigerim").click()
    anna.wait_for_url(f"{stack}/inbox/chat/{chats[0].pk}/")
    expect(anna.locator(".list-pane")).to_be_hidden()
    expect(anna.locator(f"#handoff-{chats[0].pk} .handoff-card")).to_be_visible()
    expect(anna.locator("[data-composer=reply] textarea")).to_be_visible()
    shot(anna, "mobile-390-chat")
    anna.locator("[data-back-to-list]").click()
    anna.wait_for_url(f"{stack}/inbox/")
    expect(anna.locator("#chat-list-items .chat-row")).to_have_count(3)

    # 1920 px: the admin's whole navigation in the bar, no menu button; the list by keyboard.
    anna.set_viewport_size({"width": 1920, "height": 860})
    anna.goto(f"{stack}/inbox/")
    expect(anna.locator("#live-status")).to_have_text("Live")
    expect(button).to_be_hidden()
    expect(anna.locator(".topnav").get_by_role("link", name="Channels")).to_be_visible()
    rows = anna.locator("#chat-list-items .chat-row")
    ids = [rows.nth(i).get_attribute("id") for i in range(3)]
    anna.keyboard.press("j")
    expect(rows.nth(0)).to_be_focused()
    anna.keyboard.press("j")
    expect(rows.nth(1)).to_be_focused()
    anna.keyboard.press("ArrowDown")
    expect(rows.nth(2)).to_be_focused()
    anna.keyboard.press("k")
    expect(rows.nth(1)).to_be_focused()
    outline = rows.nth(1).evaluate("r => getComputedStyle(r).outlineStyle")
    assert outline == "solid", "the focused row shows no focus ring"
    shot(anna, "desktop-1920-inbox-keyboard")
    # Typing in the search box is typing, not navigation.
    anna.locator("#filter-q").focus()
    anna.keyboard.type("jk")
    expect(anna.locator("#filter-q")).to_be_focused()
    expect(anna.locator("#filter-q")).to_have_value("jk")
    anna.locator("#filter-q").fill("")
    anna.goto(f"{stack}/inbox/")
    anna.keyboard.press("j")
    anna.keyboard.press("j")
    anna.keyboard.press("Enter")
    anna.wait_for_url(f"{stack}/inbox/chat/{ids[1].removeprefix('chat-row-')}/")
    assert csp_violations == []


def notified(browser: Any, base: str, username: str) -> Any:
    """A manager's inbox in a context that may show notifications, with Notification recorded."""
    context = browser.new_context(viewport=DESKTOP)
    context.grant_permissions(["notifications"], origin=base)
    context.add_init_script(NOTIFICATION_SHIM)
    page = context.new_page()
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/inbox/")
    sync_api.expect(page.locator("#live-status")).to_have_attribute("data-state", "live")
    return page


def test_desktop_notifications_go_to_whom_they_concern(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    business = people["business"]
    elm = factories.business("Elm Ltd")
    elm_channel = factories.channel(elm, name="Elm number")
    carl = get_user_model().objects.create_user(username="carl", password=PASSWORD)
    Membership.objects.create(user=carl, business=elm, notify_waiting=True,
                              notify_assigned=True, notify_my_messages=True)  # fmt: skip

    # Boris turns on all three for Oak & Co on his settings page; asking the browser for
    # permission happens only when he clicks.
    context = browser.new_context(viewport=DESKTOP)
    context.add_init_script(NOTIFICATION_SHIM)
    settings_page = context.new_page()
    settings_page.goto(f"{stack}/accounts/login/")
    settings_page.fill("#id_username", "boris")
    settings_page.fill("#id_password", PASSWORD)
    settings_page.click("button[type=submit]")
    settings_page.wait_for_url(f"{stack}/inbox/")
    settings_page.get_by_role("link", name="Notifications").click()
    settings_page.wait_for_url(f"{stack}/inbox/settings/notifications/")
    allow = settings_page.locator("#notify-allow")
    expect(allow).to_be_visible()
    assert settings_page.evaluate("window.__asked") == 0
    allow.click()
    wait_for(lambda: settings_page.evaluate("window.__asked") == 1)
    for label in ("New waiting chat", "Assigned to me", "Message in my chat"):
        settings_page.get_by_label(label).check()
    settings_page.get_by_role("button", name="Save").click()
    expect(settings_page.locator(".flash")).to_contain_text("saved")
    expect(settings_page.get_by_label("Assigned to me")).to_be_checked()
    boris_membership = Membership.objects.get(user=people["boris"], business=business)
    assert (boris_membership.notify_waiting, boris_membership.notify_assigned,
            boris_membership.notify_my_messages) == (True, True, True)  # fmt: skip
    context.grant_permissions(["notifications"], origin=stack)
    settings_page.reload()
    expect(settings_page.locator("#notify-permission")).to_have_attribute("data-state", "granted")
    expect(allow).to_be_hidden()
    context.close()
    # Anna wants only messages in her own chats.
    Membership.objects.filter(user=people["anna"]).update(notify_my_messages=True)

    boris = notified(browser, stack, "boris")
    anna = notified(browser, stack, "anna")
    carl_page = notified(browser, stack, "carl")

    graph.deliver(envelope(PHONE_NUMBER_ID, contacts=[contact(CUSTOMER, name="Aigerim")],
                           messages=[text_message(CUSTOMER, "Is the oak table in stock?")]))  # fmt: skip
    chat = wait_for(lambda: Chat.objects.filter(customer_key=CUSTOMER).first())
    expect(boris.locator(f"#chat-row-{chat.pk}")).to_be_visible()

    # It waits for a human: Boris is told.
    handed_off(chat.pk)
    wait_for(lambda: boris.evaluate("window.__shown.length") == 1)
    kind, chat_id, title, body = boris.evaluate(SHOWN)[0]
    assert (kind, chat_id) == ("waiting", chat.pk)
    assert "Aigerim" in title
    assert body == "Outside the price list"

    # Anna gives it to Boris: he is told it is his.
    anna.goto(f"{stack}/inbox/chat/{chat.pk}/")
    anna.select_option(".assign-form select", label="Boris Manager")
    wait_for(lambda: boris.evaluate("window.__shown.length") == 2)
    assert boris.evaluate(SHOWN)[1][:3] == ["assigned", chat.pk, "Assigned to you: Aigerim"]
    anna.goto(f"{stack}/inbox/")  # (on the chat itself, the page shows what happens there)
    expect(anna.locator("#live-status")).to_have_attribute("data-state", "live")

    # The customer writes in his chat: he is told what they wrote.
    graph.deliver(envelope(PHONE_NUMBER_ID, contacts=[contact(CUSTOMER, name="Aigerim")],
                           messages=[text_message(CUSTOMER, "And <b>chairs</b> to match?")]))  # fmt: skip
    wait_for(lambda: boris.evaluate("window.__shown.length") == 3)
    assert boris.evaluate(SHOWN)[2] == [
        "message",
        chat.pk,
        "Aigerim",
        "And <b>chairs</b> to match?",
    ]

    # A click on it brings him to the chat.
    boris.evaluate("window.__shown[2].onclick()")
    boris.wait_for_url(f"{stack}/inbox/chat/{chat.pk}/")
    expect(boris.locator(f"#messages-{chat.pk}")).to_contain_text("And <b>chairs</b> to match?")
    expect(boris.locator("#live-status")).to_have_attribute("data-state", "live")

    # Boris hands the chat to Anna; the next customer message is hers alone.
    boris.select_option(".assign-form select", label="Anna Manager")
    expect(boris.locator(f"#chat-header-{chat.pk}")).to_contain_text("Assigned to Anna")
    boris.goto(f"{stack}/inbox/")
    expect(boris.locator("#live-status")).to_have_attribute("data-state", "live")
    graph.deliver(envelope(PHONE_NUMBER_ID, contacts=[contact(CUSTOMER, name="Aigerim")],
                           messages=[text_message(CUSTOMER, "Thank you!")]))  # fmt: skip
    wait_for(lambda: anna.evaluate("window.__shown.length") >= 1)
    expect(boris.locator(f"#chat-row-{chat.pk}")).to_contain_text("Thank you!")
    assert [n[:2] for n in anna.evaluate(SHOWN)] == [["message", chat.pk]]
    assert boris.evaluate(SHOWN) == []  # no longer his chat

    # Carl, of another business, hears only of his own business's chats.
    elm_chat = factories.chat(elm_channel, customer_name="Elm customer")
    factories.customer_message(elm_chat, "Hello Elm")
    handed_off(elm_chat.pk)
    wait_for(lambda: carl_page.evaluate("window.__shown.length") >= 1)
    assert [n[:2] for n in carl_page.evaluate(SHOWN)] == [["waiting", elm_chat.pk]]
    assert csp_violations == []


def test_reconnect_brings_the_missed_handoff_within_a_second(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    chat = long_chat(people, "Marat", "Can I pay in instalments?")
    boris = logged_in(browser, stack, "boris")
    boris.goto(f"{stack}/inbox/chat/{chat.pk}/")
    status = boris.locator("#live-status")
    expect(status).to_have_attribute("data-state", "live")

    # A drop: the first retry comes within a quarter of a second, so the page is live again
    # well within a second.
    boris.evaluate("window.__droppedAt = performance.now(); inboxLive.drop()")
    wait_for(lambda: boris.evaluate("inboxLive.openedAt > window.__droppedAt"))
    assert boris.evaluate("inboxLive.openedAt - window.__droppedAt") < 1000

    # The socket stays down while the chat is handed off; the card is not there yet.
    boris.evaluate("inboxLive.drop({hold: true})")
    expect(status).to_have_attribute("data-state", "offline")
    handed_off(chat.pk, summary="Wants to pay in three instalments.")
    card = boris.locator(f"#handoff-{chat.pk} .handoff-card")
    expect(card).to_have_count(0)
    boris.evaluate(
        """(selector) => {
      window.__cardAt = null;
      new MutationObserver(() => {
        if (!window.__cardAt && document.querySelector(selector))
          window.__cardAt = performance.now();
      }).observe(document.body, {childList: true, subtree: true});
    }""",
        f"#handoff-{chat.pk} .handoff-card",
    )
    # The network comes back: the page reconnects at once and fetches what it missed.
    boris.evaluate("window.__backAt = performance.now(); inboxLive.release();"
                   "window.dispatchEvent(new Event('online'))")  # fmt: skip
    expect(card).to_contain_text("Wants to pay in three instalments.")
    expect(status).to_have_attribute("data-state", "live")
    opened, card_at, back = boris.evaluate("[inboxLive.openedAt, window.__cardAt, window.__backAt]")
    assert opened - back < 1000, "the page did not reconnect when it came back online"
    assert card_at - opened < 1000, f"the card came {card_at - opened:.0f} ms after the socket"

    # A tab that comes back into view reconnects at once too.
    boris.evaluate("inboxLive.drop({hold: true})")
    expect(status).to_have_attribute("data-state", "offline")
    boris.evaluate("window.__backAt = performance.now(); inboxLive.release();"
                   "document.dispatchEvent(new Event('visibilitychange'))")  # fmt: skip
    expect(status).to_have_attribute("data-state", "live")
    assert boris.evaluate("inboxLive.openedAt - window.__backAt") < 1000
    assert csp_violations == []
