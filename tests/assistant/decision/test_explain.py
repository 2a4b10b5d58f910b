"""What a turn records for the manager's "Why?" (`Turn.decision["explained"]`): the items the
model read, the lines and total code computed from them, the rule sentence it used, how the
guardrail backed every amount the customer got, and the model that answered."""

from __future__ import annotations

from typing import Any

import pytest

from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import AssistantSettings
from assistant.turn import take_turn
from inbox.conversations.models import Chat, Message, Turn
from tests import factories
from tests.emulators.openai_server import Step

pytestmark = pytest.mark.django_db

PRICES = (
    "SKU,Name,Price,Currency\n"
    "CH-101,Office chair Lux,45000,KZT\n"
    "CH-102,Kitchen chair Oak,28000,KZT\n"
)
RULES = "Delivery in Almaty takes 1-2 days and costs 3 000 KZT."


def _turn(settings: Any, emu: Any, asked: str, answer: Step) -> Turn:
    business = factories.business()
    AssistantSettings.objects.create(business=business, business_rules=RULES)
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), business)
    chat = factories.chat(factories.channel(business))
    factories.customer_message(chat, asked)
    Chat.objects.filter(pk=chat.pk).update(version=1)
    settings.LLM_BASE_URL = emu.base_url
    emu.script(answer)
    turn = take_turn(chat.pk)
    assert turn is not None
    return turn


def test_a_model_turn_records_what_it_read_computed_used_and_proved(settings, emu) -> None:
    reading = {
        "items": [{"sku": "CH-101", "qty": 2}, {"sku": "CH-102", "qty": 1}],
        "intents": ["price_question"],
    }
    turn = _turn(
        settings, emu, "2 Office chair Lux and a Kitchen chair Oak with delivery, total?",
        Step.decision(reply="Here you are:\n{quote}", reading=reading),
    )  # fmt: skip

    explained = turn.decision["explained"]
    sent = turn.reply_message.text

    assert turn.outcome == Turn.Outcome.ANSWERED
    assert turn.backend == "llm:primary"
    assert explained["model"] == emu.chat_requests[-1].model  # the model the turn asked
    assert explained["intents"] == ["price_question"]
    assert [(line["item"], line["qty"], line["total"]) for line in explained["lines"]] == [
        ("Office chair Lux", "2", "90 000 KZT"),
        ("Kitchen chair Oak", "1", "28 000 KZT"),
    ]
    assert explained["total"] == "118 000 KZT"
    assert explained["rules"] == [RULES]
    # Every amount the customer got is backed, and the Why says by what.
    proofs = {p["amount"]: p["basis"] for p in explained["proofs"]}
    assert "121 000 KZT" in sent  # the order with delivery
    assert proofs["28 000 KZT"] == "the list price of Kitchen chair Oak"
    assert proofs["3 000 KZT"] == f"the business rules: {RULES}"
    assert proofs["121 000 KZT"] == "the sum of the lines above"


def test_a_blocked_reply_keeps_what_was_written_and_why_it_was_not_sent(settings, emu) -> None:
    wrong = "Office chair Lux: 2 × 45 000 KZT = 80 000 KZT"
    turn = _turn(settings, emu, "2 Office chair Lux?", Step.decision(reply=wrong))

    assert (turn.outcome, turn.reason) == (Turn.Outcome.HANDED_OFF, "guardrail")
    assert turn.decision["reply_to_customer"] == wrong
    assert turn.guardrail_findings == ["2 × 45 000 KZT is 90 000 KZT, not 80 000 KZT"]
    # The price itself was right; only the product was not.
    assert {"amount": "45 000 KZT", "basis": "the price of Office chair Lux, × 2 as the customer asked"} in turn.decision["explained"]["proofs"]  # fmt: skip


def test_a_price_a_manager_agreed_is_recorded_as_the_agreement_the_reply_used() -> None:
    business = factories.business()
    apply_price_list(parse_price_file(PRICES.encode(), "p.csv"), business)
    chat = factories.chat(factories.channel(business))
    factories.customer_message(chat, "any discount on the Office chair Lux?")
    agreed = "For you the Office chair Lux is 40 000 KZT instead of 45 000."
    said = Message.objects.create(
        chat=chat, channel=chat.channel, direction=Message.Direction.OUTBOUND,
        author=Message.Author.MANAGER, text=agreed,
    )  # fmt: skip
    factories.customer_message(chat, "how much for 2 office chairs lux then?")
    # The manager answered the first question; the chat is back with the assistant.
    Chat.objects.filter(pk=chat.pk).update(version=1, answered_up_to=said.pk)

    turn = take_turn(chat.pk)

    assert turn is not None
    explained = turn.decision["explained"]
    assert turn.reply_message.text.startswith("Office chair Lux: 2 × 40 000 KZT = 80 000 KZT")
    assert explained["agreements"] == [agreed]
    assert explained["lines"][0]["unit_price"] == "40 000 KZT"
    assert explained["proofs"][0] == {
        "amount": "40 000 KZT",
        "basis": "the price a manager agreed for Office chair Lux, × 2 as the customer asked",
    }
