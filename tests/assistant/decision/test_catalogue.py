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
    assert "Office chair Lux" in first.reply_to_customer
    assert "Kitchen chair Oak" in first.reply_to_customer
    assert "KZT" not in first.reply_to_customer  # prices come with the answer, not the question
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


# --- what customers write: denials, rules, context, orders, agreements, wording ------------

RULES = AssistantSettings(
    business_rules="Доставка по Алматы 1-2 дня, 3 000 тг; при заказе от 300 000 тг доставка "
    "бесплатная. Сборка мебели 5 000 тг за заказ. Работаем ежедневно с 10:00 до 20:00. "
    "Оплата: Kaspi, карта, наличные; рассрочка Kaspi 0-0-12 на заказ от 100 000 тг.\n"
    "Delivery in Almaty takes 1-2 days and costs 3 000 KZT; assembly 5 000 KZT per order. "
    "Open daily 10:00-20:00."
)


def decide_with_rules(*messages, history=None):
    return catalogue.decide(turn(*messages, history=history), knowledge(), RULES)


@pytest.mark.parametrize(
    "message",
    [
        "Don't call me, just text me the price of the Office chair Lux",
        "Не надо звать менеджера, просто скажите цену кресла Комфорт",
        "Менеджер не нужен, сколько стоит кухонный стул?",
        "I'm not complaining, just asking how much the Sofa Milano is",
        "шағым емес, Milano диван бағасы қанша?",
        "без менеджера пожалуйста, цена на барный стул",
        "I don't want to buy yet, just the price of the kitchen chair",
    ],
)
def test_a_denied_request_asks_for_nothing_and_the_question_is_answered(message):
    d = decide(message)
    assert d.action == Action.ANSWER, d.reply_to_customer
    assert "KZT" in d.reply_to_customer


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("I don't want to wait, call me", "asks_for_human"),
        ("соедините с консультантом пожалуйста", "asks_for_human"),
        ("the chair you sold me broke after a week and nobody answers", "complaint"),
        ("курьер опоздал на 4 часа", "complaint"),
        ("ok let's do the kitchen chairs, send them today", "ready_to_buy"),
        ("so how much is the office chair then? I want 2", "ready_to_buy"),
        ("если возьму 10 стульев, скинете?", "non_standard_terms"),
        ("можно оплатить через неделю после получения?", "non_standard_terms"),
    ],
)
def test_what_customers_mean_decides_the_reason(message, reason):
    assert (decide(message).action, decide(message).reason) == (Action.HANDOFF, reason)


def test_a_supposition_is_not_a_complaint():
    assert decide("если не подойдёт, можно вернуть?").reason != "complaint"


@pytest.mark.parametrize(
    ("message", "quoted"),
    [
        ("how much is delivery within Almaty?", "costs 3 000 KZT"),
        ("сколько стоит сборка?", "Сборка мебели 5 000 тг за заказ."),
        ("до скольки вы работаете?", "Работаем ежедневно с 10:00 до 20:00."),
        ("можно картой оплатить?", "Оплата: Kaspi, карта, наличные"),
        ("рассрочка есть?", "рассрочка Kaspi 0-0-12"),
    ],
)
def test_a_question_the_business_rules_answer_quotes_the_rule(message, quoted):
    d = decide_with_rules(message)
    assert d.action == Action.ANSWER
    assert quoted in d.reply_to_customer


def test_a_rule_about_another_city_does_not_answer():
    d = decide_with_rules("Do you deliver to Astana?")
    assert d.action == Action.CLARIFY


def test_special_terms_the_rules_do_not_give_are_handed_off():
    d = decide_with_rules("рассрочка на 24 месяца есть?")
    assert (d.action, d.reason) == (Action.HANDOFF, "non_standard_terms")


def test_a_total_with_delivery_counts_the_rules_fee():
    d = decide_with_rules("2 kitchen chairs with delivery, how much in total?")
    assert d.reply_to_customer.splitlines()[:3] == [
        "Kitchen chair Oak: 2 × 28 000 KZT = 56 000 KZT (in stock)",
        "Delivery: 3 000 KZT",
        "Total: 59 000 KZT",
    ]


