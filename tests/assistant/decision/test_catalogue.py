"""The catalogue assistant: prices and availability from the list, everything else handed off."""

from __future__ import annotations

import pytest

from assistant.decision import catalogue
from assistant.models import AssistantSettings
from assistant.schema import Action
from tests.assistant.builders import entry, knowledge, turn

CONFIG = AssistantSettings()


def decide(*messages, history=None):
    return catalogue.decide(turn(*messages, history=history), knowledge(), CONFIG)


def test_exact_name_answers_price_and_availability():
    d = decide("How much is the Office chair Lux?")
    assert d.action == Action.ANSWER
    assert d.reply_to_customer == "Office chair Lux: 45 000 KZT (in stock)"
    assert [(i.name, i.qty) for i in d.facts.items] == [("Office chair Lux", 1)]


def test_quantity_times_price_with_typo_and_plural():
    d = decide("2 ofice chiars please, what's the price?")
    assert d.action == Action.ANSWER
    assert "Office chair Lux: 2 × 45 000 KZT = 90 000 KZT" in d.reply_to_customer
    assert d.facts.items[0].qty == 2


def test_several_items_with_quantities_get_a_total():
    d = decide("price for 2 kitchen chairs and one oak table 160?")
    assert d.action == Action.ANSWER
    assert d.reply_to_customer.splitlines() == [
        "Kitchen chair Oak: 2 × 28 000 KZT = 56 000 KZT (in stock)",
        "Oak dining table 160: 120 000 KZT (on order, 2 weeks)",
        "Total: 176 000 KZT",
    ]


def test_sku_lookup():
    d = decide("Is SF-301 available?")
    assert d.reply_to_customer == "Sofa Milano 3-seat: 310 000 KZT (out of stock)"


def test_ambiguous_name_asks_which_one_then_resolves_with_the_earlier_quantity():
    first = decide("how much for 3 chairs?")
    assert first.action == Action.CLARIFY
    assert "Office chair Lux (45 000 KZT)" in first.reply_to_customer
    assert "Kitchen chair Oak (28 000 KZT)" in first.reply_to_customer
    history = [
        entry("customer", "how much for 3 chairs?", 1),
        entry("bot", first.reply_to_customer, 2),
    ]
    second = decide("the kitchen one", history=history)
    assert second.action == Action.ANSWER
    assert second.reply_to_customer.startswith("Kitchen chair Oak: 3 × 28 000 KZT = 84 000 KZT")


def test_russian_morphology():
    d = decide("Сколько стоят 4 барных стула?")
    assert d.action == Action.ANSWER
    assert d.reply_to_customer == "Стул барный Лофт: 4 × 32 000 KZT = 128 000 KZT (в наличии)"


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("Can I talk to a manager please", "asks_for_human"),
        ("Позовите менеджера", "asks_for_human"),
        ("I want to order 2 office chairs", "ready_to_buy"),
        ("Хочу купить диван, как оплатить?", "ready_to_buy"),
        ("Any discount if I take 10 chairs?", "non_standard_terms"),
        ("а в рассрочку можно?", "non_standard_terms"),
        ("The table arrived broken, this is unacceptable", "complaint"),
        ("Заказ до сих пор не привезли, ужас", "complaint"),
        ("Менеджермен хабарласуға бола ма?", "asks_for_human"),
    ],
)
def test_everything_else_is_handed_off_with_the_right_reason(message, reason):
    d = decide(message)
    assert (d.action, d.reason) == (Action.HANDOFF, reason)
    assert d.reply_to_customer


def test_ready_to_buy_handoff_carries_the_quote_and_facts():
    d = decide("I'm Aigerim from Almaty, I want to order 2 office chairs")
    assert d.reason == "ready_to_buy"
    assert "2 × 45 000 KZT = 90 000 KZT" in d.reply_to_customer
    assert (d.facts.name, d.facts.city) == ("Aigerim", "Almaty")
    assert "2 × Office chair Lux" in d.summary


def test_outside_the_list_clarifies_once_then_hands_off():
    first = decide("Do you deliver to Astana?")
    assert first.action == Action.CLARIFY
    history = [
        entry("customer", "Do you deliver to Astana?", 1),
        entry("bot", first.reply_to_customer, 2),
    ]
    second = decide("I mean shipping of a wardrobe", history=history)
    assert (second.action, second.reason) == (Action.HANDOFF, "outside_knowledge_base")
    assert "wardrobe" in second.summary


def test_a_match_after_the_clarification_is_answered_not_handed_off():
    first = decide("do you have beds?")
    history = [entry("customer", "do you have beds?", 1), entry("bot", first.reply_to_customer, 2)]
    second = decide("ok, then a sofa", history=history)
    assert second.action == Action.ANSWER
    assert "Sofa Milano" in second.reply_to_customer


def test_greeting_and_thanks_are_answered_in_the_customer_language():
    assert decide("Здравствуйте!").reply_to_customer.startswith("Здравствуйте!")
    assert decide("thanks!").action == Action.ANSWER


def test_disabled_reason_is_not_used():
    config = AssistantSettings(handoff_reasons=[{"code": "asks_for_human", "description": "x"}])
    d = catalogue.decide(turn("any discount on the sofa?"), knowledge(), config)
    assert d.action == Action.ANSWER  # non_standard_terms switched off: the price is answered
