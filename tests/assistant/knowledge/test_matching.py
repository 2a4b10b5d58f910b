"""Which item a customer names, as they write it: across languages and scripts, with typos,
aliases and several items with their own quantities in one message."""

from __future__ import annotations

import pytest

from assistant.knowledge.effective import Knowledge
from assistant.knowledge.matching import segments
from assistant.knowledge.transliteration import skeleton
from tests.assistant.builders import item, knowledge

SHOP = knowledge(
    (
        item("SF-1", "Диван угловой Бостон", "420000"),
        item("SF-2", "Sofa Milano 3-seat", "310000"),
        item("CH-1", "Office chair Lux", "45000"),
        item("KR-1", "Кресло офисное Комфорт", "54000"),
        item("TB-1", "Oak dining table 180", "189000"),
        item("CH-2", "Oak dining chair", "32000"),
        item("CT-1", "Coffee table", "54000"),
        item("ST-1", "Bar stool", "28900"),
        item("AU-1", "Масляный фильтр Toyota", "3500"),
        item("AU-2", "Щётки стеклоочистителя Bosch 600мм", "7800"),
        item("FL-1", "Тюльпаны микс 11 шт", "9900"),
        item("FL-2", "Пионы розовые 5 шт", "15000", aliases=("peony bouquet", "пионы букет")),
    )
)


def named(text: str, shop: Knowledge = SHOP) -> list[tuple[list[str], int]]:
    lines = shop.catalogue.order_lines(text)
    return [([shop.items[m.index].name for m in group], qty) for group, qty in lines]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("how much is the Boston corner sofa?", "Диван угловой Бостон"),
        ("диван милано есть?", "Sofa Milano 3-seat"),
        ("сколько стоит офисное кресло люкс", "Office chair Lux"),
        ("Komfort office armchair price", "Кресло офисное Комфорт"),
        ("oil filter for a toyota", "Масляный фильтр Toyota"),
        ("масляный фильтр на тойоту", "Масляный фильтр Toyota"),
        ("bosch wipers", "Щётки стеклоочистителя Bosch 600мм"),
        ("How much are the tulips?", "Тюльпаны микс 11 шт"),
        ("тюльпандар бар ма?", "Тюльпаны микс 11 шт"),
    ],
)
def test_a_product_is_found_across_languages_and_scripts(text, expected):
    assert named(text) == [([expected], 1)]


def test_an_alias_names_the_item_like_its_name():
    assert named("a peony bouquet please") == [(["Пионы розовые 5 шт"], 1)]


def test_an_exact_name_is_a_clear_match_even_when_other_names_share_its_words():
    assert named("Oak dining chair") == [(["Oak dining chair"], 1)]
    assert named("Office chair Lux") == [(["Office chair Lux"], 1)]


def test_the_name_in_the_customers_own_words_beats_a_translated_one():
    assert named("2 ofice chiars") == [(["Office chair Lux"], 2)]


def test_a_general_word_alone_stays_ambiguous():
    [(group, _qty)] = named("стулья")
    assert sorted(group) == ["Oak dining chair", "Office chair Lux"]


def test_a_word_of_one_language_means_what_it_means_there():
    # кресло is an armchair, стул is not; an English office chair is a кресло.
    [(group, _qty)] = named("сколько стоит кресло?")
    assert sorted(group) == ["Office chair Lux", "Кресло офисное Комфорт"]
    [(group, _qty)] = named("how much is a chair?")
    assert sorted(group) == ["Oak dining chair", "Office chair Lux", "Кресло офисное Комфорт"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Oak dining table 180 cm and 4 oak dining chairs",
            [(["Oak dining table 180"], 1), (["Oak dining chair"], 4)],
        ),
        ("a coffee table and 2 bar stools", [(["Coffee table"], 1), (["Bar stool"], 2)]),
        ("2 bar stools, coffee table", [(["Bar stool"], 2), (["Coffee table"], 1)]),
        (
            "стол обеденный 180 и 6 стульев дуб",
            [(["Oak dining table 180"], 1), (["Oak dining chair"], 6)],
        ),
        ("bar stool x3", [(["Bar stool"], 3)]),
        # The "3" is the count, though another item's name ("Sofa Milano 3-seat") has one too.
        ("хочу 3 дивана бостон", [(["Диван угловой Бостон"], 3)]),
        ("скидка 20% на 3 дивана бостон будет?", [(["Диван угловой Бостон"], 3)]),
    ],
)
def test_each_quantity_belongs_to_the_item_it_stands_next_to(text, expected):
    assert named(text) == expected


