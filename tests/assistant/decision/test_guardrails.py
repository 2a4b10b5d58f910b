"""Guardrails: prices, discounts, deadlines and promises the list does not back are blocked."""

from __future__ import annotations

import pytest

from assistant.decision import catalogue, guardrails
from assistant.decision.guardrails import check_against
from assistant.knowledge.price_import import apply_price_list, parse_price_file
from assistant.models import AssistantSettings
from assistant.schema import Action, Decision
from tests import factories
from tests.assistant.builders import FURNITURE, entry, item, knowledge, turn

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


# --- proving every number: the failures the trust issue reported -----------------------------

ORDER = knowledge(
    (
        item("TB-180", "Oak dining table 180 cm", "189000"),
        item("CH-200", "Oak dining chair", "32000"),
        item("CT-1", "Coffee table", "54000"),
        item("BS-1", "Bar stool", "28900"),
        item("LX-1", "Office chair Lux", "45000"),
    )
)
RULES = AssistantSettings(
    business_rules="Delivery in Almaty takes 1-2 days, 3 000 KZT. Assembly 5 000 KZT. "
    "We work 10:00-20:00."
)


def order(reply: str, *messages: str, history=None) -> list[str]:
    return [
        f.text for f in guardrails.findings(reply, turn(*messages, history=history), ORDER, RULES)
    ]


def test_a_quantity_is_the_customers_for_that_item_not_for_another():
    asked = "Oak dining table 180 cm and 4 oak dining chairs"
    assert order(
        "Oak dining table 180 cm: 4 × 189 000 KZT = 756 000 KZT\n"
        "Oak dining chair: 32 000 KZT\nTotal: 788 000 KZT",
        asked,
    ) == [
        "4 × 189 000 KZT: the customer did not ask for 4 × Oak dining table 180 cm",
        # …and the total counts one chair where the customer asked for four.
        "total 788 000 KZT is not the sum of the lines above (884 000 KZT)",
    ]
    # The line naming no item binds to the customer's items: 189 000 is the table's, 4 is not.
    assert order("4 × 189 000 KZT = 756 000 KZT", asked) == [
        "4 × 189 000 KZT: the customer did not ask for 4 × Oak dining table 180 cm"
    ]
    right = (
        "Oak dining table 180 cm: 189 000 KZT\n"
        "Oak dining chair: 4 × 32 000 KZT = 128 000 KZT\nTotal: 317 000 KZT"
    )
    assert order(right, asked) == []
    assert order(
        "Coffee table: 2 × 54 000 KZT = 108 000 KZT\nBar stool: 28 900 KZT\nTotal: 165 800 KZT",
        "a coffee table and 2 bar stools",
    ) == ["2 × 54 000 KZT: the customer did not ask for 2 × Coffee table"]


def test_a_total_must_be_the_sum_of_its_lines_even_when_it_equals_a_price():
    asked = "Office chair Lux and 2 Bar stool, total?"
    lines = "Office chair Lux: 45 000 KZT\nBar stool: 2 × 28 900 KZT = 57 800 KZT\n"
    assert order(lines + "Total: 102 800 KZT", asked) == []
    assert order(lines + "Total: 112 800 KZT", asked) == [
        "total 112 800 KZT is not the sum of the lines above (102 800 KZT)"
    ]
    assert order(lines + "Итого: 189 000 KZT", asked) == [  # the table's price, not the sum
        "total 189 000 KZT is not the sum of the lines above (102 800 KZT)"
    ]
    assert order("Bar stool: 2 × 28 900 KZT = 58 800 KZT", asked) == [
        "2 × 28 900 KZT is 57 800 KZT, not 58 800 KZT"
    ]
    # A rule's fee may be a line of the sum; prose and "altogether" count as totals.
    assert (
        order(
            "The Office chair Lux is 45 000 KZT, delivery 3 000 KZT, altogether 48 000 KZT.",
            "office chair with delivery?",
        )
        == []
    )


def test_the_customers_forty_k_and_agreeing_to_it_are_both_findings():
    found = order(
        "Sure, I can do that. The price per chair is 40K, so the total cost for ten chairs "
        "would be 400K.",
        "Could you do the Office chair Lux for 40k each if I take ten?",
    )
    assert "price 40 000 not in the price list" in found
    assert "price 400 000 not in the price list" in found
    assert "agrees to the customer's price 40 000: 'I can do that'" in found
    # Refusing, with the list price times the ten the customer asked for, is provable.
    assert (
        order(
            "Sorry, the Office chair Lux is 45 000 KZT; for ten that is 450 000 KZT. A manager can "
            "discuss special terms.",
            "Could you do the Office chair Lux for 40k each if I take ten?",
        )
        == []
    )


