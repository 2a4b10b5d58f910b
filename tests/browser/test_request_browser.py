"""The handoff card and the follow-up, as a manager sees them in a real browser: the card keeps
what the customer asked (the item, the quantity, the discount); a quote left unanswered gets the
business's nudge, which shows in the open chat by the live push; the follow-up steps are set on
the business page."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.turn import take_turn
from inbox.conversations.models import Business, Chat, Followup, Message, Turn
from inbox.upkeep import followups
from tests import factories
from tests.browser.support import CUSTOMER, csp_violations, in_thread, logged_in, shot
from tests.emulators.graph_api import GraphApiEmulator
from tests.processes import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")

PRICES = (
    "SKU,Name,Price,Currency,Unit\n"
    "SF-302,Диван угловой Бостон,250000,KZT,шт\n"
    "CH-101,Office chair Lux,45000,KZT,шт\n"
)


def test_the_handoff_card_keeps_the_item_the_quantity_and_the_discount_asked(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), people["business"])
    chat = factories.chat(people["channel"], customer_phone=CUSTOMER, customer_name="Айгерим")
    factories.customer_message(chat, "скидка 20% на 3 дивана бостон будет?")
    Chat.objects.filter(pk=chat.pk).update(version=1)

    turn = in_thread(take_turn, chat.pk)

    assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "non_standard_terms")
    boris = logged_in(browser, stack, "boris")
    boris.goto(f"{stack}/inbox/chat/{chat.pk}/")
    card = boris.locator(f"#handoff-{chat.pk} .handoff-card")
    expect(card).to_contain_text("3 шт × Диван угловой Бостон")
    expect(card).to_contain_text("скидка 20%")
    shot(boris, "handoff-card-request")
    boris.context.close()
    assert not csp_violations, csp_violations


def test_an_unanswered_quote_gets_the_nudge_set_on_the_business_page(
    stack: str, graph: GraphApiEmulator, people: dict[str, Any], browser: Any
) -> None:
    expect = sync_api.expect
    business = people["business"]
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), business)

    anna = logged_in(browser, stack, "anna")  # the business admin
    anna.goto(f"{stack}/inbox/settings/business/")
    anna.fill("#id_followup_steps", "2")
    anna.fill("#id_followup_texts", "Остались вопросы по креслам? Я на связи.")
    anna.click("form.settings-form .form-actions button[type=submit]")
    wait_for(
        lambda: Business.objects.get(pk=business.pk).followup_steps == "2",
        timeout=10,
        message="the follow-up step saved",
    )
    anna.context.close()

    chat = factories.chat(people["channel"], customer_phone=CUSTOMER, customer_name="Dana")
    factories.customer_message(chat, "How much for 4 Office chair Lux?")
    Chat.objects.filter(pk=chat.pk).update(version=1)
    turn = in_thread(take_turn, chat.pk)
    assert turn.outcome == Turn.Outcome.ANSWERED
    wait_for(lambda: graph.sent_to(CUSTOMER), timeout=20, message="the quote")
    # Two hours and a bit pass without an answer.
    earlier = timezone.now() - timedelta(hours=2, minutes=5)
    Message.objects.filter(chat=chat).update(created_at=earlier)
    Turn.objects.filter(pk=turn.pk).update(finished_at=earlier)
    Chat.objects.filter(pk=chat.pk).update(last_customer_at=earlier - timedelta(seconds=10))

    boris = logged_in(browser, stack, "boris")
    boris.goto(f"{stack}/inbox/chat/{chat.pk}/")
    sent = in_thread(followups.send_due, timezone.now())

    assert sent == 1
    expect(boris.locator(f"#messages-{chat.pk}")).to_contain_text("Остались вопросы по креслам?")
    assert graph.sent_to(CUSTOMER)[-1].text == "Остались вопросы по креслам? Я на связи."
    assert Followup.objects.get(chat=chat).step == 1
    assert in_thread(followups.send_due, timezone.now()) == 0  # never the same step twice
    boris.context.close()
    assert not csp_violations, csp_violations
