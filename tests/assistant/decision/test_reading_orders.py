"""Reading an order on a list the assistant was not tuned for: what is a charge for a thing and
what is the thing, what the rules say in their own words, counts among an item's words, sizes
in a name, items out of stock beside a total, fees the list also sells, places in any case."""

from assistant.decision import catalogue
from assistant.decision.guardrails import check_against
from assistant.models import AssistantSettings, Availability
from assistant.schema import Action
from tests.assistant.builders import entry, item, knowledge, turn

WATER = (
    item("W-19", "Вода питьевая 19 л", "1500", unit="бутыль"),
    item("W-DEP", "Залог за бутыль 19 л", "3500", unit="бутыль"),
    item("W-6", "Вода 1,5 л, упаковка 6 шт", "1650", unit="упаковка"),
    item("SUGAR", "Сахар-песок", "550", unit="кг"),
    item("TEA", "Чай чёрный", "1300", unit="пачка",
         availability=Availability.OUT_OF_STOCK),
)  # fmt: skip
WATER_RULES = (
    "Доставка по Алматы бесплатная от 7 000 тг, иначе 700 тг. Подъём бутылей без лифта — 100 тг "
    "за каждую бутыль за каждый этаж выше первого. Мастер выезжает на санобработку кулера в "
    "течение двух дней, выезд 2 000 тг."
)
HARDWARE = (
    item("VVG-315", "Кабель ВВГнг 3х1.5", "420", unit="м"),
    item("VVG-325", "Кабель ВВГнг 3х2.5", "650", unit="м"),
    item("PPR-20", "Труба ППР PN20 20 мм", "350", unit="м"),
    item("TYT", "Герметик силиконовый Tytan 280 мл", "2400"),
)
SEATS = (
    item("DRY-F", "Химчистка сиденья (ткань)", "4500", unit="сиденье"),
    item("WASH-S", "Мойка кузова — седан", "3500", unit="авто"),
    item("WASH-J", "Мойка кузова — внедорожник", "5000", unit="авто"),
)
SEAT_RULES = (
    "Класс авто: седан, хэтчбек — «седан»; рамные внедорожники (Land Cruiser Prado, Nissan "
    "Patrol) — «внедорожник»."
)
SHOP = (
    item("BED", "Single bed 90", "89000", aliases=("Односпальная кровать 90",)),
    item("MAT", "Mattress 90 x 200", "64000", aliases=("Матрас 90 x 200",)),
    item("DLV", "Delivery within Almaty", "5000", unit="order",
         aliases=("Доставка по Алматы",)),
)  # fmt: skip
SHOP_RULES = (
    "Доставка по Алматы — 5 000 тг за заказ; в другие города Казахстана — 15 000 тг. "
    "Сборка — 8 000 тг за каждое изделие."
)


def decide(items, message, rules="", history=None):
    config = AssistantSettings(business_rules=rules)
    return catalogue.decide(turn(message, history=history), knowledge(items), config)


def test_a_charge_for_a_thing_is_named_only_by_its_own_word():
    reply = decide(WATER, "3 бутыли воды 19 л сколько?").reply_to_customer
    assert "Вода питьевая 19 л: 3 × 1 500 KZT = 4 500 KZT" in reply
    assert "Залог" not in reply
    deposit = decide(WATER, "залог за бутыль сколько?").reply_to_customer
    assert deposit.startswith("Залог за бутыль 19 л: 3 500 KZT")


def test_an_item_out_of_stock_is_quoted_after_the_total_not_in_it():
    reply = decide(
        WATER, "2 кг сахара, упаковку воды 1,5 л и чай, сколько всего?"
    ).reply_to_customer
    lines = reply.splitlines()
    assert "Итого: 2 750 KZT" in lines  # 2 × 550 + 1 650, the tea is out of stock
    assert lines[-1].startswith("Чай чёрный: 1 300 KZT")