@pytest.mark.parametrize(
    ("asked", "reply"),
    [
        ("Can I get a discount on the sofa?", "Of course, we'll give you a discount."),
        ("Сделаете скидку на диван?", "Хорошо, сделаем скидку!"),
        ("Жеңілдік жасайсыз ба?", "Жарайды, жеңілдік жасаймыз."),
        ("Отдадите стул за 40 тыс?", "Договорились!"),
        ("Стулды 40 мыңға берсеңіз аламын", "Келістік!"),
        ("Can you deliver by Friday?", "Yes, we can do that!"),
        ("Can you give me a discount?", "Yes!"),
        ("Is delivery free?", "Yes, delivery is free for you!"),
        ("Жеткізу бар ма?", "Иә, жеткізу тегін!"),
        ("Any deal on the chair?", "The Office chair Lux today at half price!"),
    ],
)
def test_agreeing_to_terms_the_rules_do_not_give_is_a_promise(asked, reply):
    assert any(
        f.startswith(("agrees to", "promises", "closes a deal")) for f in order(reply, asked)
    )


@pytest.mark.parametrize(
    ("asked", "reply"),
    [
        (
            "Can I get a discount?",
            "Of course, I'm passing you to a manager: they will reply here shortly.",
        ),
        ("Скидку сделаете?", "По особым условиям вам ответит менеджер: он скоро напишет здесь."),
        ("Can I get a discount?", "Unfortunately the price is fixed: 45 000 KZT."),
        ("Can you deliver tomorrow?", "Delivery in Almaty takes 1-2 days and costs 3 000 KZT."),
    ],
)
def test_refusing_or_deferring_to_a_manager_is_not_a_promise(asked, reply):
    assert order(reply, asked) == []


def test_an_amount_in_a_sentence_naming_no_item_binds_to_the_previous_one():
    assert order("We have the Office chair Lux. It costs 45 000 KZT.", "office chair?") == []
    assert order("We have the Office chair Lux. It costs 54 000 KZT.", "office chair?") == [
        "price 54 000 KZT is not the price of Office chair Lux"
    ]
    # …or to what the customer asked about.
    assert order("It is 45 000 KZT.", "how much is the office chair?") == []
    assert order("It is 28 900 KZT.", "how much is the office chair?") == [
        "price 28 900 KZT is not the price of Office chair Lux"
    ]
    # A rule's fee is a fee only where the words say so.
    assert order("Delivery is 3 000 KZT.", "how much is delivery?") == []
    assert order("We have the Office chair Lux. It costs 3 000 KZT.", "office chair?") == [
        "price 3 000 KZT not in the price list"
    ]


def test_the_price_a_manager_agreed_binds_for_that_item_after_release():
    history = [
        entry("customer", "How much is the Office chair Lux?", 1),
        entry("bot", "Office chair Lux: 45 000 KZT", 2),
        entry("manager", "The office chair is 40 000 KZT for you instead of 45 000", 3),
    ]
    asked = "so how much is the office chair then? I want 2"
    assert order("Office chair Lux: 2 × 40 000 KZT = 80 000 KZT", asked, history=history) == []
    assert order("The Office chair Lux is 45 000 KZT.", asked, history=history) == [
        "price 45 000 KZT for Office chair Lux contradicts the 40 000 KZT a manager agreed"
    ]
    assert order("The Bar stool is 40 000 KZT.", asked, history=history) == [
        "price 40 000 KZT not in the price list"
    ]


def test_saying_a_manager_agreed_is_not_agreeing_but_agreeing_anew_is():
    history = [
        entry("customer", "Сделаете 2 кресла офисных Комфорт за 100 000? Тогда возьму", 1),
        entry("manager", "Да, 2 кресла Комфорт за 100 000 для вас", 2),
    ]
    asked = "Так сколько за два кресла комфорт, со скидкой можно?"
    quoted = "Кресло офисное Комфорт: 2 × 50 000 KZT = 100 000 KZT (как договорились с менеджером)"
    assert order(quoted, asked, history=history) == []
    assert order("Договорились, отдам за 90 000 KZT", asked, history=history) != []


@pytest.mark.parametrize(
    "written",
    [
        "45 000 KZT",
        "45,000 KZT",
        "45.000 тг",
        "₸45 000",
        "45 000 ₸",
        "45k",
        "45K",
        "45 тыс. тг",
        "45 тысяч тенге",
        "45000 tenge",
    ],
)
def test_amounts_are_read_in_the_forms_people_write(written):
    assert order(f"Office chair Lux: {written}", "office chair?") == []
    wrong = written.replace("45", "44")
    assert order(f"Office chair Lux: {wrong}", "office chair?") != []