def test_sizes_and_amounts_are_not_quantities():
    assert named("oak dining table 180 cm") == [(["Oak dining table 180"], 1)]
    assert named("bar stool for 30 000 тг") == [(["Bar stool"], 1)]


def test_a_stray_word_beside_the_product_adds_no_second_item():
    shop = knowledge(
        (
            item("D-1", "Отбеливание Zoom 4", "90000"),
            item("D-2", "Удаление зуба простое", "8000"),
            item("D-3", "Удаление зуба мудрости", "20000"),
        )
    )
    assert named("How much is teeth whitening?", shop) == [(["Отбеливание Zoom 4"], 1)]


def test_spellings_meet_across_scripts():
    assert skeleton("бостон") == skeleton("boston")
    assert skeleton("тойота") == skeleton("toyota")
    assert skeleton("камри") == skeleton("kamri") == skeleton("camri")
    assert skeleton("шымкент") == skeleton("shymkent")
    assert skeleton("сүзгі") == skeleton("suzgi")


def test_segments_split_where_a_new_thing_is_named():
    assert segments("a table and 4 chairs, a lamp") == ["a table", "4 chairs", "a lamp"]


NAILS = knowledge(
    (
        item("N-1", "Маникюр с покрытием гель-лак", "8000"),
        item("N-2", "Педикюр с покрытием гель-лак", "9500"),
        item("N-3", "Комплекс: маникюр + педикюр с покрытием гель-лак", "15500"),
        item("N-4", "Стул дубовый", "20000"),
        item("N-5", "Стул барный высокий", "25000"),
        item("N-6", "Коррекция бровей", "3500"),
        item("N-7", "Маникюр без покрытия", "5000"),
        item("N-8", "Педикюр без покрытия", "7000"),
        item("N-9", "Снятие гель-лака", "1500"),
    )
)


def test_a_set_is_named_only_when_the_message_names_what_else_it_holds():
    assert named("маникюр с покрытием сколько?", NAILS) == [(["Маникюр с покрытием гель-лак"], 1)]
    assert named("нам обеим маникюр с покрытием и мне ещё коррекцию бровей", NAILS) == [
        (["Маникюр с покрытием гель-лак"], 2),
        (["Коррекция бровей"], 1),
    ]
    # Two names that each add words of their own stay a question: which chair?
    assert named("стул", NAILS) == [(["Стул дубовый", "Стул барный высокий"], 1)]


TRADES = knowledge(
    (
        item("S-1", "Ламинирование бровей", "7000"),
        item("S-2", "Ламинирование ресниц", "8000"),
        item("S-3", "Коррекция бровей", "3500"),
        item("B-1", "Цемент М500, мешок 50 кг", "3400"),
        item("B-2", "Штукатурка гипсовая, мешок 30 кг", "2900"),
        item("L-1", "Английский для детей — группа", "24000"),
        item("L-2", "Казахский язык — группа", "22000"),
        item("L-3", "Грамматика для начинающих", "15000"),
    )
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("brow lamination", "Ламинирование бровей"),
        ("lash lamination", "Ламинирование ресниц"),
        ("қас коррекциясы", "Коррекция бровей"),
        ("cement M500", "Цемент М500, мешок 50 кг"),
        ("plaster", "Штукатурка гипсовая, мешок 30 кг"),
        ("kids English group", "Английский для детей — группа"),
        ("kazakh group", "Казахский язык — группа"),
        # No vocabulary: the borrowed word's root is shared across scripts.
        ("grammar for beginners", "Грамматика для начинающих"),
    ],
)
def test_trade_words_are_found_across_languages(text, expected):
    assert named(text, TRADES) == [([expected], 1)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("how much is a pedicure without polish?", "Педикюр без покрытия"),
        ("skolko stoit pedikur s pokrytiem", "Педикюр с покрытием гель-лак"),
        # A verb that shares a borrowed root ("complain", "комплекс") names nothing.
        ("I'm not complaining, just asking - pedicure without polish?", "Педикюр без покрытия"),
    ],
)
def test_with_and_without_read_across_languages_and_scripts(text, expected):
    assert named(text, NAILS) == [([expected], 1)]


