"""Units and quantities in any trade: what one priced unit of an item is, and how many of them
a customer's words ask for, in Russian, Kazakh and English."""

from decimal import Decimal

import pytest

from assistant.decision import catalogue
from assistant.knowledge.matching import (
    Party,
    format_quantity,
    measure_of,
    minimum_of,
    party_of,
    quantity_in,
)
from assistant.knowledge.matching.units import Family, family_of
from assistant.models import AssistantSettings
from tests.assistant.builders import item, knowledge, turn


@pytest.mark.parametrize(
    ("unit", "family", "size", "holds"),
    [
        ("м²", Family.AREA, "1", None),
        ("m2", Family.AREA, "1", None),
        ("мешок 50 кг", Family.BAG, "1", (Family.MASS, "50")),
        ("упаковка (2,16 м²)", Family.PACK, "1", (Family.AREA, "2.16")),
        ("100 г", Family.MASS, "0.1", None),
        ("пог. м", Family.LENGTH, "1", None),
        ("месяц", Family.MONTH, "1", None),
        ("8 занятий", Family.PACK, "1", (Family.LESSON, "8")),
        ("лист", Family.SHEET, "1", None),
        ("шт", Family.PIECE, "1", None),
        ("стр.", Family.PAGE, "1", None),
        ("100 шт", Family.PACK, "1", (Family.PIECE, "100")),  # business cards by the hundred
    ],
)
def test_the_unit_column_says_what_one_priced_unit_is(unit, family, size, holds):
    measure = measure_of(unit)
    assert measure is not None
    assert (measure.family, measure.size) == (family, Decimal(size))
    assert measure.holds == (None if holds is None else (holds[0], Decimal(holds[1])))


def test_a_column_without_a_known_unit_is_no_measure():
    assert measure_of("") is None
    assert measure_of("бутылка") is None


@pytest.mark.parametrize(
    ("text", "unit", "expected"),
    [
        ("нужно 12 кв.м плитки", "м²", "12"),
        ("12м2", "м²", "12"),
        ("на 30 квадратов", "м²", "30"),
        ("12,5 кв м", "м²", "12.5"),
        ("30 мешков цемента и 15 листов", "мешок 50 кг", "30"),  # the bags, not the sheets
        ("цемент 5 қап", "мешок", "5"),
        ("10 мешков по 50 кг", "мешок 50 кг", "10"),  # the bag count beats what a bag holds
        ("2 тонны", "мешок 50 кг", "40"),
        ("ламинат на 20 m2", "упаковка 2,16 м²", "10"),  # whole packs, rounded up
        ("4 куска по 6 метров", "пог. м", "24"),
        ("3 pieces of 6 m", "m", "18"),
        ("1 кг печенья", "100 г", "10"),
        ("for 3 months", "месяц", "3"),
        ("2 ай", "месяц", "2"),
        ("16 занятий", "8 занятий", "2"),
        ("распечатать 150 страниц", "стр.", "150"),
        ("вес 3 кг", "кг", "3"),
        ("2 келі", "кг", "2"),
        ("полтора кило", "кг", "1,5"),
    ],
)
def test_a_quantity_counts_in_the_unit_the_item_is_sold_in(text, unit, expected):
    measure = measure_of(unit)
    assert measure is not None
    assert quantity_in(text, measure) == Decimal(expected.replace(",", "."))


def test_a_quantity_in_another_unit_is_none_of_the_items():
    assert quantity_in("15 листов", measure_of("мешок")) is None  # type: ignore[arg-type]
    assert quantity_in("на 12:00", measure_of("шт")) is None  # type: ignore[arg-type]


def test_short_unit_words_are_whole_words_not_beginnings():
    assert family_of("kitchen") is None  # not a "kit"
    assert family_of("парковка") is None  # not a "пара"
    assert family_of("bags") == (Family.BAG, Decimal(1))


def test_quantities_are_written_without_trailing_zeros():
    assert format_quantity(Decimal("30.00")) == "30"
    assert format_quantity(Decimal("12.50")) == "12,5"
    assert format_quantity(Decimal("3E+1")) == "30"


BUILDING = (
    item("CEM-400", "Цемент М400", "3200", unit="мешок 50 кг"),
    item("GKL", "Гипсокартон Knauf стеновой", "2900", unit="лист"),
    item("LAM-33", "Ламинат Kronostar 33 класс", "11500", unit="упаковка 2,4 м²"),
    item("TILE", "Плитка настенная белая", "4200", unit="м²"),
    item("SCREW", "Саморез кровельный", "45", unit="шт"),
    item("BRUS", "Брус сосна 50x100", "1300", unit="пог. м"),
    item("ENG", "English group course", "28000", unit="месяц"),
)