def test_floors_above_the_first_are_counted_from_the_second():
    reply = decide(WATER, "2 бутыли 19 л на 5 этаж, лифта нет, сколько за подъём?", WATER_RULES)
    assert "800" in reply.reply_to_customer  # 2 bottles × 4 floors × 100
    assert "1 000 KZT" not in reply.reply_to_customer


def test_a_rule_sentence_is_found_by_the_question_s_own_words():
    reply = decide(WATER, "А мастер может приехать? Сколько стоит выезд?", WATER_RULES)
    assert reply.action == Action.ANSWER
    assert "выезд 2 000 тг" in reply.reply_to_customer


def test_an_abbreviation_names_the_code_it_begins_and_a_size_in_the_name_is_no_quantity():
    cable = decide(HARDWARE, "Нужно 35 метров ВВГ 3*1,5, сколько будет?").reply_to_customer
    assert cable.startswith("Кабель ВВГнг 3х1.5: 35 × 420 KZT = 14 700 KZT")
    pipe = decide(HARDWARE, "Трубу ППР 20 мм 12 метров, сколько?").reply_to_customer
    assert pipe.startswith("Труба ППР PN20 20 мм: 12 × 350 KZT = 4 200 KZT")


def test_a_count_stands_before_what_a_piece_comes_in_or_among_the_item_s_words():
    tubes = decide(HARDWARE, "how much for 3 tubes of Tytan sealant?").reply_to_customer
    assert "3 × 2 400 KZT = 7 200 KZT" in tubes
    seats = decide(SEATS, "Надо химчистку пяти тканевых сидений, сколько выйдет?")
    assert "5 × 4 500 KZT = 22 500 KZT" in seats.reply_to_customer


def test_a_word_the_rules_define_under_a_quoted_term_reads_as_that_term():
    history = [entry("customer", "помыть кузов сколько?"),
               entry("bot", "Какой у вас автомобиль: седан или внедорожник?")]  # fmt: skip
    reply = decide(SEATS, "у меня прадо", SEAT_RULES, history=history).reply_to_customer
    assert reply.startswith("Мойка кузова — внедорожник: 5 000 KZT")


def test_the_lists_own_fee_is_not_charged_twice_and_a_named_city_takes_the_other_cities_fee():
    almaty = decide(SHOP, "односпальная кровать и матрас 90 с доставкой по Алматы, сколько всего?",
                    SHOP_RULES).reply_to_customer  # fmt: skip
    assert "Итого: 158 000 KZT" in almaty  # 89 000 + 64 000 + one delivery of 5 000
    karaganda = decide(SHOP, "кровать 90 с доставкой в Караганду, сколько всего?", SHOP_RULES)
    assert "Итого: 104 000 KZT" in karaganda.reply_to_customer  # 89 000 + 15 000


def test_a_russian_reply_names_an_english_named_item_by_its_russian_alias():
    reply = decide(SHOP, "сколько стоит односпальная кровать?").reply_to_customer
    assert reply.startswith("Односпальная кровать 90: 89 000 KZT")
    english = decide(SHOP, "how much is the single bed?").reply_to_customer
    assert english.startswith("Single bed 90: 89 000 KZT")


CLUB = (
    item("UN-1", "Безлимит зал + бассейн, 1 месяц", "32000", unit="месяц"),
    item("UN-3", "Безлимит зал + бассейн, 3 месяца", "85000", unit="3 месяца"),
    item("PT-1", "Персональная тренировка", "9000", unit="тренировка"),
    item("PT-10", "Пакет 10 персональных тренировок", "80000", unit="пакет"),
)


def test_a_count_a_name_states_with_its_unit_tells_items_apart():
    reply = decide(CLUB, "Сколько стоит безлимит на 3 месяца?").reply_to_customer
    assert reply.startswith("Безлимит зал + бассейн, 3 месяца: 85 000 KZT")


