"""A corpus of replies, right and wrong, written from the golden businesses' price lists, to
measure both errors of the guardrail: right replies it blocks, wrong ones it lets through.

    python -m assistant.eval.guardrail_corpus            # figures
    python -m assistant.eval.guardrail_corpus --misses   # and every reply judged wrongly

Each sample is a customer's turn (and, for manager agreements, the chat before it) with a reply
whose numbers the generator knows to be right (list prices, the customer's quantities, correct
sums, the rules' fees, a manager's price) or knows to be wrong in one way (a wrong total, a wrong
line product, another item's price, the customer's 40K, an invented discount, a discount agreed
in words, an invented deadline or date, free delivery, a rounded price, a quantity nobody
asked for, the list price after a manager agreed another). The judge is the generator's own
knowledge of which is which, not the guardrail. Styles and languages vary: EN, RU, KK, amounts
as `45 000 KZT`, `45 000 тг`, `₸45 000`, `45,000`, `45.000 тг`, `45k`, `45 тыс.`, bare `45000`.

Why the file is long: it is data. Some 560 of its lines (`_single` to `_rules_only`) are the
corpus itself, one sentence template after another: a customer's message and the reply to it,
right or wrong in one named way, in English, Russian and Kazakh, filled in from each golden
item. They hold no logic to split by; cutting them across files would only scatter one corpus.
The code that measures the guardrail with them (`measure`, `against_golden`, `main`) is the
last 150 lines.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from assistant.eval.runner import Golden
    from assistant.knowledge.effective import KnowledgeItem

T0 = datetime(2025, 3, 3, 10, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Sample:
    id: str
    business: str
    kind: str  # what makes it right or wrong ("total", "line_product", …)
    right: bool
    customer: tuple[str, ...]
    reply: str
    history: tuple[tuple[str, str], ...] = ()


@dataclass
class Figures:
    right: int = 0
    right_passed: int = 0
    wrong: int = 0
    wrong_blocked: int = 0
    misses: list[tuple[Sample, list[str]]] = field(default_factory=list)
    by_kind: Counter[str] = field(default_factory=Counter)

    @property
    def right_pass_rate(self) -> float:
        return self.right_passed / self.right if self.right else 1.0

    @property
    def wrong_block_rate(self) -> float:
        return self.wrong_blocked / self.wrong if self.wrong else 1.0

    def summary(self) -> dict[str, Any]:
        return {
            "replies": self.right + self.wrong,
            "right": self.right,
            "right_passed": self.right_passed,
            "right_pass_rate": round(self.right_pass_rate, 4),
            "wrong": self.wrong,
            "wrong_blocked": self.wrong_blocked,
            "wrong_block_rate": round(self.wrong_block_rate, 4),
            "kinds": dict(sorted(self.by_kind.items())),
        }


# --- writing amounts the ways people do ------------------------------------------------------


def _group(value: Decimal, sep: str) -> str:
    whole = f"{int(value):d}"
    groups: list[str] = []
    while len(whole) > 3:
        groups.insert(0, whole[-3:])
        whole = whole[:-3]
    groups.insert(0, whole)
    return sep.join(groups)


def written(value: Decimal, style: str) -> str:
    """An amount as a reply might write it; every style reads back as the same value."""
    k = format((value / 1000).normalize(), "f")
    forms = {
        "kzt": f"{_group(value, ' ')} KZT",
        "tg": f"{_group(value, ' ')} тг",
        "tenge": f"{_group(value, ' ')} тенге",
        "sign": f"₸{_group(value, ' ')}",
        "sign_after": f"{_group(value, ' ')} ₸",
        "comma": f"{_group(value, ',')} KZT",
        "dot": f"{_group(value, '.')} тг",
        "k": f"{k}k",
        "K": f"{k}K",
        "тыс": f"{k.replace('.', ',')} тыс. тг",
        "тысяч": f"{k.replace('.', ',')} тысяч тенге",
        "bare": f"{int(value)} KZT",
    }
    return forms[style]


STYLES = ("kzt", "tg", "tenge", "sign", "sign_after", "comma", "dot", "k", "K", "тыс", "тысяч")


# --- the corpus -----------------------------------------------------------------------------


def _translit(text: str) -> str:
    table = str.maketrans(
        {
            "а": "a",
            "б": "b",
            "в": "v",
            "г": "g",
            "д": "d",
            "е": "e",
            "ё": "e",
            "ж": "zh",
            "з": "z",
            "и": "i",
            "й": "y",
            "к": "k",
            "л": "l",
            "м": "m",
            "н": "n",
            "о": "o",
            "п": "p",
            "р": "r",
            "с": "s",
            "т": "t",
            "у": "u",
            "ф": "f",
            "х": "kh",
            "ц": "ts",
            "ч": "ch",
            "ш": "sh",
            "щ": "sch",
            "ъ": "",
            "ы": "y",
            "ь": "",
            "э": "e",
            "ю": "yu",
            "я": "ya",
        }
    )
    return text.lower().translate(table)


def _fee(rules: str) -> Decimal | None:
    """The delivery fee the rules write (the first amount of the sentence about delivery)."""
    from assistant.knowledge.money import find_amounts

    for sentence in rules.replace(";", ".").split("."):
        if "достав" in sentence.lower() or "deliver" in sentence.lower():
            found = find_amounts(sentence)
            if found:
                return found[0].value
    return None


def _free_from(rules: str) -> Decimal | None:
    """The order value from which the rules make delivery free ("free for orders from 300 000
    KZT", "при заказе от 300 000 тг доставка бесплатная"), or None."""
    import re

    for clause in re.split(r"[.;\n]", rules):
        if re.search(r"free|бесплатн", clause, re.IGNORECASE):
            found = re.search(r"(?:from|от)\s+(\d[\d ]*\d)", clause)
            if found:
                return Decimal(found.group(1).replace(" ", ""))
    return None


def generate(golden: Golden | None = None, seed: int = 15) -> list[Sample]:
    """Every sample, deterministic for a seed."""
    from assistant.eval.runner import load_golden

    golden = golden or load_golden()
    rnd = random.Random(seed)
    samples: list[Sample] = []
    for business, knowledge in sorted(golden.knowledge.items()):
        rules = golden.config[business].business_rules or ""
        fee = _fee(rules)
        items = list(knowledge.items)
        for n, item in enumerate(items):
            others = [i for i in items if i.price != item.price]
            samples += _single(business, n, item, rnd, others)
            samples += _quantities(business, n, item, rnd)
            samples += _terms(business, n, item, rnd)
            free_from = _free_from(rules)
            free = free_from is not None and item.price >= free_from
            if fee is not None:
                samples += _with_fee(business, n, item, fee, rnd, free)
            samples += _agreed(business, n, item, rnd)
            samples += _more(business, n, item, rules, others[(n + 1) % len(others)], free)
        for n in range(len(items)):
            first, second = items[n], items[(n + 3) % len(items)]
            if first.price != second.price and first is not second:
                samples += _orders(business, n, first, second, rnd)
        samples += _rules_only(business, rules, fee, items, rnd)
        samples += _in_english(business, items)
    return samples


def _s(business: str, kind: str, right: bool, customer: str | tuple[str, ...], reply: str,
       n: int, history: tuple[tuple[str, str], ...] = ()) -> Sample:  # fmt: skip
    messages = (customer,) if isinstance(customer, str) else customer
    tag = "ok" if right else "bad"
    return Sample(f"{business}-{tag}-{kind}-{n}", business, kind, right, messages, reply, history)


def _single(
    business: str, n: int, item: KnowledgeItem, rnd: random.Random, others: list[KnowledgeItem]
) -> list[Sample]:
    name, price = item.name, item.price
    style = STYLES[n % len(STYLES)]
    p = written(price, style)
    other = others[n % len(others)]
    rounded = (price / 10000).quantize(Decimal(1)) * 10000
    if rounded == price:
        rounded = price + 1000
    out = [
        _s(business, "single_en", True, f"How much is the {name}?", f"The {name} costs {p}.", n),
        _s(
            business,
            "single_ru",
            True,
            f"Сколько стоит {name}?",
            f"{name} — {p}, есть в наличии.",
            n,
        ),
        _s(business, "single_kk", True, f"{name} қанша тұрады?", f"{name} бағасы {p}.", n),
        _s(
            business,
            "next_sentence",
            True,
            f"Do you have the {name}?",
            f"Yes, we have the {name}. It costs {written(price, 'kzt')}.",
            n,
        ),
        _s(
            business,
            "customer_named",
            True,
            (f"{name}", "how much?"),
            f"It is {written(price, 'tg')}.",
            n,
        ),
        _s(
            business,
            "by_sku",
            True,
            f"price of {item.sku}?",
            f"{item.sku} ({name}): {written(price, 'sign')}",
            n,
        ),
        _s(
            business,
            "another_items_price",
            False,
            f"How much is the {name}?",
            f"The {name} costs {written(other.price, style)}.",
            n,
        ),
        _s(
            business,
            "rounded",
            False,
            f"Сколько стоит {name}?",
            f"{name} стоит примерно {written(rounded, 'tg')}.",
            n,
        ),
        _s(
            business,
            "unasked_quantity",
            False,
            f"How much is the {name}?",
            f"{name}: 3 × {written(price, 'kzt')} = {written(price * 3, 'kzt')}",
            n,
        ),
    ]
    if any("а" <= ch <= "я" for ch in name.lower()):
        latin = _translit(name).capitalize()
        out.append(
            _s(
                business,
                "ru_name_asked_in_en",
                True,
                f"How much is the {latin}?",
                f"The {name} ({latin}) costs {written(price, 'kzt')}.",
                n,
            )
        )
    return out


def _quantities(business: str, n: int, item: KnowledgeItem, rnd: random.Random) -> list[Sample]:
    name, price = item.name, item.price
    qty = 2 + n % 4
    style = STYLES[(n + 3) % len(STYLES)]
    total = price * qty
    return [
        _s(
            business,
            "line_en",
            True,
            f"I need {qty} × {name}, how much?",
            f"{name}: {qty} × {written(price, 'kzt')} = {written(total, 'kzt')}",
            n,
        ),
        _s(
            business,
            "line_ru",
            True,
            f"Нужно {qty} шт {name}",
            f"{name}: {qty} шт × {written(price, 'tg')} = {written(total, 'tg')}",
            n,
        ),
        _s(
            business,
            "quantity_total",
            True,
            f"{name} x{qty} — total?",
            f"{name} is {written(price, style)} each, so {qty} come to {written(total, style)}.",
            n,
        ),
        _s(
            business,
            "line_product",
            False,
            f"I need {qty} × {name}, how much?",
            f"{name}: {qty} × {written(price, 'kzt')} = {written(total + price, 'kzt')}",
            n,
        ),
        _s(
            business,
            "other_quantity",
            False,
            f"I need {qty} × {name}, how much?",
            f"{name}: {qty + 1} × {written(price, 'kzt')} = {written(price * (qty + 1), 'kzt')}",
            n,
        ),
    ]


def _orders(
    business: str, n: int, first: KnowledgeItem, second: KnowledgeItem, rnd: random.Random
) -> list[Sample]:
    qty = 2 + n % 3
    style = STYLES[(n + 5) % len(STYLES)]
    a, b = first.price, second.price * qty
    ask_en = f"{first.name} and {qty} {second.name}, total?"
    ask_ru = f"{first.name} и {qty} шт {second.name}, сколько всего?"

    def lines(second_total: Decimal, total: Decimal, word: str = "Total", s: str = "kzt") -> str:
        return (
            f"{first.name}: {written(a, s)}\n"
            f"{second.name}: {qty} × {written(second.price, s)} = {written(second_total, s)}\n"
            f"{word}: {written(total, s)}"
        )

    wrong_total = a + b + 10000
    # A wrong total that is exactly some list price, so only the sum rule catches it.
    swapped = (
        f"{first.name}: {qty} × {written(a, 'kzt')} = {written(a * qty, 'kzt')}\n"
        f"{second.name}: {written(second.price, 'kzt')}\n"
        f"Total: {written(a * qty + second.price, 'kzt')}"
    )
    return [
        _s(business, "order_en", True, ask_en, lines(b, a + b), n),
        _s(business, "order_ru", True, ask_ru, lines(b, a + b, "Итого", "tg"), n),
        _s(business, "order_forms", True, ask_en, lines(b, a + b, "Total", style), n),
        _s(
            business,
            "order_prose",
            True,
            ask_en,
            f"The {first.name} is {written(a, 'kzt')} and {qty} × {second.name} come to "
            f"{written(b, 'kzt')}. Altogether {written(a + b, 'kzt')}.",
            n,
        ),
        _s(business, "total", False, ask_en, lines(b, wrong_total), n),
        _s(business, "total_ru", False, ask_ru, lines(b, a + b - 1000, "Итого", "tg"), n),
        _s(business, "total_is_a_price", False, ask_en, lines(b, second.price), n),
        _s(business, "quantity_of_another_item", False, ask_en, swapped, n),
    ]


def _with_fee(
    business: str, n: int, item: KnowledgeItem, fee: Decimal, rnd: random.Random, free: bool
) -> list[Sample]:
    """`free`: the rules make delivery free for an order of this item."""
    name, price = item.name, item.price
    return [
        _s(
            business,
            "fee",
            True,
            f"How much is the {name} with delivery?",
            f"The {name} is {written(price, 'kzt')}, delivery {written(fee, 'kzt')}; "
            f"total {written(price + fee, 'kzt')}.",
            n,
        ),
        _s(
            business,
            "fee_ru",
            True,
            f"{name} с доставкой сколько?",
            f"{name}: {written(price, 'tg')}\nДоставка: {written(fee, 'tg')}\n"
            f"Итого: {written(price + fee, 'tg')}",
            n,
        ),
        _s(
            business,
            "fee_total",
            False,
            f"How much is the {name} with delivery?",
            f"The {name} is {written(price, 'kzt')}, delivery {written(fee, 'kzt')}; "
            f"total {written(price + fee * 2, 'kzt')}.",
            n,
        ),
        _s(
            business,
            "free_delivery_over_threshold" if free else "free_delivery",
            free,
            f"{name}, с доставкой?",
            f"{name}: {written(price, 'tg')}, доставим бесплатно!",
            n,
        ),
    ]


def _terms(business: str, n: int, item: KnowledgeItem, rnd: random.Random) -> list[Sample]:
    name, price = item.name, item.price
    step = Decimal(1000) if price >= 5000 else Decimal(100)
    custom = (price * Decimal("0.8") / step).quantize(Decimal(1)) * step
    k = written(custom, "K")
    ask = f"Could you do the {name} for {written(custom, 'k')} each if I take ten?"
    return [
        _s(
            business,
            "custom_price",
            False,
            ask,
            f"Sure, I can do that. The price per item is {k}, so the total cost for ten would "
            f"be {written(custom * 10, 'K')}.",
            n,
        ),
        _s(business, "custom_price_words", False, ask, "Sure, I can do that!", n),
        _s(
            business,
            "custom_price_refused",
            True,
            ask,
            f"Sorry, the {name} is {written(price, 'kzt')}; for ten that is "
            f"{written(price * 10, 'kzt')}. A manager can discuss special terms.",
            n,
        ),
        _s(
            business,
            "discount_percent",
            False,
            f"Any discount on the {name}?",
            f"Yes! {5 + n % 3 * 5}% off the {name} for you.",
            n,
        ),
        _s(
            business,
            "discount_words_ru",
            False,
            f"Сделаете скидку на {name}?",
            "Хорошо, сделаем скидку!",
            n,
        ),
        _s(
            business,
            "discount_words_kk",
            False,
            f"{name} жеңілдік бар ма?",
            "Жарайды, жеңілдік жасаймыз.",
            n,
        ),
        _s(
            business,
            "discount_words_en",
            False,
            f"Can I get a discount on the {name}?",
            "Of course, we'll give you a discount.",
            n,
        ),
        _s(
            business,
            "deal_ru",
            False,
            f"Отдадите {name} за {written(custom, 'тыс')}?",
            "Договорились!",
            n,
        ),
        _s(
            business,
            "deal_kk",
            False,
            f"{name} {written(custom, 'тыс')} берсеңіз аламын",
            "Келістік!",
            n,
        ),
        _s(
            business,
            "discount_refused",
            True,
            f"Can I get a discount on the {name}?",
            f"Unfortunately the price is fixed: {written(price, 'kzt')}. A manager can tell you "
            "about special offers.",
            n,
        ),
        _s(
            business,
            "discount_handoff",
            True,
            f"Скидку сделаете на {name}?",
            "По особым условиям вам ответит менеджер: он скоро напишет здесь.",
            n,
        ),
        _s(
            business,
            "deadline",
            False,
            f"Can I get the {name} quickly?",
            f"We'll deliver the {name} tomorrow.",
            n,
        ),
        _s(
            business,
            "deadline_agreed",
            False,
            f"Can you deliver the {name} by Friday?",
            "Yes, we can do that!",
            n,
        ),
        _s(
            business,
            "date",
            False,
            f"When can I get the {name}?",
            f"The {name} will be ready on 15.0{1 + n % 9}.",
            n,
        ),
        _s(
            business,
            "deadline_ru",
            False,
            f"Когда будет {name}?",
            f"{name} будет готов через {4 + n % 3} дня.",
            n,
        ),
    ]


def _agreed(business: str, n: int, item: KnowledgeItem, rnd: random.Random) -> list[Sample]:
    name, price = item.name, item.price
    deal = (price * Decimal("0.9") / 100).quantize(Decimal(1)) * 100
    history = (
        ("customer", f"How much is the {name}?"),
        ("bot", f"{name}: {written(price, 'kzt')}"),
        ("customer", "Can you make it cheaper?"),
        ("manager", f"The {name} is {written(deal, 'kzt')} for you instead of "
                    f"{written(price, 'kzt')}."),
    )  # fmt: skip
    ask = f"So how much is the {name} then? I want 2"
    return [
        _s(
            business,
            "manager_price",
            True,
            ask,
            f"As agreed with our manager, the {name} is {written(deal, 'kzt')}; 2 × "
            f"{written(deal, 'kzt')} = {written(deal * 2, 'kzt')}.",
            n,
            history,
        ),
        _s(
            business,
            "manager_price_ru",
            True,
            "Так сколько в итоге?",
            f"Как договорились с менеджером: {written(deal, 'tg')}.",
            n,
            history,
        ),
        _s(
            business,
            "list_price_after_agreement",
            False,
            ask,
            f"The {name} is {written(price, 'kzt')}.",
            n,
            history,
        ),
    ]


def _more(
    business: str, n: int, item: KnowledgeItem, rules: str, other: KnowledgeItem, free: bool
) -> list[Sample]:
    """Turns of a chat over several messages, lead times, big sums, more ways to agree."""
    name, price = item.name, item.price
    qty = 3 + n % 3
    total = price * qty
    custom = (price * Decimal("0.7") / 100).quantize(Decimal(1)) * 100
    out = [
        _s(business, "quantity_in_history", True, "how much in total?",
           f"{qty} × {written(price, 'kzt')} = {written(total, 'kzt')}", n,
           (("customer", f"I want {qty} {name}"), ("bot", f"{name}: {written(price, 'kzt')}"))),
        _s(business, "total_kk", True, f"{name} {qty} дана, барлығы қанша?",
           f"{name}: {qty} × {written(price, 'tg')} = {written(total, 'tg')}\n"
           f"Барлығы: {written(total, 'tg')}", n),
        _s(business, "handoff_on_discount", True, f"Can I get a discount on {name}?",
           "Of course, I'm passing you to a manager: they will reply here shortly.", n),
        _s(business, "rules_answer_to_deadline", True, f"Can you deliver the {name} tomorrow?",
           f"The {name} costs {written(price, 'kzt')}. A manager will confirm the delivery "
           "date.", n),
        _s(business, "cross_sentence_other_price", False, f"Do you have the {name}?",
           f"We have the {name}. It costs {written(other.price, 'kzt')}.", n),
        _s(business, "percent_words", False, f"{name} — скидка будет?",
           f"Для вас скидка {10 + n % 2 * 5} процентов на {name}.", n),
        _s(business, "percent_off_en", False, f"{name} price?",
           f"{name}: {written(price, 'kzt')}, and 10 percent off today!", n),
        _s(
            business,
            "free_kk_over_threshold" if free else "free_kk",
            free,
            f"{name} жеткізу бар ма?",
            "Иә, жеткізу тегін!",
            n,
        ),
        _s(business, "custom_price_ru", False, f"Отдадите {name} за {written(custom, 'тыс')}?",
           f"Да, отдадим за {written(custom, 'тыс')}.", n),
        _s(business, "discount_bare_yes", False, f"Can you give me a discount on the {name}?",
           "Yes!", n),
        _s(business, "half_price", False, f"{name}?", f"{name} today at half price!", n),
    ]  # fmt: skip
    if item.availability_note:
        out.append(
            _s(
                business,
                "lead_time",
                True,
                f"Is the {name} available?",
                f"The {name} is on order ({item.availability_note}), price "
                f"{written(price, 'kzt')}.",
                n,
            )
        )
    if total * 10 >= 1_000_000 and (total * 10) % 100_000 == 0:
        big = total * 10
        millions = format(big / 1_000_000, "f").rstrip("0").rstrip(".").replace(".", ",")
        out.append(
            _s(
                business,
                "millions",
                True,
                f"{qty * 10} {name} for the office, how much?",
                f"{name}: {qty * 10} × {written(price, 'kzt')} = {millions} млн тг",
                n,
            )
        )
    return out


# Russian names as an English-speaking customer (and a model answering in English) says them.
IN_ENGLISH = {
    "Диван угловой Бостон": "Boston corner sofa",
    "Стул барный Лофт": "Loft bar stool",
    "Кресло офисное Комфорт": "Komfort office armchair",
    "Кресло руководителя Директор": "Direktor executive chair",
    "Шкаф-купе 2-дверный белый": "white 2-door sliding wardrobe",
    "Кровать Сканди 160x200": "Skandi bed 160x200",
    "Матрас ортопедический 160x200": "orthopedic mattress 160x200",
    "Букет 51 роза": "bouquet of 51 roses",
    "Букет 101 роза": "bouquet of 101 roses",
    "Тюльпаны микс 11 шт": "11 mixed tulips",
    "Пионы розовые 5 шт": "5 pink peonies",
    "Мишка плюшевый 30 см": "30 cm teddy bear",
    "Масляный фильтр Toyota": "Toyota oil filter",
    "Аккумулятор Varta 75Ah": "Varta 75Ah battery",
    "Свеча зажигания Denso": "Denso spark plug",
    "Антифриз Toyota красный 5л": "Toyota red antifreeze 5l",
    "Отбеливание Zoom 4": "Zoom 4 teeth whitening",
    "Удаление зуба мудрости": "wisdom tooth removal",
    "Коронка цирконий": "zirconia crown",
    "Консультация стоматолога": "dentist consultation",
}


def _in_english(business: str, items: list[KnowledgeItem]) -> list[Sample]:
    out = []
    for n, item in enumerate(i for i in items if i.name in IN_ENGLISH):
        said = IN_ENGLISH[item.name]
        other = next(i for i in items if i.price != item.price)
        out += [
            _s(business, "named_in_english", True, f"how much is the {said}?",
               f"The {said} is {written(item.price, 'kzt')}.", n),
            _s(business, "named_in_english_next_sentence", True, f"do you have the {said}?",
               f"Yes, we do. It costs {written(item.price, 'kzt')}.", n),
            _s(business, "named_in_english_line", True, f"I need 2 {said}",
               f"{said}: 2 × {written(item.price, 'kzt')} = {written(item.price * 2, 'kzt')}", n),
            _s(business, "named_in_english_other_price", False, f"how much is the {said}?",
               f"The {said} is {written(other.price, 'kzt')}.", n),
        ]  # fmt: skip
    return out


def _rules_only(
    business: str, rules: str, fee: Decimal | None, items: list[KnowledgeItem], rnd: random.Random
) -> list[Sample]:
    from assistant.decision.guardrails import deadlines, times

    out = []
    for n, (_, as_written) in enumerate(deadlines(rules)):
        out.append(_s(business, "rule_deadline", True, "how long does it take?",
                      f"It takes {as_written}.", n))  # fmt: skip
    for n, (_, as_written) in enumerate(times(rules)):
        out.append(_s(business, "rule_time", True, "when are you open?",
                      f"We work until {as_written} or from {as_written}.", n))  # fmt: skip
    out.append(_s(business, "time", False, "when can you deliver?",
                  "We can bring it at 21:30.", 0))  # fmt: skip
    if fee is not None:
        out += [
            _s(
                business,
                "rule_fee",
                True,
                "how much is delivery?",
                f"Delivery costs {written(fee, 'kzt')}.",
                0,
            ),
            _s(
                business,
                "rule_fee_ru",
                True,
                "сколько стоит доставка?",
                f"Доставка — {written(fee, 'tg')}.",
                0,
            ),
            _s(
                business,
                "invented_fee",
                False,
                "how much is delivery?",
                f"Delivery costs {written(fee + 500, 'kzt')}.",
                0,
            ),
            _s(
                business,
                "free_delivery_en",
                False,
                "is delivery free?",
                "Yes, delivery is free for you!",
                0,
            ),
        ]
    options = items[:3]
    shown = ", ".join(f"{i.name} ({written(i.price, 'kzt')})" for i in options)
    out.append(_s(business, "options", True, "what do you have?", f"Which one: {shown}?", 0))
    swapped = ", ".join(
        f"{i.name} ({written(options[(k + 1) % 3].price, 'kzt')})" for k, i in enumerate(options)
    )
    out.append(_s(business, "options_swapped", False, "what do you have?",
                  f"Which one: {swapped}?", 0))  # fmt: skip
    return out


# --- measuring ------------------------------------------------------------------------------


def measure(samples: list[Sample], golden: Golden | None = None) -> Figures:
    """Run every sample's reply through `guardrails.findings`."""
    from assistant.decision.guardrails import findings
    from assistant.eval.runner import load_golden
    from assistant.schema import HistoryEntry, TurnInput

    golden = golden or load_golden()
    figures = Figures()
    for number, sample in enumerate(samples, 1):
        knowledge = golden.knowledge[sample.business]
        history = [
            HistoryEntry(speaker, text, T0 + timedelta(minutes=i))  # type: ignore[arg-type]
            for i, (speaker, text) in enumerate(sample.history)
        ]
        pending = [
            HistoryEntry("customer", text, T0 + timedelta(minutes=len(history) + i))
            for i, text in enumerate(sample.customer)
        ]
        turn = TurnInput(
            business_id=knowledge.business_id,
            channel_id=knowledge.channel_id or 0,
            chat_id=number,
            language="",
            history=history,
            pending=pending,
        )
        found = [
            f.text for f in findings(sample.reply, turn, knowledge, golden.config[sample.business])
        ]
        figures.by_kind[("right:" if sample.right else "wrong:") + sample.kind] += 1
        if sample.right:
            figures.right += 1
            figures.right_passed += not found
            if found:
                figures.misses.append((sample, found))
        else:
            figures.wrong += 1
            figures.wrong_blocked += bool(found)
            if not found:
                figures.misses.append((sample, found))
    return figures


@dataclass
class GoldenCheck:
    """The catalogue assistant's replies to the golden conversations, judged by the eval's own
    amount judge (`assistant.eval.judge`, independent of the guardrail) and by the guardrail."""

    clean: int = 0  # replies the judge finds no wrong amount in
    clean_blocked: list[tuple[str, str, list[str]]] = field(default_factory=list)
    wrong: int = 0  # replies with an amount the judge says a right reply could not hold
    wrong_passed: list[tuple[str, str, list[str]]] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        options = sum(_is_options(reply) for _, reply, _ in self.wrong_passed)
        return {
            "catalogue_replies": self.clean + self.wrong,
            "judge_clean": self.clean,
            "judge_clean_blocked": len(self.clean_blocked),
            "judge_wrong": self.wrong,
            "judge_wrong_blocked": self.wrong - len(self.wrong_passed),
            "judge_wrong_passed_clarify_options": options,
            "judge_wrong_passed_other": len(self.wrong_passed) - options,
        }


def _is_options(reply: str) -> bool:
    return reply.startswith(("Уточните", "Which one"))


def against_golden(golden: Golden | None = None) -> GoldenCheck:
    """What the guardrail would do with the catalogue assistant's golden-set replies."""
    from assistant.decision.guardrails import findings
    from assistant.eval.runner import load_golden, run

    golden = golden or load_golden()
    check = GoldenCheck()
    for result in run(golden, None, "catalogue").results:
        case = result.case
        found = [
            f.text
            for f in findings(
                result.reply,
                case.turn,
                golden.knowledge[case.business],
                golden.config[case.business],
            )
        ]
        if result.invented:
            check.wrong += 1
            if not found:
                check.wrong_passed.append((case.id, result.reply, result.invented))
        else:
            check.clean += 1
            if found:
                check.clean_blocked.append((case.id, result.reply, found))
    return check


def main(argv: list[str] | None = None) -> int:
    import os

    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inbox.site.settings")
    django.setup()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--misses", action="store_true", help="show every reply judged wrongly")
    parser.add_argument("--json", action="store_true", help="the figures as JSON")
    parser.add_argument(
        "--golden",
        action="store_true",
        help="also judge the catalogue assistant's golden-set replies (eval judge vs guardrail)",
    )
    args = parser.parse_args(argv)
    figures = measure(generate())
    summary = figures.summary()
    if args.golden:
        check = against_golden()
        summary["golden"] = check.summary()
    if args.json:
        print(json.dumps(summary, ensure_ascii=False, indent=2))
    else:
        print(
            f"{summary['replies']} replies: right passed {figures.right_passed}/{figures.right} "
            f"({figures.right_pass_rate:.1%}), wrong blocked {figures.wrong_blocked}/"
            f"{figures.wrong} ({figures.wrong_block_rate:.1%})"
        )
        if args.golden:
            print("golden set, catalogue replies:", json.dumps(summary["golden"]))
    if args.misses:
        for sample, found in figures.misses:
            verdict = f"blocked: {found}" if found else "passed"
            print(f"\n[{sample.id}] {'right' if sample.right else 'WRONG'} reply {verdict}")
            print(f"  customer: {' | '.join(sample.customer)}")
            print(f"  reply:    {sample.reply!r}")
        if args.golden:
            for case_id, reply, found in check.clean_blocked:
                print(f"\n[{case_id}] judge-clean catalogue reply blocked: {found}\n  {reply!r}")
            for case_id, reply, wrong in check.wrong_passed:
                print(f"\n[{case_id}] judge-wrong catalogue reply passed {wrong}\n  {reply!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