def test_each_quantity_stays_with_its_item_in_the_reply():
    d = decide("Oak dining table 200 and 4 kitchen chairs, how much?")
    assert d.reply_to_customer.splitlines() == [
        "Oak dining table 200: 150 000 KZT (in stock)",
        "Kitchen chair Oak: 4 × 28 000 KZT = 112 000 KZT (in stock)",
        "Total: 262 000 KZT",
    ]


def test_the_which_one_question_expires_when_the_customer_asks_something_else():
    first = decide_with_rules("how much is a chair?")
    assert first.action == Action.CLARIFY
    history = [
        entry("customer", "how much is a chair?", 1),
        entry("bot", first.reply_to_customer, 2),
    ]
    second = decide_with_rules("nvm, how much is delivery in Almaty?", history=history)
    assert second.action == Action.ANSWER
    assert "3 000 KZT" in second.reply_to_customer
    third = decide_with_rules("the Sofa Milano then", history=history)
    assert third.reply_to_customer.startswith("Sofa Milano 3-seat: 310 000 KZT")


def test_an_ordinal_picks_an_option_of_the_which_one_question():
    first = decide("how much for 2 oak dining tables?")
    history = [
        entry("customer", "how much for 2 oak dining tables?", 1),
        entry("bot", first.reply_to_customer, 2),
    ]
    second = decide("the second one", history=history)
    assert second.reply_to_customer.startswith("Oak dining table 200: 2 × 150 000 KZT")


def test_a_price_a_manager_agreed_is_quoted_instead_of_the_list_price():
    history = [
        entry("customer", "any discount on the Office chair Lux?", 1),
        entry("manager", "For you the Office chair Lux is 40 000 KZT instead of 45 000.", 2),
        entry("system", "Chat returned to the assistant", 3),
    ]
    d = decide("how much for 2 office chairs lux then?", history=history)
    assert d.action == Action.ANSWER
    assert d.reply_to_customer.startswith(
        "Office chair Lux: 2 × 40 000 KZT = 80 000 KZT (as agreed with the manager; in stock)"
    )
    bought = decide("great, I'll take 2 office chairs lux", history=history)
    assert (bought.action, bought.reason) == (Action.HANDOFF, "ready_to_buy")
    assert "80 000 KZT" in bought.reply_to_customer
    assert "45 000" not in bought.reply_to_customer


def test_a_price_agreed_for_another_quantity_is_handed_off():
    history = [
        entry("manager", "Kitchen chair Oak: 10 chairs for 250 000 KZT.", 1),
        entry("system", "Chat returned to the assistant", 2),
    ]
    d = decide("and 3 kitchen chairs?", history=history)
    assert (d.action, d.reason) == (Action.HANDOFF, "non_standard_terms")


@pytest.mark.parametrize(
    ("message", "line"),
    [
        ("kitchen chairs oak, 5 of them, how much?", "Kitchen chair Oak: 5 × 28 000 KZT"),
        ("барные стулья, штуки 3, почём?", "Стул барный Лофт: 3 × 32 000 KZT"),
        ("office chair lux, 7 pcs, price?", "Office chair Lux: 7 × 45 000 KZT"),
        ("стул барный лофт, штук пять и всё", "Стул барный Лофт: 5 × 32 000 KZT"),
    ],
)
def test_a_count_given_after_the_item_is_its_quantity(message, line):
    d = decide(message)
    assert d.action == Action.ANSWER, d.reply_to_customer
    assert line in d.reply_to_customer


@pytest.mark.parametrize(
    "message",
    [
        "the delivery guy never turned up and I stayed home all morning for nothing",
        "третий раз переносите доставку, сколько можно",
        "жду шкаф уже четвертую неделю, ни ответа ни привета",
        "the sofa you brought is leaking some oil on the floor",
        "I waited for two hours at the showroom and nobody came out to me",
        "екінші рет кешігіп жатырсыздар",
    ],
)
def test_a_complaint_without_the_obvious_words_is_handed_off_without_a_price(message):
    d = decide(message)
    assert (d.action, d.reason) == (Action.HANDOFF, "complaint")
    assert "KZT" not in d.reply_to_customer


