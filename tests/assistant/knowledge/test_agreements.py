"""What a manager agreed in a chat, read back from the history as the bot will see it."""

from __future__ import annotations

from decimal import Decimal

from assistant.knowledge.agreements import agreed_price, agreements, manager_statements
from tests.assistant.builders import entry, item, knowledge

KNOWLEDGE = knowledge()
OFFICE_CHAIR = 0  # "Office chair Lux", 45 000
TABLE_160 = 2  # "Oak dining table 160", 120 000
BAR_STOOL = 5  # "Стул барный Лофт", 32 000


def test_the_new_price_is_agreed_not_the_one_it_replaces() -> None:
    history = [
        entry("customer", "how much is the office chair lux? 45k is a lot", 0),
        entry("manager", "Ok, the office chair is 40 000 KZT for you instead of 45 000.", 1),
    ]
    found = agreements(history, KNOWLEDGE)
    assert [(a.item_index, a.unit_price) for a in found] == [(OFFICE_CHAIR, Decimal("40000"))]
    assert agreed_price(found, OFFICE_CHAIR) is found[0]


def test_russian_manager_words_bind_to_the_item_the_customer_asked_about() -> None:
    history = [
        entry("customer", "Сколько барный стул лофт? Возьму 4", 0),
        entry(
            "manager", "Давайте так: не 32 000, а 29 000 за штуку. Доставку сделаем бесплатно", 1
        ),
    ]
    found = agreements(history, KNOWLEDGE)
    assert [(a.item_index, a.unit_price, a.per_unit) for a in found] == [
        (BAR_STOOL, Decimal("29000"), True)
    ]


def test_a_total_for_several_units_gives_the_unit_price() -> None:
    history = [entry("manager", "2 oak dining tables 160 for 220 000 ₸ total", 0)]
    (agreed,) = agreements(history, KNOWLEDGE)
    assert agreed.item_index == TABLE_160
    assert agreed.quantity == 2
    assert agreed.unit_price == Decimal("110000")


def test_the_replaced_price_is_no_quantity() -> None:
    parts = knowledge((item("OF-1", "Масляный фильтр Toyota", "3500"),))
    said = "The Масляный фильтр Toyota is 3 200 KZT for you instead of 3 500 KZT."
    (agreed,) = agreements([entry("manager", said, 0)], parts)
    assert (agreed.quantity, agreed.unit_price) == (None, Decimal("3200"))


def test_the_number_in_an_items_name_is_not_a_quantity() -> None:
    history = [entry("manager", "Oak dining table 160 is 100 000 for you", 0)]
    (agreed,) = agreements(history, KNOWLEDGE)
    assert (agreed.item_index, agreed.quantity, agreed.unit_price) == (
        TABLE_160,
        None,
        Decimal("100000"),
    )


def test_the_latest_agreement_for_an_item_holds() -> None:
    history = [
        entry("manager", "Office chair Lux: 42 000 for you", 0),
        entry("customer", "can you do better?", 1),
        entry("manager", "Ok, 40 000 and that's final", 2),
    ]
    found = agreements(history, KNOWLEDGE)
    latest = agreed_price(found, OFFICE_CHAIR)
    assert latest is not None
    assert latest.unit_price == Decimal("40000")


def test_only_managers_agree() -> None:
    history = [
        entry("customer", "you said the office chair lux is 30 000", 0),
        entry("bot", "Office chair Lux: 45 000 KZT", 1),
    ]
    assert agreements(history, KNOWLEDGE) == []


def test_manager_statements_keep_every_sentence_once() -> None:
    history = [
        entry("manager", "Delivery on Friday. Assembly is free for you.", 0),
        entry("manager", "Delivery on Friday.", 1),
    ]
    assert manager_statements(history) == ["Delivery on Friday.", "Assembly is free for you."]


def test_a_sentence_pricing_two_items_binds_each_amount_to_its_own() -> None:
    history = [
        entry("customer", "барный стул лофт и стол дубовый 160, сколько со скидкой?", 0),
        entry("manager", "Стул барный Лофт — 30 000, стол 160 — 110 000, доставка бесплатно.", 1),
    ]
    found = agreements(history, KNOWLEDGE)
    assert [(a.item_index, a.unit_price) for a in found] == [
        (BAR_STOOL, Decimal("30000")),
        (TABLE_160, Decimal("110000")),
    ]


def test_a_kazakh_price_with_dan_is_each_not_the_total() -> None:
    history = [
        entry("customer", "барный стул лофт 3 дана алсам жеңілдік бар ма?", 0),
        entry("manager", "Үш орындыққа 29 000 тг-дан жасаймыз", 1),
    ]
    found = agreements(history, KNOWLEDGE)
    assert [(a.item_index, a.unit_price, a.per_unit) for a in found] == [
        (BAR_STOOL, Decimal("29000"), True)
    ]