def test_a_price_asked_once_per_item_is_quoted_each_without_a_total():
    reply = decide(CLUB, "персональная тренировка сколько стоит одна и сколько пакет из 10?")
    assert "9 000 KZT" in reply.reply_to_customer
    assert "80 000 KZT" in reply.reply_to_customer
    assert "Итого" not in reply.reply_to_customer


def test_a_fee_below_an_order_size_is_charged_only_below_it():
    rules = (
        "Доставка по Алматы бесплатная при сумме заказа от 7 000 тг; если сумма заказа меньше "
        "7 000 тг — доставка 700 тг. Пригород — доставка 2 000 тг за заказ при любой сумме."
    )
    small = decide(WATER, "2 кг сахара с доставкой, сколько всего?", rules).reply_to_customer
    assert "Итого: 1 800 KZT" in small  # 1 100 + 700, not the suburbs' 2 000
    big = decide(WATER, "6 бутылей воды 19 л с доставкой, сколько всего?", rules)
    assert "Итого: 9 000 KZT" in big.reply_to_customer  # 6 × 1 500, free from 7 000


def test_a_charge_is_not_named_by_its_description_and_a_colloquial_word_finds_its_item():
    described = (
        *WATER[:3],
        item("POT", "Картофель", "350", unit="кг"),
        item("RICE", "Рис девзира", "1400", unit="кг",
             description="Оплачивается за каждую бутыль при первом заказе."),
    )  # fmt: skip
    reply = decide(described, "рахмет за прошлый заказ) 3 кило картошки, сколько?")
    assert reply.reply_to_customer.startswith("Картофель: 3 × 350 KZT = 1 050 KZT")
    assert "Залог" not in reply.reply_to_customer


def test_a_verb_sharing_a_root_with_a_name_names_nothing():
    barber = (
        item("SUB", "Абонемент 4 мужские стрижки", "18000", unit="абонемент"),
        item("BEARD", "Оформление бороды", "3500", unit="услуга"),
    )
    reply = decide(barber, "Беру абонемент на 4 стрижки, оформляйте").reply_to_customer
    assert "3 500" not in reply


def test_what_the_customer_refuses_is_not_quoted():
    washes = (
        item("WASH-S", "Мойка кузова — седан", "3500", unit="авто"),
        item("FULL-S", "Комплексная мойка — седан", "7000", unit="авто"),
        item("SUB-S", "Абонемент на 5 моек кузова (седан)", "15000", unit="абонемент",
             description="5 моек кузова седана. Только для седанов."),
    )  # fmt: skip
    reply = decide(washes, "не комплексную, только кузов помыть, седан. сколько?")
    assert reply.reply_to_customer.startswith("Мойка кузова — седан: 3 500 KZT")
    pool = decide(CLUB, "безлимит не нужен, персональная тренировка сколько?").reply_to_customer
    assert pool.startswith("Персональная тренировка: 9 000 KZT")
    assert "32 000" not in pool


def test_sizes_are_read_with_their_decimals_and_in_words():
    bottles = (
        item("W-05", "Вода 0,5 л, упаковка 12 шт", "2200", unit="упаковка"),
        item("W-15", "Вода 1,5 л, упаковка 6 шт", "1650", unit="упаковка"),
        item("W-5", "Вода питьевая 5 л", "600", unit="шт"),
    )
    words = decide(bottles, "две упаковки воды по полтора литра, сколько?").reply_to_customer
    assert words.startswith("Вода 1,5 л, упаковка 6 шт: 2 × 1 650 KZT = 3 300 KZT")
    half = decide(bottles, "вода по пол литра упаковку сколько?").reply_to_customer
    assert half.startswith("Вода 0,5 л, упаковка 12 шт: 2 200 KZT")
    five = decide(bottles, "вода 5 литров сколько?").reply_to_customer
    assert five.startswith("Вода питьевая 5 л: 600 KZT")


