"""Supervised replies in a real browser: the assistant's price reply waits as a draft under the
chat's messages, nothing reaches the customer, the manager approves it with Enter on the focused
draft, and the customer receives it."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.turn import take_turn
from inbox.conversations.models import Approval, Channel, Chat, Draft, Turn
from tests import factories
from tests.browser.support import CUSTOMER, csp_violations, in_thread, logged_in, shot
from tests.emulators.graph_api import GraphApiEmulator
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

PRICES = "SKU,Name,Price,Currency\nCH-101,Office chair Lux,45000,KZT\n"


def test_a_price_reply_waits_as_a_draft_and_goes_out_when_approved(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    Channel.objects.filter(pk=people["channel"].pk).update(approval=Approval.AMOUNTS)
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), people["business"])
    chat = factories.chat(people["channel"], customer_phone=CUSTOMER, customer_name="Dana")
    factories.customer_message(chat, "How much for 4 Office chair Lux?")
    Chat.objects.filter(pk=chat.pk).update(version=1)

    turn = in_thread(take_turn, chat.pk)

    assert turn.outcome == Turn.Outcome.AWAITING_APPROVAL
    assert graph.sent_to(CUSTOMER) == []
    draft = Draft.objects.get(chat=chat)
    assert "180 000" in draft.text

    boris = logged_in(browser, stack, "boris")
    expect(boris.locator("[data-drafts-waiting]")).to_have_text("1")
    boris.goto(f"{stack}/inbox/chat/{chat.pk}/")
    card = boris.locator(f'.draft-card[data-draft="{draft.pk}"]')
    expect(card).to_contain_text("180 000")
    shot(boris, "draft-waiting")

    card.focus()
    card.press("Enter")

    expect(card).to_have_count(0)
    expect(boris.locator("[data-drafts-waiting]")).to_be_hidden()
    wait_for(lambda: graph.sent_to(CUSTOMER), timeout=20, message="the approved reply")
    assert [m.text for m in graph.sent_to(CUSTOMER)] == [draft.text]
    # The sent reply shows in the conversation as the bot's, through the live push.
    expect(boris.locator(f"#messages-{chat.pk}")).to_contain_text("180 000")
    draft.refresh_from_db()
    assert (draft.state, draft.decided_by_id) == (Draft.State.APPROVED, people["boris"].pk)

    # The next reply that waits appears on the open chat by the live push, without a reload.
    factories.customer_message(chat, "How much for 2 Office chair Lux?")
    Chat.objects.filter(pk=chat.pk).update(version=2)
    in_thread(take_turn, chat.pk)
    second = Draft.objects.get(chat=chat, state=Draft.State.PENDING)
    expect(boris.locator(f'.draft-card[data-draft="{second.pk}"]')).to_contain_text("90 000")
    expect(boris.locator("[data-drafts-waiting]")).to_have_text("1")
    assert not csp_violations, csp_violations
