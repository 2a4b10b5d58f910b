"""The catalogue assistant on trades it has no words for: what tells items apart is read from
the list itself (options "with"/"without", sizes and letter codes in names, descriptions), the
bot's own question in any words, and the list's words are never an intent."""

from assistant.decision import catalogue
from assistant.models import AssistantSettings
from assistant.schema import Action
from inbox.conversations.models import HandoffReason
from tests.assistant.builders import entry, item, knowledge, turn

SALON = (
    item("MANI-0", "Маникюр без покрытия", "4000"),
    item("MANI-GEL", "Маникюр с покрытием гель-лак", "8000"),
    item("BROW", "Коррекция бровей", "3000"),
)
SHOP = (
    item("CEM-400", "Цемент М400, мешок 50 кг", "3200", unit="мешок"),
    item("CEM-500", "Цемент М500, мешок 50 кг", "3600", unit="мешок"),
    item("KLEY", "Клей для плитки Ceresit CM 11", "3400", unit="мешок"),
    item("KLEBER", "Смесь кладочная Kleber", "2600", unit="мешок",
         description="тонкошовный клей для газоблока и пеноблока"),
    item("OSB-9", "Плита OSB-3 9 мм", "5200", unit="лист"),
    item("OSB-12", "Плита OSB-3 12 мм", "6800", unit="лист"),
)  # fmt: skip
FOOD = (
    item("RC-2", "Royal Canin Mini Adult, 2 кг", "9800"),
    item("RC-8", "Royal Canin Mini Adult, 8 кг", "29500"),
)
SCHOOL = (
    item("EN-IND", "Английский — индивидуальное занятие", "7000", unit="занятие"),
    item("EN-GR", "Английский — группа", "28000", unit="месяц"),
)
CONFIG = AssistantSettings()


def decide(items, message, history=None):
    return catalogue.decide(turn(message, history=history), knowledge(items), CONFIG)


def test_an_option_with_a_thing_is_not_the_one_without_it():
    assert decide(SALON, "маникюр с покрытием сколько?").reply_to_customer.startswith(
        "Маникюр с покрытием гель-лак: 8 000 KZT"
    )
    assert decide(SALON, "маникюр без покрытия почем").reply_to_customer.startswith(
        "Маникюр без покрытия: 4 000 KZT"
    )


def test_a_letter_code_or_a_size_in_the_name_tells_items_apart():
    assert "Цемент М500" in decide(SHOP, "20 мешков М500 сколько").reply_to_customer
    assert "20 × 3 600 KZT = 72 000 KZT" in decide(SHOP, "20 мешков М500 сколько").reply_to_customer
    two_kg = decide(FOOD, "роял канин 2-килограммовый сколько").reply_to_customer
    assert two_kg.startswith("Royal Canin Mini Adult, 2 кг: 9 800 KZT")


def test_an_item_is_named_by_what_its_description_says():
    reply = decide(SHOP, "клей для газоблока есть? сколько мешок").reply_to_customer
    assert reply.startswith("Смесь кладочная Kleber: 2 600 KZT")


def test_the_bots_own_question_in_any_words_is_answered_by_a_detail():
    history = [
        entry("customer", "OSB есть? надо листов 8", 1),
        entry("bot", "Есть OSB 9 мм и 12 мм. Какая толщина нужна?", 2),
    ]
    reply = decide(SHOP, "12 мм", history=history).reply_to_customer
    assert reply.startswith("Плита OSB-3 12 мм")


def test_which_one_names_the_candidates_without_prices():
    first = decide(SALON, "маникюр сколько стоит?")
    assert first.action == Action.CLARIFY
    assert "Маникюр без покрытия" in first.reply_to_customer
    assert "KZT" not in first.reply_to_customer


def test_the_lists_own_words_are_no_request_for_special_terms():
    plain = decide(SCHOOL, "индивидуальные занятия по английскому сколько стоят?")
    assert plain.action == Action.ANSWER
    assert "7 000 KZT" in plain.reply_to_customer
    asked = decide(SCHOOL, "сделаете скидку 20% на группу?")
    assert (asked.action, asked.reason) == (Action.HANDOFF, HandoffReason.NON_STANDARD_TERMS)


def test_damaged_goods_are_a_complaint_whatever_the_product():
    d = decide(SHOP, "привезли цемент М500, три мешка рваные, кто будет возмещать?")
    assert (d.action, d.reason) == (Action.HANDOFF, HandoffReason.COMPLAINT)