def test_a_period_said_without_a_count_picks_the_item_that_lasts_that_long():
    year = (*CLUB, item("UN-12", "Безлимит зал + бассейн, 12 месяцев", "270000", unit="год"))
    reply = decide(year, "абонемент безлимит на год сколько?").reply_to_customer
    assert reply.startswith("Безлимит зал + бассейн, 12 месяцев: 270 000 KZT")
    month = decide(year, "monthly unlimited, how much?").reply_to_customer
    assert "32 000" in month
    assert "270 000" not in month
    assert "85 000" not in month


MOVERS = (
    item("GAZ-3", "Газель тент 3 м (до 1,5 т)", "6000", unit="час"),
    item("TRK-5", "Грузовик 5 т, будка 6 м", "11000", unit="час"),
    item("MOV", "Грузчик", "3000", unit="час", aliases=("mover", "loader")),
)


def test_a_count_of_a_thing_priced_by_the_hour_runs_for_each():
    reply = decide(MOVERS, "газель 3 метра на 3 часа и 2 грузчика на 3 часа, сколько будет")
    lines = reply.reply_to_customer.splitlines()
    assert "Газель тент 3 м (до 1,5 т): 3 × 6 000 KZT = 18 000 KZT" in lines
    assert "Грузчик: 6 × 3 000 KZT = 18 000 KZT" in lines  # 2 movers × 3 hours
    assert "Итого: 36 000 KZT" in lines
    truck = decide(MOVERS, "грузовик 5 тонн на 4 часа и трёх грузчиков тоже на 4 часа")
    assert "Итого: 80 000 KZT" in truck.reply_to_customer  # 4 × 11 000 + 3 × 4 × 3 000


COFFEE = (item("BR-1", "Бразилия Сантос, 1 кг", "13500", unit="пачка"),)
COFFEE_RULES = (
    "Оптовая цена на зерно: от 5 кг одного сорта — скидка 10 % от цены за 1 кг. "
    "Ночной тариф с 22:00 до 7:00 — плюс 20 % ко всей сумме заказа. "
    "Безлимит 3 и 12 месяцев можно взять в рассрочку Kaspi Red на 3 месяца."
)


def test_terms_the_rules_state_are_quoted_in_any_language_and_others_go_to_a_person():
    wholesale = decide(COFFEE, "do you have wholesale prices? we're opening a cafe", COFFEE_RULES)
    assert wholesale.action == Action.ANSWER
    assert "скидка 10 %" in wholesale.reply_to_customer
    assert "работа" not in wholesale.reply_to_customer  # "opening a cafe" asks no hours
    night = decide(COFFEE, "is there an extra charge at night?", COFFEE_RULES)
    assert "плюс 20 %" in night.reply_to_customer
    twelve = decide(COFFEE, "can I pay in 12 monthly instalments?", COFFEE_RULES)
    assert twelve.action == Action.HANDOFF  # the rules give 3 months, "12" is the item's
    three = decide(COFFEE, "can I pay in instalments over 3 months?", COFFEE_RULES)
    assert three.action == Action.ANSWER


def test_a_price_agreed_for_one_of_two_look_alikes_is_counted_in_their_unit():
    vans = (*MOVERS, item("GAZ-4", "Газель удлинённая 4,2 м (до 2 т)", "7500", unit="час"))
    history = [
        entry("customer", "сделайте скидку на газель"),
        entry("manager", "Для вас газель 3 м по 5 000 в час вместо 6 000."),
        entry("system", "Chat returned to the assistant"),
    ]
    reply = decide(vans, "ок тогда газель на 4 часа сколько будет", history=history)
    assert "4 × 5 000 KZT = 20 000 KZT" in reply.reply_to_customer


PACKING = (
    item("BOX-S", "Коробка картонная 40×30×30 см", "500"),
    item("BOX-L", "Коробка картонная 60×40×40 см", "800"),
    item("FILM", "Стрейч-плёнка 500 мм", "3500", unit="рулон"),
    item("TAPE", "Скотч упаковочный 48 мм", "700"),
)