@pytest.mark.parametrize(
    "message",
    [
        "is there anyone at your shop I can message with about this?",
        "could a real human reply to me please, not a bot",
        "хочу пообщаться напрямую с сотрудником салона",
        "вы вообще живой или робот?",
        "маманмен сөйлесуге бола ма?",
    ],
)
def test_a_person_asked_for_in_other_words_is_handed_off(message):
    d = decide(message)
    assert (d.action, d.reason) == (Action.HANDOFF, "asks_for_human")


@pytest.mark.parametrize(
    "message",
    [
        "can you keep the Sofa Milano for me until next Friday?",
        "придержите кухонный стул до зарплаты, пожалуйста",
        "could I pay for the oak table over 8 months?",
        "айлық алғанша Milano диванды сақтап қойыңызшы",
    ],
)
def test_holding_an_item_or_paying_later_is_a_request_for_special_terms(message):
    d = decide_with_rules(message)
    assert (d.action, d.reason) == (Action.HANDOFF, "non_standard_terms")


@pytest.mark.parametrize(
    ("message", "quoted"),
    [
        ("подождите со стулом. вы по субботам открыты?", "Работаем ежедневно"),
        ("ладно, потом. а сборкой вы занимаетесь?", "Сборка мебели 5 000 тг за заказ."),
        ("hold on, first: are you open on sundays?", "Open daily 10:00-20:00"),
    ],
)
def test_a_new_question_after_which_one_is_read_on_its_own(message, quoted):
    first = decide_with_rules("how much is a chair?")
    assert first.action == Action.CLARIFY
    history = [
        entry("customer", "how much is a chair?", 1),
        entry("bot", first.reply_to_customer, 2),
    ]
    d = decide_with_rules(message, history=history)
    assert d.action == Action.ANSWER, (d.reason, d.reply_to_customer)
    assert quoted in d.reply_to_customer


def test_a_russian_word_in_latin_letters_names_the_product():
    d = decide("stul barnyi skolko stoit?")
    assert d.reply_to_customer.startswith("Стул барный Лофт: 32 000 KZT")


def test_how_much_it_will_come_to_is_a_price_question_not_the_hours():
    d = decide_with_rules("барный стул во сколько мне обойдётся?")
    assert d.action == Action.ANSWER
    assert "32 000 KZT" in d.reply_to_customer
    assert "10:00" not in d.reply_to_customer


@pytest.mark.parametrize("message", ["адрес скиньте пожалуйста", "скиньте фото стула"])
def test_asking_to_be_sent_something_is_not_asking_for_a_discount(message):
    assert decide(message).reason != "non_standard_terms"


def test_a_fuzzy_word_in_a_request_for_a_person_does_not_quote_a_product():
    d = decide("can I chat directly with somebody from your team?")
    assert (d.action, d.reason) == (Action.HANDOFF, "asks_for_human")
    assert "KZT" not in d.reply_to_customer


@pytest.mark.parametrize(
    ("message", "not_reason"),
    [
        ("привезите через 3 дня вместо пятницы", "complaint"),
        ("жду вас завтра после обеда", "complaint"),
        ("is a wait of 3 weeks normal for the oak table?", "complaint"),
        ("гарантия на 24 месяца?", "non_standard_terms"),
        ("delivery within 2 days possible?", "non_standard_terms"),
        ("живые розы есть в наличии?", "asks_for_human"),
        ("second time ordering from you, what does the bar stool cost?", "complaint"),
    ],
)
def test_words_that_only_resemble_a_reason_do_not_hand_off_for_it(message, not_reason):
    assert catalogue.detect_intent(message) != not_reason


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("the wardrobe we paid for still isn't here", "complaint"),
        ("шкаф әлі келген жоқ, бір апта болды", "complaint"),
        ("could I arrange a call with someone tomorrow?", "asks_for_human"),
        ("is anybody real reading this?", "asks_for_human"),
        ("I'd pay half today and the rest after delivery, ok?", "non_standard_terms"),
        ("половину сейчас, остальное после доставки — так можно?", "non_standard_terms"),
    ],
)
def test_more_ways_of_saying_a_reason(message, reason):
    d = decide(message)
    assert (d.action, d.reason) == (Action.HANDOFF, reason)