SCHOOL = knowledge(
    (
        item("CN-GR", "Китайский язык (HSK 1–3) — группа", "32000"),
        item("CN-KID", "Китайский для детей 8–13 лет — группа", "27000"),
        item("EN-KID", "Английский для детей 7–12 лет — группа", "24000"),
        item("BK-EN", "Учебник English File", "9500"),
        item("BK-CN", "Учебник HSK Standard Course 1", "7500"),
        item("BK-KZ", "Учебное пособие по казахскому языку", "5000"),
    )
)


def test_a_childrens_course_is_meant_only_when_the_message_speaks_of_children():
    assert named("китайский в группе сколько?", SCHOOL) == [
        (["Китайский язык (HSK 1–3) — группа"], 1)
    ]
    assert named("китайский в детской группе", SCHOOL) == [
        (["Китайский для детей 8–13 лет — группа"], 1)
    ]
    # "для сына": a child, so the children's course stays one of the two to ask about.
    assert len(named("китайский в группе для сына", SCHOOL)[0][0]) == 2


def test_a_kind_of_thing_named_after_an_item_is_the_one_of_that_kind_the_item_names():
    assert named("дочке детскую группу английского + учебник", SCHOOL) == [
        (["Английский для детей 7–12 лет — группа"], 1),
        (["Учебник English File"], 1),
    ]


def test_a_word_only_a_description_holds_picks_the_item_beside_whose_name_it_stands():
    breads = knowledge(
        (
            item("B-1", "Хлеб «Бородинский»", "650"),
            item("B-2", "Хлеб «Деревенский»", "1200", description="Бездрожжевой, на закваске"),
            item("B-3", "Хлеб белый пшеничный", "350"),
        )
    )
    assert named("бездрожжевой хлеп есть у вас?", breads) == [(["Хлеб «Деревенский»"], 1)]
    assert named("хлеб есть?", breads)[0][0] == [
        "Хлеб «Бородинский»",
        "Хлеб «Деревенский»",
        "Хлеб белый пшеничный",
    ]


SERVICES = knowledge(
    (
        item("C-1", "Генеральная уборка квартиры", "450", unit="м²"),
        item("C-2", "Поддерживающая уборка квартиры", "250", unit="м²"),
        item("C-3", "Мытьё духовки внутри", "3500"),
        item("V-1", "Вакцинация кошки комплексная", "6500"),
        item("V-2", "Вакцинация собаки комплексная", "7500"),
        item("P-1", "Капкейк", "700"),
    )
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("deep clean for a flat", "Генеральная уборка квартиры"),
        ("inside the oven", "Мытьё духовки внутри"),
        ("мысыққа прививка қанша?", "Вакцинация кошки комплексная"),
        ("щенку комплексную прививку", "Вакцинация собаки комплексная"),
        ("a dozen cupcakes", "Капкейк"),
    ],
)
def test_service_and_shop_words_are_found_across_languages(text, expected):
    assert [group for group, _qty in named(text, SERVICES)] == [[expected]]


def test_a_name_with_a_son_in_it_is_no_childrens_course_and_a_unit_no_description():
    barber = knowledge(
        (
            item("B-1", "Детская стрижка (до 12 лет)", "3500"),
            item("B-2", "Отец + сын (две стрижки)", "8000"),
            item("P-20", "Труба ППР PN20 20 мм", "350", unit="м", description="режем от 1 метра"),
            item("P-25", "Труба ППР PN20 25 мм", "520", unit="м"),
        )
    )
    assert named("детская стрижка сколько? балам 7 жаста", barber)[0][0] == [
        "Детская стрижка (до 12 лет)"
    ]
    assert named("полтора метра трубы ППР 25", barber) == [(["Труба ППР PN20 25 мм"], 1.5)]
