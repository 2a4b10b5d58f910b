"""Fees the business rules charge per something, computed by code from the order and the
customer's counts; a fee that cannot be computed gives no amount at all."""

from decimal import Decimal

import pytest

from assistant.decision import catalogue
from assistant.decision.guardrails import check_against
from assistant.knowledge.fees import (
    Fee,
    child_rates,
    counter,
    fee_for,
    fee_in,
    fee_total,
    percent_terms,
    term_applies,
)
from assistant.knowledge.rules import topic_clauses
from assistant.models import AssistantSettings
from assistant.schema import Action, Decision
from tests.assistant.builders import item, knowledge, turn

RULES = (
    "Доставка по Алматы грузовой машиной — 7 000 тг за рейс. "
    "За город — 7 000 тг + 250 тг за каждый км от границы города. "
    "Подъём на этаж без лифта: мешки — 150 тг за мешок за каждый этаж, листы — 300 тг за лист "
    "за каждый этаж; с грузовым лифтом — 100 тг за мешок или лист независимо от этажа."
)
BUILDING = (
    item("CEM-400", "Цемент М400", "3200", unit="мешок 50 кг"),
    item("GKL", "Гипсокартон Knauf стеновой", "2900", unit="лист"),
)
CONFIG = AssistantSettings(business_rules=RULES)


def test_a_clause_states_what_its_fee_is_charged_per():
    assert fee_in("мешки — 150 тг за мешок за каждый этаж") == Fee(
        Decimal(150), ("мешок", "этаж"), Decimal(0), "мешки — 150 тг за мешок за каждый этаж"
    )
    km = fee_in("За город — 7 000 тг + 250 тг за каждый км от границы города")
    assert km is not None
    assert (km.amount, km.per, km.base) == (250, ("км",), 7000)
    assert fee_in("Доставка по Алматы — 7 000 тг за рейс") is None  # once per trip: fixed
    assert fee_in("Сборка 5 000 тг") is None


def test_a_fee_is_computed_only_when_every_count_is_known():
    fee = fee_in("мешки — 150 тг за мешок за каждый этаж")
    assert fee is not None
    asked = "20 мешков поднимете на 4 этаж?"
    assert fee_total(fee, counter(asked)) == Decimal(12000)
    assert fee_total(fee, counter("20 мешков поднимете?")) is None  # which floor?


def test_the_clause_that_agrees_with_the_message_on_the_lift_is_the_fee():
    lifting = topic_clauses(RULES, "lifting")
    asked = "20 мешков на 4 этаж, лифта нет, сколько за подъём?"
    no_lift = fee_for(lifting, asked, counter(asked))
    assert no_lift is not None
    assert no_lift[1] == Decimal(12000)
    asked = "20 мешков на 4 этаж, есть грузовой лифт"
    with_lift = fee_for(lifting, asked, counter(asked))
    assert with_lift is not None
    assert with_lift[1] == Decimal(2000)


def test_a_sentence_that_goes_on_about_a_topic_belongs_to_it():
    clauses = topic_clauses(RULES, "delivery")
    assert any("250 тг за каждый км" in c for c in clauses)
    asked = "Доставка в Каскелен сколько? от города км 20"
    found = fee_for(clauses, asked, counter(asked))
    assert found is not None
    assert found[1] == Decimal(12000)


def test_the_catalogue_assistant_answers_the_fee_and_the_guardrail_proves_it():
    asked = "20 мешков цемента поднимете на 4 этаж? лифта нет. сколько за подъем"
    t = turn(asked)
    decision = catalogue.decide(t, knowledge(BUILDING), CONFIG)
    assert decision.action == Action.ANSWER
    assert "12 000 KZT" in decision.reply_to_customer
    assert check_against(decision, t, knowledge(BUILDING), CONFIG).allowed
    # The same amount for a floor the customer did not give is not proven.
    wrong = Decision(action=Action.ANSWER, reply_to_customer="Подъём: 15 000 KZT")
    assert not check_against(wrong, t, knowledge(BUILDING), CONFIG).allowed


def test_an_extra_the_customer_names_is_a_line_of_the_total():
    cakes = (item("CAKE-PRAGA", "Торт «Прага»", "9500", unit="кг"),)
    config = AssistantSettings(
        business_rules="Надпись на торте — 1000 тг. Доставка по Алматы — 2000 тг."
    )
    asked = "торт прага два килограмма и чтобы надпись на нем была, сколько?"
    t = turn(asked)
    decision = catalogue.decide(t, knowledge(cakes), config)
    reply = decision.reply_to_customer
    assert "2 × 9 500 KZT = 19 000 KZT" in reply
    assert "Надпись на торте: 1 000 KZT" in reply
    assert "20 000 KZT" in reply  # the total counts the inscription once
    assert "2 000" not in reply  # delivery was not asked for
    assert check_against(decision, t, knowledge(cakes), config).allowed
    # Without the inscription, no extra.
    plain = catalogue.decide(turn("торт прага 2 кг сколько?"), knowledge(cakes), config)
    assert "Надпись" not in plain.reply_to_customer


