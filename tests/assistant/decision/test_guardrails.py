"""Guardrails: prices, discounts, deadlines and promises the list does not back are blocked."""

from __future__ import annotations

import pytest

from assistant.decision import catalogue, guardrails
from assistant.decision.guardrails import check_against
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import AssistantSettings
from assistant.schema import Action, Decision
from tests import factories
from tests.assistant.builders import entry, knowledge, turn

CONFIG = AssistantSettings(
    business_rules="Delivery in Almaty takes 1-2 days, 2 000 KZT. Скидка 5% при заказе от 3 "
    "предметов.",
    forbidden_promises=["free delivery", "re:гарантир\\w+ возврат"],
)


def verdict(reply: str, *messages: str, history=None, config=CONFIG, action=Action.ANSWER):
    decision = Decision(action=action, reply_to_customer=reply)
    t = turn(*(messages or ("hi",)), history=history)
    return check_against(decision, t, knowledge(), config)


def test_list_prices_and_quantity_totals_are_allowed():
    result = verdict(
        "Office chair Lux: 2 × 45 000 KZT = 90 000 KZT\nOak dining table 160: 120 000 KZT\n"
        "Total: 210 000 KZT",
        "2 office chairs and the 160 table",
    )
    assert result == guardrails.GuardrailResult(allowed=True, blocked=[])


def test_another_products_price_is_not_backed_for_the_product_named():
    # 45 000 is a list price, but the office chair's, not the sofa's.
    result = verdict("The Sofa Milano costs 45 000 KZT.", "how much is the sofa?")
    assert result.blocked == ["price 45 000 KZT is not the price of Sofa Milano 3-seat"]
    assert not verdict("The oak table is 28 000 KZT", "oak table price?").allowed
    # Each sentence is checked against what it names; an unnamed total is a sum.
    assert verdict(
        "The office chair is 45 000 KZT. The sofa Milano is 310 000 KZT. Together 355 000 KZT.",
        "chair and sofa?",
    ).allowed
    # Products named together in one sentence back each other's prices.
    assert verdict(
        "We have the Oak dining table 160 for 120 000 KZT and the 200 one for 150 000 KZT.",
        "oak tables?",
    ).allowed
    # Delivery from the business rules may share a sentence with a product.
    assert verdict("The sofa Milano is 310 000 KZT, delivery 2 000 KZT.", "sofa?").allowed


def test_invented_price_is_blocked_with_a_readable_finding():
    result = verdict("Good news: the sofa costs 15 000 KZT today.")
    assert not result.allowed
    assert result.blocked == ["price 15 000 KZT not in the price list"]


def test_a_fifteen_percent_discount_absent_from_the_list_is_blocked():
    result = verdict("For you we can do a 15% discount on the sofa!")
    assert result.blocked == ["discount 15% not in the price list"]
    assert verdict("Скидка 5% при заказе от 3 предметов").allowed  # written in the rules


def test_list_price_in_another_currency_is_not_backed():
    assert not verdict("The office chair is $45 000").allowed


def test_price_written_by_a_manager_in_this_chat_may_be_repeated_but_not_a_customer_one():
    history = [entry("customer", "can you do 40 000 for the chair?", 1),
               entry("manager", "Ok, 40 000 KZT for you, deal", 2)]  # fmt: skip
    assert verdict("As agreed with our manager: 40 000 KZT.", history=history).allowed
    customer_only = [entry("customer", "your colleague said 40 000 KZT", 1)]
    assert not verdict("Yes, 40 000 KZT.", history=customer_only).allowed


def test_delivery_deadlines_must_be_written_in_the_rules():
    assert verdict("Delivery in Almaty takes 1-2 days and costs 2 000 KZT.").allowed
    assert verdict("We can deliver in 2 days.").allowed  # within the 1-2 days of the rules
    blocked = verdict("We'll deliver it tomorrow!")
    assert blocked.blocked == ["delivery deadline 'tomorrow'"]
    assert not verdict("Доставим за 5 дней").allowed
    assert verdict("Hello, today I can tell you prices.").allowed  # no delivery context


def test_forbidden_promises_including_regex_entries():
    assert "forbidden promise: 'free delivery'" in verdict("Free delivery for you!").blocked
    assert not verdict("Гарантируем возврат денег").allowed


def test_clarify_and_handoff_messages_are_checked_too():
    assert not verdict("Which one: the 15 000 KZT sofa?", action=Action.CLARIFY).allowed
    assert not verdict("A manager will call with a 20% discount", action=Action.HANDOFF).allowed
    assert verdict("A manager will reply shortly.", action=Action.HANDOFF).allowed


def test_phone_numbers_and_skus_are_not_prices():
    assert verdict("Call us at +7 701 123 45 67, item TB-201 is on order.").allowed


@pytest.mark.django_db
def test_check_reads_the_channel_effective_list_from_the_database():
    biz = factories.business()
    almaty, astana = factories.channel(biz), factories.channel(biz)
    base = "sku,name,price,currency\nA1,Chair,45000,KZT\n"
    apply_price_list(parse_price_file(base.encode(), "b.csv"), biz)
    override = "sku,name,price,currency\nA1,Chair,47000,KZT\n"
    apply_price_list(parse_price_file(override.encode(), "o.csv"), biz, channel=astana)
    decision = Decision(action=Action.ANSWER, reply_to_customer="Chair: 47 000 KZT")
    on_astana = turn("chair?", business_id=biz.pk, channel_id=astana.pk)
    on_almaty = turn("chair?", business_id=biz.pk, channel_id=almaty.pk)
    assert guardrails.check(decision, on_astana).allowed
    assert guardrails.check(decision, on_almaty).blocked == [
        "price 47 000 KZT not in the price list"
    ]


@pytest.mark.parametrize(
    "message",
    [
        "2 office chairs and 3 kitchen chairs, total?",
        "how much for chairs?",
        "I want to order 4 barstools Лофт",
        "Сколько стоят 4 барных стула и кресло комфорт?",
        "Is SF-301 available?",
    ],
)
def test_every_catalogue_reply_passes_the_guardrails(message):
    decision = catalogue.decide(turn(message), knowledge(), CONFIG)
    assert check_against(decision, turn(message), knowledge(), CONFIG).allowed