def test_small_and_big_pick_among_look_alikes_told_apart_by_size_and_keep_their_count():
    small = decide(PACKING, "need 20 small boxes and 2 rolls of tape").reply_to_customer
    assert "Коробка картонная 40×30×30 см: 20 × 500 KZT = 10 000 KZT" in small
    assert "Скотч упаковочный 48 мм: 2 × 700 KZT = 1 400 KZT" in small
    big = decide(PACKING, "a dozen big boxes and one roll of stretch film pls").reply_to_customer
    assert "Коробка картонная 60×40×40 см: 12 × 800 KZT = 9 600 KZT" in big
    kazakh = decide(PACKING, "он үлкен коробка және екі рулон стрейч керек, қанша?")
    assert "Жалпы: 15 000 KZT" in kazakh.reply_to_customer  # 10 × 800 + 2 × 3 500


CURTAINS = (
    item("BLK-1", "Блэкаут однотонный, высота 2,8 м", "4500", unit="п.м."),
    item("SEW-C", "Пошив штор", "1200", unit="м"),
)
CURTAIN_RULES = "Пошив занимает 7 рабочих дней с момента предоплаты. Оплата: Kaspi, наличные."


def test_how_long_is_answered_by_the_rule_that_says_it_and_a_wrong_delivery_is_a_complaint():
    how_long = decide(CURTAINS, "how long does the sewing take?", CURTAIN_RULES)
    assert how_long.action == Action.ANSWER
    assert "7 рабочих дней" in how_long.reply_to_customer
    wrong = decide(
        CURTAINS,
        "забрала вчера шторы, цвет не тот, заказывала графит а пришёл синий, и 10 см не хватает",
        CURTAIN_RULES,
    )
    assert (wrong.action, wrong.reason) == (Action.HANDOFF, "complaint")
    question = decide(CURTAINS, "какой цвет не такой маркий? блэкаут однотонный", CURTAIN_RULES)
    assert question.action == Action.ANSWER


def test_a_service_asked_with_the_goods_is_the_one_for_them_and_as_much_of_it():
    sewing = (
        *CURTAINS,
        item("TUL-G", "Тюль сетка, высота 2,9 м", "2900", unit="п.м."),
        item("SEW-T", "Пошив тюля", "900", unit="м"),
    )
    plus = decide(sewing, "блэкаут однотонный 6 метров + пошив").reply_to_customer
    assert "Пошив штор: 6 × 1 200 KZT = 7 200 KZT" in plus
    assert "Итого: 34 200 KZT" in plus  # 6 × 4 500 + 6 × 1 200
    tulle = decide(sewing, "9 метров тюль сетка с пошивом, сколько?").reply_to_customer
    assert "Пошив тюля: 9 × 900 KZT = 8 100 KZT" in tulle
    assert "Итого: 34 200 KZT" in tulle  # 9 × 2 900 + 9 × 900


def test_hours_and_counts_in_latin_letters_are_read():
    russian = decide(MOVERS, "gazel 3m na 2 chasa + 1 gruzchik na 2 chasa skolko").reply_to_customer
    assert "12 000 KZT" in russian  # 2 hours of the van
    assert "6 000 KZT" in russian  # 1 mover × 2 hours
    kazakh = decide(MOVERS, "bes gruzchik 3 sagatqa kerek, qansha bolady").reply_to_customer
    assert "15 × 3 000 KZT = 45 000 KZT" in kazakh  # 5 movers × 3 hours


