"""How many of a thing the customer wants: a message cut into the parts that each name one
thing ("a table and 4 chairs"), the count written next to an item ("2 chairs", "chairs x2",
"стул 3 шт"; a size, weight or amount is not one), a part that gives only a count ("штук 6",
"6 of them"), a count in the item's own unit ("3 зуба"), a counted part that names nothing
("фумленту 3 шт"), and who the order is for ("нас трое", "2 взрослых и ребёнок 8 лет")."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import NamedTuple

from assistant.knowledge.matching.keys import ATTRIBUTE_KEYS, is_stopword, word_key
from assistant.knowledge.matching.tokens import COUNT_MULTIPLIERS, QueryToken, analyse, words
from assistant.knowledge.matching.units import SIZES, Family, family_of

# After a number, the families that make it a size or a time, not how many of a thing.
NOT_COUNTS = SIZES | {Family.MONTH, Family.WEEK, Family.DAY, Family.HOUR}

SEPARATORS_RE = re.compile(
    r"[;+\n]|(?<!\d),|,(?!\d)|(?<!\d)[.?!]|[.?!](?!\d)"
    r"|\s(?:and|also|plus|as well as|и|а также|плюс|ещё|еще|және|мен|тағы)\s",
    re.IGNORECASE,
)


def segments(text: str) -> list[str]:
    """The parts of a message that each name one thing: "a table and 4 chairs" → two parts."""
    return [part.strip() for part in SEPARATORS_RE.split(f" {text} ") if part and part.strip()]


# A part that only gives a count for the thing named before it: "стулья дубовые, штук 6",
# "chairs, 6 of them", "свечи, штуки 4", "6 pcs", "x6", "алты дана".
COUNT_UNITS = frozenset(
    [
        "штук",
        "штуки",
        "штука",
        "штучки",
        "штучек",
        "шт",
        "pcs",
        "pc",
        "pieces",
        "piece",
        "units",
        "unit",
        "items",
        "x",
        "х",
        "them",
        "их",
        "дана",
        "данасы",
    ]
)
# What a piece comes in ("3 tubes of sealant", "4 баллона пены", "2 банки краски"): words a
# count may stand before, by their first letters.
_VESSELS = (
    "tube", "can", "cans", "bottle", "баллон", "тюбик", "флакон", "бутыл", "банк", "пачк",
    "roll", "рулон", "box", "boxes", "коробк", "қорап", "pack", "packs", "упаковк", "bag",
    "bags", "мешк", "мешок", "ведр", "bucket", "jar", "jars",
)  # fmt: skip


def is_vessel(word: str) -> bool:
    return any(word.startswith(v) if len(v) > 3 else word == v for v in _VESSELS)


_COUNT_FILLERS = frozenset(
    [
        "керек",
        "маған",
        "ну",
        "и",
        "and",
        "of",
        "about",
        "around",
        "approximately",
        "all",
        "in",
        "total",
        "примерно",
        "около",
        "где",
        "то",
        "где-то",
        "всего",
        "всех",
        "все",
        "нужно",
        "надо",
        "need",
        "бы",
        "мне",
        "me",
        "please",
        "пожалуйста",
    ]
)


def count_only(part: str) -> int | None:
    """The count a part gives when it names nothing but a count ("штук 6", "6 of them"), or
    None when the part says anything else."""
    tokens = analyse(part)
    numbers = [t.number for t in tokens if t.number is not None]
    if len(numbers) != 1 or not 0 < numbers[0] < 1000:
        return None
    rest = [t.word for t in tokens if t.number is None]
    if not any(w in COUNT_UNITS or is_vessel(w) for w in rest):
        return None
    if any(w not in COUNT_UNITS and w not in _COUNT_FILLERS and not is_vessel(w) for w in rest):
        return None
    return numbers[0]


# Dates and floors carry numbers that count nothing sold ("14 марта", "5 этаж").
_NOT_ORDERED = re.compile(
    r"^(?:январ|феврал|март|апрел|мая|май|июн|июл|август|сентябр|октябр|ноябр|декабр|"
    r"january|february|march|april|june|july|august|september|october|november|december|"
    r"қаңтар|ақпан|наурыз|сәуір|мамыр|маусым|шілде|тамыз|қыркүйек|қазан|қараша|желтоқсан|"
    r"этаж|floor|қабат|утра|вечера|дня|ночи|лет|года|год|жас|year|old|числ|дом|кв|apt|"
    r"минут|minute|сағат|час|hour|рублей|тенге|тг|kzt|процент|percent)"
)


def orders_unnamed(part: str) -> bool:
    """Whether a part counts pieces of something by a word of its own ("фумленту 3 шт",
    "2 пачки чего-то"): a count with a piece or vessel word beside it, and a word that is no
    unit, vessel, date or filler. Where such a part names nothing on the list, an order total
    would leave it out."""
    tokens = analyse(part)
    by_position = {t.position: t for t in tokens}

    def pieces(t: QueryToken | None) -> bool:
        return t is not None and (t.word in COUNT_UNITS or is_vessel(t.word))

    counted = [
        t
        for t in tokens
        if t.number is not None
        and (pieces(by_position.get(t.position + 1)) or pieces(by_position.get(t.position - 1)))
    ]
    named = [
        t.word
        for t in tokens
        if t.number is None
        and t.word.isalpha()
        and len(t.word) >= 4
        and not is_stopword(t.word)
        and t.word not in COUNT_UNITS
        and t.word not in _COUNT_FILLERS
        and not is_vessel(t.word)
        and family_of(t.word) is None
        and not _NOT_ORDERED.match(t.word)
    ]
    return bool(counted) and bool(named)


# Words between an item and its count: "tires, a set of 4", "комплект из 4".
COUNT_WORDS = frozenset({"set", "kit", "pack", "box", "комплект", "набор", "из", "упаковка"})


def quantity_of_unit(text: str, unit: str) -> int | None:
    """A count written with the item's own unit word, whatever the unit ("3 зуба" for a price
    per tooth, "6 таблеток" per "таблетка"): the words meet by key or by their first five
    letters (Russian endings change more than a stemmer strips). None when not written."""
    unit_words = [w for w in words(unit) if not w.isdigit()]
    unit_keys = {word_key(w) for w in unit_words}
    heads = {w[:5] for w in unit_words if len(w) >= 5}
    tokens = analyse(text)
    for this, after in itertools.pairwise(tokens):
        if this.number is None or not 0 < this.number < 1000:
            continue
        if word_key(after.word) in unit_keys or (len(after.word) >= 5 and after.word[:5] in heads):
            return this.number
    return None


# A number followed by one of these is a size, weight or amount, not how many the customer wants.
_MEASURES = (
    "cm mm m kg g l ml см мм м кг г л мл литр литра литров метр метра метров inch дюйм x х "
    "тг тенге kzt k к тыс тысяч тысячи млн usd rub руб ah лет года год years year old жас жаста "
    "жастағы месяцев months дней days этаж этаже floor floors"
)
MEASURE_WORDS = frozenset(_MEASURES.split())


# Chat English writes "for" and "to" as digits before an article: "4 a screen", "2 the airport".
_CHAT_FOR = frozenset({"4", "2"})
_ARTICLES = frozenset({"a", "an", "the", "my", "your", "this", "that"})


def _one_word_between(by_position: dict[int, QueryToken], p: int, first: int) -> bool:
    word = by_position[p].word
    before = by_position.get(p - 1)
    return (
        p == first - 1
        and before is not None
        and before.number is not None
        and (before.word.isdigit() or not _COLLECTIVE.search(before.word))  # "трое" are people
        and word not in COUNT_MULTIPLIERS  # "2 десятка яиц": the unit, not a word between
        and word.isalpha()
        and len(word) >= 4
        and family_of(word) is None
        and not is_vessel(word)
        and not _NOT_ORDERED.match(word)
    )


def quantity_near(
    tokens: Sequence[QueryToken], positions: frozenset[int], exclude: set[int]
) -> int:
    """The quantity the customer put next to an item: "2 chairs", "chairs x2", "стул 3 шт"."""
    if not positions:
        return 1
    first, last = min(positions), max(positions)
    by_position = {t.position: t for t in tokens}

    def count_at(p: int) -> int | None:
        t = by_position.get(p)
        if t is None or t.number is None or p in exclude or not 0 < t.number < 1000:
            return None
        before = by_position.get(p - 1)
        if t.word in COUNT_MULTIPLIERS and before is not None and before.number:
            return before.number * COUNT_MULTIPLIERS[t.word]  # "2 dozen cupcakes"
        after = by_position.get(p + 1)
        if after is not None and after.word in MEASURE_WORDS and after.word != "x":
            return None
        if after is not None and (family_of(after.word) or (None,))[0] in NOT_COUNTS:
            return None  # "62 кв м", "2-килограммовый", "3 месяца": a size or a time
        if after is not None and len(after.word) == 3 and after.word.isdigit():
            return None  # "30 000": an amount written in groups of thousands
        if after is not None and after.word in COUNT_MULTIPLIERS:
            return t.number * COUNT_MULTIPLIERS[after.word]  # "2 dozen"
        if t.word in _CHAT_FOR and after is not None and after.word in _ARTICLES:
            return None  # "how much 4 a screen": chat for "for", never "4 a"
        return t.number

    for p in range(first - 1, max(-1, first - 4), -1):
        t = by_position.get(p)
        if t is None:
            break
        number = count_at(p)
        if number is not None:
            return number
        vessel = is_vessel(t.word)
        # "20 small boxes", "2 white chairs": a word that only describes stands between; so
        # may one word the list does not know, right before the name ("2 everyday dresses").
        describes = word_key(t.word) in ATTRIBUTE_KEYS or _one_word_between(by_position, p, first)
        skipped = is_stopword(t.word) or vessel or describes or t.number is not None
        if not skipped and p not in positions:
            break
    for p in range(last + 1, last + 7):
        t = by_position.get(p)
        if t is None:
            break
        number = count_at(p)
        if number is not None:
            return number
        if not is_stopword(t.word) and t.number is None and t.word not in COUNT_WORDS:
            break
    # Inside the name's words: "химчистку пяти тканевых сидений", "seat cleaning for 4 seats".
    inside = [
        count_at(p) for p in range(first + 1, last) if p not in positions and p + 1 in positions
    ]
    return next((n for n in inside if n is not None), 1)


# Who the party is: "нас трое", "we are 5", "біз үшеуміз", "на двоих", "10 человек", "for all 5",
# "2 взрослых и ребёнок 8 лет", "2 adults and 2 kids (6 and 11)", "екі ересек және бір бала (7
# жаста)".
_WE = frozenset({"нас", "we", "біз", "us", "all", "всех", "барлығы", "барлығымыз"})
_FOR = frozenset({"на", "для", "за", "for", "of"})
_ADULTS = ("взросл", "adult", "ересек")
_CHILDREN = ("ребен", "ребён", "дет", "child", "kid", "бала")
_AGE_WORDS = ("лет", "год", "года", "жас", "жаста", "жастағы", "years", "year", "yo", "y")
# "двоих", "трое", "четверо", "пятерых", "үшеуміз": numbers that count people by themselves.
_COLLECTIVE = re.compile(r"(?:ое|оих|еро|ерых|еуміз|еу|ауміз|ау)$")
_JOINTS = frozenset({"и", "and", "және", "мен", ","})
# "kids (6 and 11)": the ages, in brackets after the children.
_AGES_RE = re.compile(r"\(([\d\s,иandжәне-]+)\)")


def names_a_child(word: str) -> bool:
    """Whether a word names a child: "ребёнок", "детей", "kids", "балалар"; not "деталь"."""
    word = word.lower()
    return word.startswith(_CHILDREN) and not word.startswith(("детал", "балан", "балл"))


class Party(NamedTuple):
    """The people an order is for: `people` counted together (adults, or everyone where no
    child is named), and each child's age (None where not said)."""

    people: int | None
    children: tuple[int | None, ...] = ()