COURSES = (
    item("EN-GR", "Английский — групповой курс для взрослых", "28000", unit="месяц"),
    item("BOOK", "Учебник English File", "9500"),
)
COURSE_RULES = AssistantSettings(
    business_rules="Скидка 10% при оплате группового курса сразу за 3 месяца. "
    "Оплата наличными или Kaspi."
)


def test_percentages_the_rules_state_are_read_with_what_they_are_on():
    terms = percent_terms(
        "Скидка 10% при оплате группового курса сразу за 3 месяца. "
        "При покупке комплекта из 4 шин — скидка 50% на шиномонтаж. "
        "Срочный заказ — +50% к стоимости заказа. "
        "Предоплата 30% от стоимости меню. Ткань: 100% хлопок."
    )
    assert [(t.kind, t.rate, t.target) for t in terms] == [
        ("discount", Decimal(10), ""),
        ("discount", Decimal(50), "шиномонтаж"),
        ("surcharge", Decimal(50), ""),
        ("prepayment", Decimal(30), "меню"),
    ]
    discount = terms[0]
    assert term_applies(discount, "если оплатить групповой сразу за 3 месяца, сколько?")
    assert not term_applies(discount, "если оплатить групповой за 2 месяца, сколько?")
    assert discount.applied(Decimal(84000)) == Decimal(75600)


def test_a_discount_the_customer_meets_is_computed_and_the_guardrail_proves_it():
    asked = "английский групповой для взрослых, если оплатить сразу за 3 месяца, сколько?"
    t = turn(asked)
    decision = catalogue.decide(t, knowledge(COURSES), COURSE_RULES)
    reply = decision.reply_to_customer
    assert "3 × 28 000 KZT = 84 000 KZT, со скидкой 10%: 75 600 KZT" in reply
    assert check_against(decision, t, knowledge(COURSES), COURSE_RULES).allowed
    # A discounted amount the rules do not give is not proven.
    wrong = Decimal(70000)
    bad = Decision(
        action=Action.ANSWER,
        reply_to_customer=reply.replace("75 600", f"{wrong:,}".replace(",", " ")),
    )
    assert not check_against(bad, t, knowledge(COURSES), COURSE_RULES).allowed
    # For two months there is no discount.
    two = catalogue.decide(
        turn("английский групповой для взрослых, если оплатить сразу за 2 месяца, сколько?"),
        knowledge(COURSES),
        COURSE_RULES,
    )
    assert "скидкой" not in two.reply_to_customer


def test_the_prepayment_asked_about_is_computed_on_the_order():
    cakes = (item("CAKE-HONEY", "Торт «Медовик»", "8500", unit="кг"),)
    config = AssistantSettings(
        business_rules="Торты готовим на заказ: предоплата 50% от стоимости торта, "
        "остаток при получении."
    )
    t = turn("Какая предоплата за Медовик 3 кг?")
    decision = catalogue.decide(t, knowledge(cakes), config)
    assert "Предоплата 50%: 12 750 KZT" in decision.reply_to_customer
    assert check_against(decision, t, knowledge(cakes), config).allowed


def test_a_discount_is_computed_though_the_customer_asks_no_question_about_terms():
    courses = (
        item("EN-KID", "Английский для детей — группа", "24000", unit="месяц"),
        item("BOOK", "Учебник English File", "9500"),
    )
    t = turn("дочке детскую группу английского сразу за 3 месяца + учебник, сколько всего?")
    decision = catalogue.decide(t, knowledge(courses), COURSE_RULES)
    reply = decision.reply_to_customer
    assert "72 000 KZT, со скидкой 10%: 64 800 KZT" in reply
    assert "Итого: 74 300 KZT" in reply  # the textbook is not discounted
    assert check_against(decision, t, knowledge(courses), COURSE_RULES).allowed


def test_what_a_discount_is_on_is_no_condition_of_it():
    haircuts = (item("M-1", "Мужская стрижка", "5000", unit="услуга"),)
    config = AssistantSettings(business_rules="Пенсионерам скидка 15% на мужские стрижки.")
    plain = catalogue.decide(turn("сколько стоит мужская стрижка?"), knowledge(haircuts), config)
    assert "скидкой" not in plain.reply_to_customer
    assert "5 000 KZT" in plain.reply_to_customer
    pensioner = catalogue.decide(
        turn("я пенсионер, мужская стрижка сколько будет?"), knowledge(haircuts), config
    )
    assert "со скидкой 15%: 4 250 KZT" in pensioner.reply_to_customer


@pytest.mark.parametrize(
    ("rules", "rates"),
    [
        (
            "Дети до 5 лет бесплатно (без отдельного места), дети 5–12 лет — скидка 30%.",
            [(0, 4, None), (5, 12, Decimal(30))],
        ),
        (
            "Children under 6 travel free; kids 6-12 years get 20% off.",
            [(0, 5, None), (6, 12, Decimal(20))],
        ),
        ("5 жасқа дейінгі балалар тегін.", [(0, 4, None)]),
        # About children, but no age range or no rate: none.
        ("Детей принимаем с 3 лет.", []),
        ("Скидка 15% на курс второго ребёнка из одной семьи.", []),
    ],
)
def test_childrens_rates_are_read_with_their_ages(rules, rates):
    found = [(r.youngest, r.oldest, r.term.rate if r.term else None) for r in child_rates(rules)]
    assert found == rates