def answer(message: str) -> str:
    decision = catalogue.decide(turn(message), knowledge(BUILDING), AssistantSettings())
    return decision.reply_to_customer


def test_the_catalogue_assistant_prices_quantities_in_the_items_units():
    reply = answer("30 мешков цемента и 15 листов гипсокартона, сколько всего?")
    assert "30 × 3 200 KZT = 96 000 KZT" in reply
    assert "15 × 2 900 KZT = 43 500 KZT" in reply
    assert "139 500 KZT" in reply
    assert "12,5 × 4 200 KZT = 52 500 KZT" in answer("плитка настенная 12,5 кв.м")
    assert "9 × 11 500 KZT = 103 500 KZT" in answer("ламинат 33 класс на 20 квадратов")
    assert "200 × 45 KZT = 9 000 KZT" in answer("саморез кровельный 200 шт")
    assert "24 × 1 300 KZT = 31 200 KZT" in answer("брус 50x100 4 куска по 6 метров")
    assert "3 × 28 000 KZT = 84 000 KZT" in answer("english group course for 3 months")
    assert "5 × 3 200 KZT = 16 000 KZT" in answer("цемент 5 қап қанша")


@pytest.mark.parametrize(
    ("description", "unit", "least"),
    [
        ("Минимум 2 часа. Время считается с подачи машины.", "час", "2"),
        ("Цена за 1 грузчика в час, минимум 3 часа.", "час", "3"),
        ("Минимальный вес 1,5 кг. Медовые коржи.", "кг", "1.5"),
        ("Минимум 500 г.", "кг", "0.5"),
        ("Разовая или регулярная, от 50 м².", "м²", "50"),
        ("Price per hour, minimum 3 hours.", "hour", "3"),
        ("Кемінде 2 сағат.", "сағат", "2"),
        # An age, a price, a threshold in pieces: no least quantity.
        ("Взрослые и подростки от 14 лет.", "месяц", None),
        ("От 25 000 тг, итог зависит от этажа.", "шт", None),
        ("Скидка от 5 шт.", "шт", None),
        ("", "час", None),
    ],
)
def test_the_least_quantity_a_description_states_is_read_in_the_items_unit(
    description, unit, least
):
    expected = Decimal(least) if least is not None else None
    assert minimum_of(description, measure_of(unit)) == expected


@pytest.mark.parametrize(
    ("text", "people", "children"),
    [
        ("нас трое", 3, ()),
        ("Нас 10 человек, хотим на озеро", 10, ()),
        ("We are 5 from Germany", 5, ()),
        ("there are 4 of us", 4, ()),
        ("на двоих", 2, ()),
        ("біз үшеуміз", 3, ()),
        ("2 взрослых и ребёнок 8 лет", 2, (8,)),
        ("2 adults and 2 kids (6 and 11)", 2, (6, 11)),
        ("Екі ересек және бір бала (7 жаста)", 2, (7,)),
        ("двое детей 4 и 9 лет и 2 взрослых", 2, (4, 9)),
        ("а если с нами ещё ребёнок 10 лет?", None, (10,)),
        ("2 взрослых и ребёнок", 2, (None,)),
    ],
)
def test_who_the_order_is_for_is_read_with_childrens_ages(text, people, children):
    assert party_of(text) == Party(people, children)


@pytest.mark.parametrize("text", ["3 часа", "2 грузчика", "детали 2 шт", "на 2 дня"])
def test_counts_of_other_things_are_no_party(text):
    assert party_of(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("ковёр 3 на 4 метра", "12"),
        ("ковер 2х3 постирать", "6"),
        ("kilem juu qansha? 2x4 metr", "8"),
        ("carpet 2.5 by 3 m", "7.5"),
        ("ковёр 200х300 см", "6"),
        ("окно 1,2 на 1,5 м", "1.8"),
        # An area written wins; a tile's own "60х60" is no area.
        ("керамогранит 60х60 серый 30 квадратов", "30"),
        ("керамогранит 60х60", None),
        ("ковер 200х300", None),
    ],
)
def test_two_sides_give_the_area_of_a_thing_sold_by_the_square_metre(text, expected):
    area = quantity_in(text, measure_of("м²"))
    assert area == (Decimal(expected) if expected is not None else None)