def test_numbers_that_are_not_money_are_left_alone():
    assert (
        order(
            "Call +7 701 123 45 67. Oak dining table 180 cm (TB-180), 2x3 m rug, 10 chairs, since 2019; "
            "we work 10:00-20:00.",
            "hi",
        )
        == []
    )


def test_dates_and_clock_times_must_be_written_in_the_rules():
    assert order("We can deliver on 12.05.", "when?") == ["date '12.05' not in the business rules"]
    assert order("Your chair will be ready on 3 мая.", "когда?") == [
        "date '3 мая' not in the business rules"
    ]
    assert order("We can bring it at 21:30.", "when?") == ["time '21:30' not in the business rules"]
    assert order("We work 10:00-20:00.", "hours?") == []


def test_percentages_as_words_and_off():
    assert order("10 percent off today!", "chair?") == ["discount 10% not in the price list"]
    assert order("Для вас скидка 15 процентов.", "скидка?") == [
        "discount 15% not in the price list"
    ]


CROSS = knowledge((*FURNITURE, item("SF-302", "Диван угловой Бостон", "420000")))


@pytest.mark.parametrize(
    ("asked", "reply", "found"),
    [
        # The case: the list names it in Russian, the reply in English.
        (
            "how much is the Boston corner sofa?",
            "the price of the Boston corner sofa is 420 000 KZT",
            [],
        ),
        ("how much is the Boston corner sofa?", "It is 420 000 KZT.", []),
        (
            "how much is the Boston corner sofa?",
            "It is 310 000 KZT.",
            ["price 310 000 KZT is not the price of Диван угловой Бостон"],
        ),
        ("how much is the bar stool?", "Барный стул Лофт — 32 000 тг", []),
        ("сколько стоит офисное кресло Люкс?", "Office chair Lux — 45 000 тг", []),
        ("2 bar stools Loft", "2 × 32 000 = 64 000 KZT", []),
    ],
)
def test_items_are_bound_across_languages_and_scripts(asked, reply, found):
    assert [f.text for f in guardrails.findings(reply, turn(asked), CROSS, CONFIG)] == found


# A building-materials list: quantities in bags, sheets and square metres. A reply that quotes
# the unit prices and totals them as if one of each was asked for is not proven.
BUILDING = (
    item("CEM-400", "Цемент М400", "3200", unit="мешок 50 кг"),
    item("GKL", "Гипсокартон Knauf стеновой", "2900", unit="лист"),
    item("TILE", "Плитка настенная белая", "4200", unit="м²"),
)


def building(reply: str, asked: str) -> list[str]:
    decision = Decision(action=Action.ANSWER, reply_to_customer=reply)
    return check_against(decision, turn(asked), knowledge(BUILDING), CONFIG).blocked


def test_a_total_that_ignores_the_customers_quantities_is_not_proven():
    asked = "30 мешков цемента и 15 листов гипсокартона, сколько всего?"
    blind = "Цемент М400: 3 200 ₸\nГипсокартон Knauf стеновой: 2 900 ₸\nИтого: 6 100 ₸"
    assert building(blind, asked) == [
        "total 6 100 KZT is not the sum of the lines above (139 500 KZT)"
    ]
    right = (
        "Цемент М400: 30 × 3 200 ₸ = 96 000 ₸\n"
        "Гипсокартон Knauf стеновой: 15 × 2 900 ₸ = 43 500 ₸\nИтого: 139 500 ₸"
    )
    assert building(right, asked) == []
    # Unit prices stated as such, with the total at the customer's quantities, are proven.
    assert building("Цемент 3 200 ₸ за мешок, итого за 30 мешков 96 000 ₸", asked) == []


def test_a_line_for_another_quantity_than_this_turn_gave_is_not_proven():
    asked = "плитка настенная 12,5 кв.м сколько?"
    assert building("Плитка настенная белая: 12,5 × 4 200 ₸ = 52 500 ₸", asked) == []
    assert building("Плитка настенная белая: 1 × 4 200 ₸ = 4 200 ₸", asked) == [
        "1 × 4 200 KZT: the customer did not ask for 1 × Плитка настенная белая"
    ]


def test_an_amount_with_a_currency_is_read_whatever_its_size():
    # 3 200 a bag written a hundred times too small.
    assert building("Цемент М400: 100 × 32 KZT = 3 200 KZT", "100 мешков цемента") == [
        "price 32 KZT not in the price list"
    ]
