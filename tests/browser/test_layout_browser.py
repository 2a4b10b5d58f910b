"""The pages hold from a phone to a wide screen: no page scrolls sideways at 390, 1024, 1280 or
1920 px, the navigation folds behind a menu button whenever it does not fit (an admin's long menu
at 1280 px, not only on phones), Log out and the composer's Send stay in view, a phone keeps most
of its height for the messages, and a chat whose last messages are photos opens at the newest.
A real browser on the shared live stack.

Screenshots of each width go to test-artifacts/."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.files.base import ContentFile

from inbox.conversations.models import Chat, Message
from tests import factories
from tests.browser.support import PHONE, csp_violations, logged_in, shot
from tests.browser.test_attachments_browser import png
from tests.browser.test_mobile_browser import NO_SIDEWAYS_SCROLL, WIDE, handed_off, long_chat
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

WIDTHS = (390, 1024, 1280, 1920)
# Wholly inside the window: a control the manager can see and reach without scrolling sideways.
IN_VIEW = """el => { const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0 && r.left >= -0.5 && r.right <= innerWidth + 0.5
    && r.top >= -0.5 && r.bottom <= innerHeight + 0.5; }"""


# Resolves after two frames: resize observers and scroll events have run.
TWO_FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


def in_view(locator: Any) -> bool:
    return bool(locator.evaluate(IN_VIEW))


def reach_log_out(page: Any, context: str) -> None:
    """Log out and the business settings link are in view: in the bar, or behind the menu
    button when the bar does not hold them (then the other links are hidden)."""
    expect = sync_api.expect
    button = page.locator("#menu-button")
    log_out = page.get_by_role("button", name="Log out")
    zone = page.get_by_role("link", name="Time zone and language")
    if button.is_visible():
        assert in_view(button), context
        expect(page.locator(".topnav")).to_be_hidden()
        button.click()
        expect(button).to_have_attribute("aria-expanded", "true")
        assert in_view(log_out), context
        zone.scroll_into_view_if_needed()
        assert in_view(zone), context
        assert page.evaluate(NO_SIDEWAYS_SCROLL), (context, page.evaluate(WIDE))
        if context.startswith("inbox "):
            shot(page, "layout-menu-" + context.split()[-2])
        page.keyboard.press("Escape")
        expect(button).to_have_attribute("aria-expanded", "false")
    else:
        assert in_view(log_out), context
        assert in_view(zone), context
        assert in_view(page.get_by_role("link", name="Reports")), context


def test_admin_pages_hold_from_a_phone_to_a_wide_screen(
    stack: str, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    chat = long_chat(people, "Aigerim Nurlanovna Kassymzhanova-Petrovskaya of Almaty", "x" * 300)
    handed_off(chat.pk)
    anna = logged_in(browser, stack, "anna")  # an admin: the longest menu
    pages = {
        "inbox": "/inbox/",
        "chat": f"/inbox/chat/{chat.pk}/",
        "reports": "/inbox/reports/",
        "channels": "/inbox/settings/channels/",
        "price-list": "/inbox/settings/price-list/",
        "review": "/inbox/review/",
        "settings": "/inbox/settings/business/",
        "team": "/inbox/settings/team/",
    }
    for width in WIDTHS:
        anna.set_viewport_size({"width": width, "height": 860 if width > 390 else 844})
        for name, path in pages.items():
            anna.goto(stack + path)
            if name in ("inbox", "chat"):  # the bar's live status settles first
                expect(anna.locator("#live-status")).to_have_attribute("data-state", "live")
            context = f"{name} at {width} px"
            assert anna.evaluate(NO_SIDEWAYS_SCROLL), (context, anna.evaluate(WIDE))
            reach_log_out(anna, context)
            if name == "chat":
                send = anna.locator("[data-composer=reply] [data-action=send]")
                expect(send).to_be_visible()
                assert in_view(send), context
            if name in ("inbox", "chat", "settings"):
                shot(anna, f"layout-{width}-{name}")
        if width == 1920:  # the whole menu fits: no button
            expect(anna.locator("#menu-button")).to_be_hidden()
    # At 1280 px the admin's menu does not fit in the bar: the button, not a cut-off Log out.
    anna.set_viewport_size({"width": 1280, "height": 860})
    anna.goto(f"{stack}/inbox/")
    expect(anna.locator("#menu-button")).to_be_visible()
    anna.locator("#menu-button").click()
    anna.get_by_role("link", name="Time zone and language").click()
    anna.wait_for_url(f"{stack}/inbox/settings/business/")
    expect(anna.locator("h1")).to_contain_text("Time zone")

    # A manager's short menu fits at 1024 px: the links stay in the bar.
    boris = logged_in(browser, stack, "boris", viewport={"width": 1024, "height": 860})
    expect(boris.locator("#menu-button")).to_be_hidden()
    assert in_view(boris.locator(".topnav").get_by_role("link", name="Notifications"))
    assert in_view(boris.get_by_role("button", name="Log out"))
    assert boris.evaluate(NO_SIDEWAYS_SCROLL), boris.evaluate(WIDE)
    assert csp_violations == []


def test_a_phone_keeps_most_of_the_screen_for_the_messages(
    stack: str, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    chat = long_chat(people, "Aigerim Nurlanovna Kassymzhanova-Petrovskaya of Almaty", "Hello")
    for n in range(12):
        factories.customer_message(chat, f"Question {n}: do you deliver the oak wardrobe?")
    anna = logged_in(browser, stack, "anna", viewport=PHONE)
    anna.goto(f"{stack}/inbox/chat/{chat.pk}/")
    expect(anna.locator("#live-status")).to_have_attribute("data-state", "live")

    # The handoff arrives live, folded to one line that still says why and what.
    handed_off(chat.pk, summary="Wants the oak wardrobe with mirrored doors delivered to Astana "
                                "on Saturday and asks whether the old one can be taken away.")  # fmt: skip
    card = anna.locator(f"#handoff-{chat.pk} .handoff-card")
    expect(card).to_be_visible()
    expect(card).not_to_have_attribute("open", "")
    line = card.locator(".handoff-line")
    expect(line).to_be_visible()
    expect(line).to_contain_text("Wants the oak wardrobe")
    expect(card.locator(".handoff-reason")).to_be_visible()
    messages = anna.locator(f"#conversation-{chat.pk}")
    height = messages.evaluate("el => el.getBoundingClientRect().height")
    assert height >= 0.6 * PHONE["height"], f"the messages have {height:.0f} of 844 px"
    assert in_view(anna.locator("[data-composer=reply] [data-action=send]"))
    assert in_view(anna.locator("[data-back-to-list]"))
    assert in_view(anna.locator("[data-action=release]"))
    assert in_view(anna.locator(f"#chat-header-{chat.pk} h1"))
    assert anna.evaluate(NO_SIDEWAYS_SCROLL), anna.evaluate(WIDE)
    last = Message.objects.filter(chat=chat).latest("pk")
    expect(anna.locator(f"#msg-{last.pk}")).to_be_in_viewport()
    shot(anna, "layout-390-chat-folded")

    # A tap opens it with everything.
    card.locator("summary").click()
    expect(card.locator(".handoff-summary")).to_be_visible()
    expect(line).to_be_hidden()
    shot(anna, "layout-390-chat-card-open")

    # Opened again later, the page starts with it folded.
    anna.reload()
    expect(card.locator(".handoff-line")).to_be_visible()
    expect(card).not_to_have_attribute("open", "")
    assert csp_violations == []


def photo_chat(people: dict[str, Any]) -> tuple[Chat, list[Message]]:
    """A chat of text, then four tall photos as its newest messages, kept like received media."""
    chat = long_chat(people, "Dauren", "Do you have this wardrobe?")
    for n in range(10):
        factories.customer_message(chat, f"Message {n} about the wardrobe and its doors")
    photos = []
    for n in range(4):
        message = factories.customer_message(chat, f"Photo {n}", kind="image",
                                             media_mime="image/png")  # fmt: skip
        message.media_file.save(f"layout-{message.pk}.png", ContentFile(png(200, 150)))
        photos.append(message)
    return chat, photos


@pytest.mark.parametrize("viewport", [PHONE, {"width": 1280, "height": 860}], ids=["390", "1280"])
def test_a_chat_ending_in_photos_opens_at_the_newest(
    stack: str, people: dict[str, Any], browser: Any, viewport: dict[str, int]
) -> None:
    chat, photos = photo_chat(people)
    try:
        anna = logged_in(browser, stack, "anna", viewport=viewport)
        anna.goto(f"{stack}/inbox/chat/{chat.pk}/")
        last = anna.locator(f"#msg-{photos[-1].pk}")
        image = last.locator("img")
        wait_for(lambda: image.evaluate("img => img.complete && img.naturalWidth > 0"),
                 message="the newest photo loaded")  # fmt: skip
        assert image.evaluate("img => img.naturalHeight") == 150  # served through the media path
        box = anna.locator(f"#conversation-{chat.pk}")
        wait_for(lambda: box.evaluate("b => b.scrollHeight - b.scrollTop - b.clientHeight < 8"),
                 timeout=5, message="the chat scrolled to its newest message")  # fmt: skip
        bottom = last.evaluate("el => el.getBoundingClientRect().bottom")
        assert bottom <= box.evaluate("b => b.getBoundingClientRect().bottom") + 1
        shot(anna, f"layout-{viewport['width']}-photos")

        # Scrolled up to read, the manager stays there when the chat's size changes.
        box.evaluate("b => { b.scrollTop = 0; }")
        anna.set_viewport_size({"width": viewport["width"], "height": viewport["height"] - 60})
        anna.evaluate(TWO_FRAMES)
        assert box.evaluate("b => b.scrollTop") == 0
        assert csp_violations == []
    finally:
        for message in photos:
            message.media_file.delete(save=False)