def party_of(text: str) -> Party | None:
    """Who the customer says the order is for; None when they do not say."""
    tokens = analyse(text)
    by_position = {t.position: t for t in tokens}
    people: list[int] = []
    adults = 0
    children: list[int | None] = []
    ages: set[int] = set()
    for t in tokens:
        if names_a_child(t.word):
            before = by_position.get(t.position - 1)
            count = before.number if before is not None and before.number else 1
            children += [None] * count
    for t in tokens:
        if t.number is None or not 0 < t.number < 200:
            continue
        after = by_position.get(t.position + 1)
        if after is not None and after.word in _AGE_WORDS:
            ages.add(t.position)
            # "4 и 9 лет", "6, 8 and 11 years": the numbers joined to it are ages too
            p = t.position - 1
            while (joint := by_position.get(p)) is not None and joint.word in _JOINTS:
                age = by_position.get(p - 1)
                if age is None or age.number is None:
                    break
                ages.add(age.position)
                p -= 2
    child_ages = [by_position[p].number for p in sorted(ages)]
    for match in _AGES_RE.finditer(text):
        child_ages += [int(n) for n in re.findall(r"\d+", match.group(1))]
    if children:
        # "дети 3 и 8 лет": as many children as ages said, where more than counted
        children = [*child_ages, *children[len(child_ages) :]]
    in_brackets = {int(n) for m in _AGES_RE.finditer(text) for n in re.findall(r"\d+", m.group(1))}
    for t in tokens:
        if t.number is None or not 0 < t.number < 200 or t.position in ages:
            continue
        if children and t.number in in_brackets:
            continue
        before = by_position.get(t.position - 1)
        before2 = by_position.get(t.position - 2)
        after = by_position.get(t.position + 1)
        if after is not None and after.word.startswith(_ADULTS):
            adults += t.number
            continue
        person = after is not None and (family_of(after.word) or (None,))[0] is Family.PERSON
        said_of_us = any(w is not None and w.word in _WE for w in (before, before2))
        collective = not t.word.isdigit() and bool(_COLLECTIVE.search(t.word))
        for_them = before is not None and before.word in _FOR and collective
        us = by_position.get(t.position + 2)
        of_us = after is not None and after.word == "of" and us is not None and us.word == "us"
        if person or said_of_us or for_them or of_us or t.word.endswith("уміз"):
            people.append(t.number)
    if children:
        return Party(adults or None, tuple(children))
    if adults or people:
        return Party(adults or max(people))
    return None