def test_half_and_one_of_a_unit_said_in_words():
    beans = (
        item("BR-250", "Бразилия Сантос, 250 г", "4200", unit="пачка"),
        item("BR-1", "Бразилия Сантос, 1 кг", "13500", unit="пачка"),
        item("ESP", "Эспрессо-смесь на развес", "11000", unit="кг"),
    )
    kilo = decide(beans, "бразилия сантос кило скока стоит").reply_to_customer
    assert kilo.startswith("Бразилия Сантос, 1 кг: 13 500 KZT")
    half = decide(beans, "полкило эспрессо смеси на развес можно? сколько").reply_to_customer
    assert "0,5 × 11 000 KZT = 5 500 KZT" in half


DRINKS = (
    item("LEM-05", "Лимонад 0,5 л, упаковка 12 шт", "3600", unit="упаковка"),
    item("LEM-05S", "Лимонад газированный 0,5 л, упаковка 12 шт", "3900", unit="упаковка"),
    item("JUICE", "Сок яблочный 1 л", "900", unit="бутылка"),
)


def test_a_word_refused_with_without_rules_out_the_item_named_by_its_root():
    reply = decide(
        DRINKS, "лимонад без газа 2 упаковки и 1 упаковку газированного"
    ).reply_to_customer
    assert "Лимонад 0,5 л, упаковка 12 шт: 2 × 3 600 KZT = 7 200 KZT" in reply
    assert "Лимонад газированный 0,5 л, упаковка 12 шт: 3 900 KZT" in reply
    assert "Итого: 11 100 KZT" in reply
    # Both said, one denied and one asked: the "without" names the one that lacks it.
    asked = decide(DRINKS, "лимонад без газа почём?").reply_to_customer
    assert asked.startswith("Лимонад 0,5 л, упаковка 12 шт: 3 600 KZT")


def test_a_counted_part_the_list_does_not_name_leaves_the_order_without_a_total():
    reply = decide(DRINKS, "сок яблочный 2 бутылки, кексы 3 шт и лимонад газированный 1 упаковку")
    text = reply.reply_to_customer
    assert "Сок яблочный 1 л: 2 × 900 KZT = 1 800 KZT" in text
    assert "Лимонад газированный 0,5 л, упаковка 12 шт: 3 900 KZT" in text
    assert "«кексы 3 шт»" in text
    assert "Итого" not in text
    assert "5 700" not in text
    # Every part named: the total is there.
    whole = decide(DRINKS, "сок яблочный 2 бутылки и лимонад газированный 1 упаковку")
    assert "Итого: 5 700 KZT" in whole.reply_to_customer


VANS = (
    item("TRUCK", "Грузовик 5 т", "16000", unit="час", description="Минимум 4 часа. С водителем."),
    item("HELPER", "Помощник водителя", "3000", unit="час"),
    item("MIX", "Смесь на развес", "11000", unit="кг", description="Отвешиваем от 0,5 кг."),
)


def test_less_than_the_least_the_list_sells_is_counted_at_that_least_and_the_guardrail_agrees():
    config = AssistantSettings()
    asked = turn("грузовик нужен на 2 часа, сколько?")
    decision = catalogue.decide(asked, knowledge(VANS), config)
    assert decision.reply_to_customer == (
        "Грузовик 5 т: 4 × 16 000 KZT = 64 000 KZT (минимальный заказ — 4 час)"
    )
    assert check_against(decision, asked, knowledge(VANS), config).allowed
    # Any other count of hours is still not what was asked.
    other = decision.model_copy(update={"reply_to_customer": "Грузовик 5 т: 3 × 16 000 KZT"})
    assert not check_against(other, asked, knowledge(VANS), config).allowed
    # No amount said: the price of one unit, and the least one buys.
    bare = decide(VANS, "грузовик почём в час?").reply_to_customer
    assert bare == "Грузовик 5 т: 16 000 KZT / час (минимальный заказ — 4 час)"
    # At or above the least, and items that state none, are as asked.
    assert "6 × 16 000 KZT = 96 000 KZT" in decide(VANS, "грузовик на 6 часов").reply_to_customer
    assert "3 × 3 000 KZT" in decide(VANS, "помощник на 3 часа").reply_to_customer
    # "от 0,5 кг" of a price per kg; an age or a threshold in pieces is no minimum.
    assert "минимальный заказ" not in decide(VANS, "смесь 2 кг").reply_to_customer


