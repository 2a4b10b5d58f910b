"""Two managers racing for one chat in two real browsers on the live stack: one wins the take
over and the other's page says who at once, sees who views and types, and is asked before
answering someone else's chat. The composer: Enter sends, Shift+Enter breaks the line, drafts
are kept per chat."""

from __future__ import annotations

import time
from typing import Any

import pytest

from inbox.conversations import team
from inbox.conversations.models import Chat, Membership, Owner
from tests import factories
from tests.browser.support import CUSTOMER, PHONE, csp_violations, logged_in, shot
from tests.emulators.graph_api import GraphApiEmulator
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


PRESS_AT = """at => setTimeout(
    () => document.querySelector("[data-action=take-over]").click(), at - Date.now())"""


def customer_chat(people: dict[str, Any], phone: str, name: str) -> Chat:
    chat = factories.chat(
        people["channel"], customer_key=phone, customer_phone=phone, customer_name=name
    )
    factories.customer_message(chat, f"Hello, this is {name}")
    return chat


def open_chat(page: Any, base: str, chat: Chat) -> None:
    page.goto(f"{base}/inbox/chat/{chat.pk}/")
    sync_api.expect(page.locator("#live-status")).to_have_attribute("data-state", "live")


def test_take_over_race_presence_and_asking_before_sending(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    chat = customer_chat(people, CUSTOMER, "Aigerim")
    anna = logged_in(browser, stack, "anna")
    boris = logged_in(browser, stack, "boris", viewport=PHONE)
    for page in (anna, boris):
        open_chat(page, stack, chat)
    expect(anna.locator(f"#presence-{chat.pk}")).to_contain_text("Also viewing: Boris Manager")
    expect(boris.locator(f"#presence-{chat.pk}")).to_contain_text("Also viewing: Anna Manager")

    # Both press "Take over" at once: one transition, one winner, named on both pages. The two
    # presses are set for the same instant on the shared clock: pressed one after the other, the
    # first one's live update may replace the second page's button before it is pressed.
    for page in (anna, boris):
        expect(page.locator("[data-action=take-over]")).to_be_enabled()
    at = time.time() * 1000 + 400
    for page in (anna, boris):
        page.evaluate(PRESS_AT, at)
    chat = wait_for(lambda: Chat.objects.filter(pk=chat.pk, owner=Owner.HUMAN).first())
    wait_for(lambda: Chat.objects.get(pk=chat.pk).assigned_to_id)
    chat.refresh_from_db()
    assert chat.transitions.filter(to_owner=Owner.HUMAN).count() == 1
    winner, loser = (anna, boris) if chat.assigned_to_id == people["anna"].pk else (boris, anna)
    name = chat.assigned_to.get_full_name()
    for page in (anna, boris):
        expect(page.locator(f"#chat-header-{chat.pk} [data-taken-by]")).to_have_text(
            f"{name} took this chat"
        )
    expect(loser.locator(f"#chat-header-{chat.pk} [data-owner-badge]")).to_have_text("Human")

    # The loser starts typing: the winner sees it; Enter then asks before anything is sent.
    box = loser.locator("[data-composer=reply] textarea")
    box.click()
    box.press_sequentially("I can help too")
    other = "Boris Manager" if name == "Anna Manager" else "Anna Manager"
    expect(winner.locator(f"#presence-{chat.pk} .presence-typing")).to_have_text(
        f"{other} is typing…"
    )
    box.press("Enter")
    ask = loser.locator("[data-takeover-ask]")
    expect(ask).to_be_visible()
    expect(ask).to_contain_text(f"Take over from {name}?")
    shot(anna, "collisions-desktop")
    shot(boris, "collisions-phone")
    assert graph.sent_to(CUSTOMER) == []
    loser.locator("[data-action=keep-draft]").click()
    expect(ask).to_be_hidden()
    assert graph.sent_to(CUSTOMER) == []
    expect(box).to_have_value("I can help too")

    # Confirmed: the reply goes out and the chat is the loser's now, on both pages.
    box.press("Enter")
    loser.locator("[data-action=take-over-and-send]").click()
    wait_for(lambda: [m for m in graph.sent_to(CUSTOMER) if m.text == "I can help too"])
    for page in (anna, boris):
        expect(page.locator(f"#chat-header-{chat.pk} [data-taken-by]")).to_have_text(
            f"{other} took this chat"
        )
    expect(loser.locator("[data-composer=reply] textarea")).to_have_value("")
    assert csp_violations == []


def test_enter_sends_shift_enter_breaks_the_line_and_drafts_stay_per_chat(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    first = customer_chat(people, CUSTOMER, "Aigerim")
    second = customer_chat(people, "77017654321", "Dana")
    anna = logged_in(browser, stack, "anna")
    open_chat(anna, stack, first)

    box = anna.locator("[data-composer=reply] textarea")
    box.click()
    box.press_sequentially("Two oak tables")
    box.press("Shift+Enter")
    box.press_sequentially("delivered on Friday")
    expect(box).to_have_value("Two oak tables\ndelivered on Friday")

    # Another chat has its own (empty) box; coming back brings the draft back.
    open_chat(anna, stack, second)
    expect(anna.locator("[data-composer=reply] textarea")).to_have_value("")
    open_chat(anna, stack, first)
    expect(box).to_have_value("Two oak tables\ndelivered on Friday")

    box.press("Enter")
    wait_for(lambda: graph.sent_to(CUSTOMER))
    assert graph.sent_to(CUSTOMER)[-1].text == "Two oak tables\ndelivered on Friday"
    expect(anna.locator(f"#messages-{first.pk} .msg.author-manager")).to_contain_text(
        "delivered on Friday"
    )
    expect(box).to_have_value("")
    open_chat(anna, stack, first)  # sent: the draft is gone
    expect(box).to_have_value("")
    assert csp_violations == []


def test_the_take_over_losers_notice_names_the_winner_and_stays_until_dismissed(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    for username, shown in (("anna", "Айгерим"), ("boris", "Борис")):
        membership = Membership.objects.get(user=people[username], business=people["business"])
        team.set_display_name(membership, shown)
    chat = customer_chat(people, CUSTOMER, "Dana")
    anna = logged_in(browser, stack, "anna")
    boris = logged_in(browser, stack, "boris")
    for page in (anna, boris):
        open_chat(page, stack, chat)
    expect(anna.locator(f"#presence-{chat.pk}")).to_contain_text("Also viewing: Борис")

    for page in (anna, boris):
        expect(page.locator("[data-action=take-over]")).to_be_enabled()
    at = time.time() * 1000 + 400
    for page in (anna, boris):
        page.evaluate(PRESS_AT, at)
    taken = Chat.objects.filter(pk=chat.pk, owner=Owner.HUMAN).exclude(assigned_to=None)
    wait_for(lambda: taken.first(), message="one manager to take the chat")
    chat.refresh_from_db()
    anna_won = chat.assigned_to_id == people["anna"].pk
    winner, loser = (anna, boris) if anna_won else (boris, anna)
    name = "Айгерим" if anna_won else "Борис"

    notice = loser.locator(f"#chat-notice-{chat.pk}")
    expect(notice).to_contain_text(f"Too late: {name} took this chat first.")
    expect(loser.locator(f"#chat-header-{chat.pk} [data-taken-by]")).to_have_text(
        f"{name} took this chat"
    )
    # The winner snoozes the chat: the loser's header is replaced live, the notice stays.
    winner.locator(f"#chat-header-{chat.pk} [data-action=snooze]").select_option("1h")
    expect(loser.locator(f"#chat-header-{chat.pk}")).to_have_attribute("data-status", "snoozed")
    expect(notice).to_be_visible()
    expect(notice).to_contain_text(f"Too late: {name} took this chat first.")
    shot(loser, "collisions-too-late")

    notice.locator("[data-action=dismiss-notice]").click()
    expect(notice).to_be_hidden()
    assert csp_violations == []