TRIPS = (
    item("CANYON", "Чарынский каньон", "18000", unit="person", aliases=("charyn canyon",)),
    item("LAKES", "Кольсайские озёра", "22000", unit="person", aliases=("kolsai day trip",)),
    item("BAT-11", "Battery replacement iPhone 11–13", "15000"),
    item("SCR-11", "Screen replacement iPhone 11", "25000"),
    item("GLASS", "Tempered glass 9D", "2500"),
)


def test_several_items_fitting_one_thing_asked_are_options_not_an_order_to_total():
    reply = decide(TRIPS, "How much is the Charyn Canyon day trip?").reply_to_customer
    assert "charyn canyon: 18 000 KZT" in reply
    assert "Total" not in reply
    assert "40 000" not in reply
    # Named apart: an order.
    both = decide(TRIPS, "charyn canyon and kolsai day trip, how much?").reply_to_customer
    assert "Total: 40 000 KZT" in both


def test_a_model_number_within_the_range_a_name_writes_counts_nothing():
    reply = decide(TRIPS, "battery replacement for iphone 12, how much?").reply_to_customer
    assert reply == "Battery replacement iPhone 11–13: 15 000 KZT"
    assert "2 × 15 000 KZT" in decide(TRIPS, "2 battery replacements iphone 12").reply_to_customer


def test_chat_english_four_for_for_is_no_count():
    reply = decide(
        TRIPS, "hw much 4 a screen replacement iphone 11 and the 9D glass"
    ).reply_to_customer
    assert "Screen replacement iPhone 11: 25 000 KZT" in reply
    assert "4 ×" not in reply


EXCURSIONS = (
    item("LAKE", "Большое Алматинское озеро", "12000", unit="чел"),
    item("CITY", "Обзорная экскурсия по городу", "7000", unit="чел"),
    item("GUIDE", "Гид на английском", "20000", unit="день"),
)
EXCURSION_RULES = (
    "Цены за одного взрослого. Дети до 5 лет бесплатно, дети 5–12 лет — скидка 30%. "
    "Группам от 10 человек скидка 10%."
)


def test_a_party_counts_a_price_per_person_and_children_get_the_rate_the_rules_give():
    rules = EXCURSION_RULES
    three = decide(EXCURSIONS, "на озеро сколько? нас трое", rules).reply_to_customer
    assert "Большое Алматинское озеро: 3 × 12 000 KZT = 36 000 KZT" in three
    # Not what is priced otherwise: the guide per day stays one.
    english = decide(EXCURSIONS, "we are 4, city tour and an english guide, total?", rules)
    assert "Обзорная экскурсия по городу: 4 × 7 000 KZT = 28 000 KZT" in english.reply_to_customer
    assert "Total: 48 000 KZT" in english.reply_to_customer
    family = decide(EXCURSIONS, "2 взрослых и дети 3 и 8 лет на озеро, сколько всего?", rules)
    text = family.reply_to_customer
    assert "Большое Алматинское озеро: 2 × 12 000 KZT = 24 000 KZT" in text
    assert "Большое Алматинское озеро, ребёнок, возраст 3: бесплатно" in text
    assert "возраст 8: 12 000 KZT, со скидкой 30%: 8 400 KZT" in text
    assert "Итого: 32 400 KZT" in text
    # A child older than every rate pays as an adult; an age not said gives no total.
    older = decide(EXCURSIONS, "2 adults and a kid (14) to the lake, total?", rules)
    assert "3 × 12 000 KZT = 36 000 KZT" in older.reply_to_customer
    unsaid = decide(EXCURSIONS, "2 взрослых и ребёнок на озеро, сколько?", rules)
    assert "ребёнок, возраст" not in unsaid.reply_to_customer
    assert "Итого" not in unsaid.reply_to_customer


def test_a_group_discount_holds_from_the_party_size_the_rules_name():
    big = decide(
        EXCURSIONS, "Нас 12 человек, обзорная экскурсия, сколько на всех?", EXCURSION_RULES
    )
    assert "12 × 7 000 KZT = 84 000 KZT" in big.reply_to_customer
    assert "со скидкой 10%: 75 600 KZT" in big.reply_to_customer
    small = decide(EXCURSIONS, "Нас 6 человек, обзорная экскурсия, сколько?", EXCURSION_RULES)
    assert "скидк" not in small.reply_to_customer


HIRE = (
    item("VAN", "Газель", "6000", unit="час"),
    item("LOADER", "Грузчик", "3000", unit="час"),
    item("TENT", "Аренда палатки", "3000", unit="сутки"),
    item("MAT", "Аренда коврика", "500", unit="сутки"),
)


def test_one_length_of_time_said_for_the_order_holds_for_each_line_without_its_own():
    movers = decide(HIRE, "газель на 5 часов и 2 грузчика на всё время").reply_to_customer
    assert "Газель: 5 × 6 000 KZT = 30 000 KZT" in movers
    assert "Грузчик: 10 × 3 000 KZT = 30 000 KZT" in movers
    assert "Итого: 60 000 KZT" in movers
    camp = decide(HIRE, "палатку и 2 коврика на 2 суток, сколько?").reply_to_customer
    assert "Аренда палатки: 2 × 3 000 KZT = 6 000 KZT" in camp
    assert "Аренда коврика: 4 × 500 KZT = 2 000 KZT" in camp
    # Its own hours said after it are its own; two lengths said give none to the rest.
    assert "Газель: 4 × 6 000 KZT" in decide(HIRE, "газель, на 4 часа").reply_to_customer
    two = decide(HIRE, "газель на 5 часов, грузчик на 2 часа и палатку").reply_to_customer
    assert "Грузчик: 2 × 3 000 KZT = 6 000 KZT" in two


REPAIRS = (item("SCR", "Замена экрана iPhone 11", "25000"),)
COURIER_RULES = "Курьер по городу — 2000 тг, бесплатно при заказе от 50000 тг."


def test_a_fee_a_manager_made_free_is_free_in_the_total_and_a_conditional_free_is_not():
    history = [
        entry("customer", "а курьер бесплатно может забрать?", 0),
        entry("manager", "Хорошо, курьер для вас бесплатно.", 1),
        entry("system", "Chat returned to the assistant", 2),
    ]
    asked = "а сколько всего выйдет за экран на 11 с курьером?"
    free = decide(REPAIRS, asked, COURIER_RULES, history=history).reply_to_customer
    assert "Итого: 25 000 KZT" in free
    assert "2 000" not in free
    # Without the manager's word the rules' fee holds: free only from 50 000.
    paid = decide(REPAIRS, asked, COURIER_RULES).reply_to_customer
    assert "Итого: 27 000 KZT" in paid


CLEANING = (
    item("DRESS", "Dress dry cleaning", "4500"),
    item("EGGS", "Яйца куриные", "1250", unit="десяток"),
    item("CASE", "Чехол силиконовый", "3500"),
)


def test_a_count_may_stand_one_unknown_word_before_the_item():
    assert "2 × 4 500 KZT = 9 000 KZT" in decide(CLEANING, "2 everyday dresses").reply_to_customer
    assert "2 × 3 500 KZT" in decide(CLEANING, "2 чехол силиконовый керек").reply_to_customer
    # Not a unit ("2 десятка" of eggs sold by the ten) and not a party ("трое подружек").
    assert "2 × 1 250 KZT" in decide(CLEANING, "2 десятка яиц").reply_to_customer
    assert "3 ×" not in decide(CLEANING, "нас трое подружек, чехол силиконовый").reply_to_customer
