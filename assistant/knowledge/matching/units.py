"""Units as price lists and customers write them, in any trade: what one priced unit of an item
is ("м²", "мешок 50 кг", "упаковка 2,16 м²", "100 г", "месяц", "занятие"), and how many of
those units a customer's words ask for ("12 кв.м", "30 квадратов", "5 қап", "for 3 months",
"4 куска по 6 метров", "1,5 кг", "a dozen", "десяток").

A unit is one of a few families (area, length, bag, sheet, month, lesson…), read from words in
Russian, Kazakh and English by their beginnings, so a new trade's list needs no vocabulary of
its own. A customer's quantity counts for an item only in the item's own family, or in the
family of what one unit holds (20 m² of laminate sold by the pack of 2.16 m² is 10 packs), or
in a mass or volume the unit converts to (1 kg of cookies priced per 100 g is 10 units).
Functions of the text alone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from enum import StrEnum

from assistant.knowledge.matching.tokens import COUNT_MULTIPLIERS
from assistant.knowledge.matching.tokens import NUMBER_WORDS as TOKEN_NUMBER_WORDS


class Family(StrEnum):
    PIECE = "piece"
    AREA = "m2"
    LENGTH = "m"
    VOLUME_M3 = "m3"
    MASS = "kg"
    LIQUID = "l"
    BAG = "bag"
    SHEET = "sheet"
    PACK = "pack"
    ROLL = "roll"
    BUCKET = "bucket"
    MONTH = "month"
    WEEK = "week"
    DAY = "day"
    HOUR = "hour"
    LESSON = "lesson"
    SESSION = "session"
    PERSON = "person"
    PAIR = "pair"
    SET = "set"
    PAGE = "page"


# Families that say how a thing is packed or measured, never which thing it is ("мешок",
# "лист", "кг"); a lesson, a month or a person may be part of what a service is.
CONTAINERS = frozenset(
    {
        Family.PIECE, Family.AREA, Family.LENGTH, Family.VOLUME_M3, Family.MASS, Family.LIQUID,
        Family.BAG, Family.SHEET, Family.PACK, Family.ROLL, Family.BUCKET,
    }
)  # fmt: skip

# Packaging a product may be named by ("Макарон коробка 6 шт", "a box of macarons").
PACKAGING = frozenset(
    {Family.BAG, Family.SHEET, Family.PACK, Family.ROLL, Family.BUCKET, Family.SET}
)

# Families whose number is a count ("30 мешков", "2 месяца"), not a size ("200 см", "5 кг").
COUNTED = frozenset(
    {
        Family.BAG, Family.SHEET, Family.PACK, Family.ROLL, Family.BUCKET, Family.MONTH,
        Family.WEEK, Family.DAY, Family.HOUR, Family.LESSON, Family.SESSION, Family.PERSON,
        Family.PAIR, Family.SET, Family.PAGE,
    }
)  # fmt: skip

# Each family's word beginnings (lower case, "ё" as "е"). Short forms are whole words.
_STARTS: dict[Family, tuple[str, ...]] = {
    Family.AREA: ("квадрат", "кв.м", "кв м", "квм", "кв.", "кв ", "sq", "square met", "шаршы",
                  "kvadrat"),
    Family.LENGTH: ("метр", "meter", "metre", "metr", "погон", "пог.", "пог ", "п.м", "running m",
                    "linear m", "pogon"),
    Family.VOLUME_M3: ("куб", "cubic", "текше"),
    Family.MASS: ("килограм", "кило", "kilo", "грам", "gram", "келі", "кели"),
    Family.LIQUID: ("литр", "liter", "litre", "litr"),
    Family.BAG: ("мешок", "мешк", "мешоч", "қап", "кап ", "bag", "sack", "meshk", "meshok",
                 "meshoch"),
    Family.SHEET: ("лист", "sheet", "табақ", "list"),
    Family.PACK: ("упаков", "уп.", "пачк", "пачек", "pack", "box", "коробк", "коробок", "пакет",
                  "қорап", "орам", "upakov", "korobk", "pachk"),
    Family.ROLL: ("рулон", "roll"),
    Family.BUCKET: ("ведр", "ведер", "bucket", "шелек"),
    Family.MONTH: ("месяц", "мес.", "month", "айға", "айлық", "mesyac", "mesyats", "mesiac"),
    Family.WEEK: ("недел", "week", "апта"),
    Family.DAY: ("день", "дня", "дней", "суток", "сутки", "day", "күн", "күнге"),
    Family.HOUR: ("час", "часа", "часов", "hour", "сағат", "sagat"),
    Family.LESSON: ("заняти", "урок", "lesson", "class", "сабақ", "сабак", "zanyat", "urok"),
    Family.SESSION: ("сеанс", "процедур", "session", "visit", "посещени", "визит"),
    Family.PERSON: ("человек", "чел.", "people", "person", "адам", "гост", "guest", "chelovek"),
    Family.PAIR: ("пар", "pair"),
    Family.SET: ("комплект", "набор", "set", "kit", "жиынтық"),
    Family.PAGE: ("страниц", "стр.", "page", "бет", "парақ"),
    Family.PIECE: ("штук", "шт", "pcs", "piece", "дана", "unit", "ед.", "shtuk", "издели", "item",
                   "dana"),
}  # fmt: skip
# Whole short words: "м", "m2", "кг", "ай" (a month in Kazakh), "мес".
_WORDS: dict[str, tuple[Family, Decimal]] = {
    "sqm": (Family.AREA, Decimal(1)), "квм": (Family.AREA, Decimal(1)),
    "м": (Family.LENGTH, Decimal(1)), "m": (Family.LENGTH, Decimal(1)),
    "мп": (Family.LENGTH, Decimal(1)), "пм": (Family.LENGTH, Decimal(1)),
    "см": (Family.LENGTH, Decimal("0.01")), "cm": (Family.LENGTH, Decimal("0.01")),
    "мм": (Family.LENGTH, Decimal("0.001")), "mm": (Family.LENGTH, Decimal("0.001")),
    "км": (Family.LENGTH, Decimal(1000)), "km": (Family.LENGTH, Decimal(1000)),
    "кубм": (Family.VOLUME_M3, Decimal(1)),
    "кг": (Family.MASS, Decimal(1)), "kg": (Family.MASS, Decimal(1)),
    "г": (Family.MASS, Decimal("0.001")), "гр": (Family.MASS, Decimal("0.001")),
    "g": (Family.MASS, Decimal("0.001")), "т": (Family.MASS, Decimal(1000)),
    "тонн": (Family.MASS, Decimal(1000)), "тонна": (Family.MASS, Decimal(1000)),
    "тонны": (Family.MASS, Decimal(1000)), "л": (Family.LIQUID, Decimal(1)),
    "l": (Family.LIQUID, Decimal(1)), "мл": (Family.LIQUID, Decimal("0.001")),
    "ml": (Family.LIQUID, Decimal("0.001")), "ай": (Family.MONTH, Decimal(1)),
    "айға": (Family.MONTH, Decimal(1)), "мес": (Family.MONTH, Decimal(1)),
    "mo": (Family.MONTH, Decimal(1)), "ч": (Family.HOUR, Decimal(1)),
    "h": (Family.HOUR, Decimal(1)), "уп": (Family.PACK, Decimal(1)),
    "шт": (Family.PIECE, Decimal(1)), "pc": (Family.PIECE, Decimal(1)),
    "пог": (Family.LENGTH, Decimal(1)), "кв": (Family.AREA, Decimal(1)),
    "kv": (Family.AREA, Decimal(1)), "sht": (Family.PIECE, Decimal(1)),
    "стр": (Family.PAGE, Decimal(1)), "pp": (Family.PAGE, Decimal(1)),
    # a year, half a year and a quarter, in months ("абонемент на год" is the 12-month one)
    "год": (Family.MONTH, Decimal(12)), "года": (Family.MONTH, Decimal(12)),
    "году": (Family.MONTH, Decimal(12)), "годовой": (Family.MONTH, Decimal(12)),
    "годовая": (Family.MONTH, Decimal(12)), "годовую": (Family.MONTH, Decimal(12)),
    "year": (Family.MONTH, Decimal(12)), "years": (Family.MONTH, Decimal(12)),
    "yearly": (Family.MONTH, Decimal(12)), "annual": (Family.MONTH, Decimal(12)),
    "жыл": (Family.MONTH, Decimal(12)), "жылға": (Family.MONTH, Decimal(12)),
    "жылдық": (Family.MONTH, Decimal(12)), "полгода": (Family.MONTH, Decimal(6)),
    "квартал": (Family.MONTH, Decimal(3)),
    # hours in Latin letters ("na 2 chasa"); "chastnyi" is no hour
    "chas": (Family.HOUR, Decimal(1)), "chasa": (Family.HOUR, Decimal(1)),
    "chasov": (Family.HOUR, Decimal(1)),
    # a person, shortened ("1 200 тг/чел"), and in Kazakh and trade English
    "чел": (Family.PERSON, Decimal(1)), "кісі": (Family.PERSON, Decimal(1)),
    "pax": (Family.PERSON, Decimal(1)),
}  # fmt: skip
# Counts written as words: the tokens' table (`tokens.NUMBER_WORDS`), with the fractions a
# measure can take ("полтора кило", "half a metre"); words that multiply the number before
# them ("2 dozen", "три десятка") likewise.
NUMBER_WORDS: dict[str, Decimal] = {
    **{word: Decimal(n) for word, n in TOKEN_NUMBER_WORDS.items()},
    "half": Decimal("0.5"), "полтора": Decimal("1.5"), "полторы": Decimal("1.5"),
    "полтара": Decimal("1.5"), "пол": Decimal("0.5"), "жарты": Decimal("0.5"),
    "десятка": Decimal(10), "десятков": Decimal(10),
}  # fmt: skip
MULTIPLIER_WORDS: dict[str, Decimal] = {
    **{word: Decimal(n) for word, n in COUNT_MULTIPLIERS.items()},
    "десяток": Decimal(10),
}


@dataclass(frozen=True)
class Measure:
    """One priced unit of an item: `size` of `family` ("100 г" → 0.1 kg), and what one such
    unit holds when the list says so ("мешок 50 кг" holds 50 kg; "упаковка 2,16 м²" 2.16 m²)."""

    family: Family
    size: Decimal = Decimal(1)
    holds: tuple[Family, Decimal] | None = None


_NUMBER = r"\d+(?:[.,]\d+)?"
_NOT_AFTER_LETTER = r"(?<![^\W\d_])"
_TOKEN_RE = re.compile(rf"{_NUMBER}|[^\W\d_]+|[×]", re.UNICODE)
# Between a count and a length: "4 куска по 6 метров", "3 pieces of 6 m", "4 x 6 м".
_EACH = frozenset({"по", "of", "x", "х", "×", "at"})


def _tokens(text: str) -> list[str]:
    text = text.lower().replace("ё", "е")
    # "кв.м", "п.м", "пог.м" are one unit; "м2"/"m²" are one word; "2шт" is a count and a unit.
    text = re.sub(rf"{_NOT_AFTER_LETTER}кв\.?\s?м(?![^\W\d_])\.?", " квм ", text)
    text = re.sub(rf"{_NOT_AFTER_LETTER}(?:пог|п)\.?\s?м(?![^\W\d_])\.?", " пм ", text)
    text = re.sub(rf"{_NOT_AFTER_LETTER}[мm]\s?(?:\^?2|²)(?!\d)", " квм ", text)
    text = re.sub(rf"{_NOT_AFTER_LETTER}[мm]\s?(?:\^?3|³)(?!\d)", " кубм ", text)
    return _TOKEN_RE.findall(text)


def family_of(word: str) -> tuple[Family, Decimal] | None:
    """The unit a word names, with its size in the family's base unit ("г" → 0.001 kg)."""
    word = word.lower().replace("ё", "е").rstrip(".")
    if word in _WORDS:
        return _WORDS[word]
    if len(word) < 3:
        return None
    probe = word + " "
    for family, starts in _STARTS.items():
        # A beginning of four letters or more begins the word; a shorter one is the word
        # itself or its plural ("bag", "bags"; never the "kit" of "kitchen").
        for s in starts:
            if probe.startswith(s) if len(s.strip()) >= 4 else word in _short_forms(s):
                return family, _SIZES.get(s, Decimal(1))
    return None


# Beginnings that name a fraction or a multiple of their family's base unit.
_SIZES: dict[str, Decimal] = {
    "грам": Decimal("0.001"), "gram": Decimal("0.001"), "милли": Decimal("0.001"),
}  # fmt: skip

# Families whose number is a size of the thing ("5 м²", "2-килограммовый", "12 мм"), so a
# different size is a different item.
SIZES = frozenset({Family.AREA, Family.LENGTH, Family.VOLUME_M3, Family.MASS, Family.LIQUID})


def _short_forms(start: str) -> set[str]:
    stem = start.strip(" .")
    return {stem, stem + "s", stem + "es", stem + "а", stem + "ы", stem + "у", stem + "ов"}


def _number(word: str) -> Decimal | None:
    if word[:1].isdigit():
        try:
            return Decimal(word.replace(",", "."))
        except ArithmeticError:
            return None
    return NUMBER_WORDS.get(word)


def measure_of(unit: str) -> Measure | None:
    """What one priced unit of an item is, read from the list's unit column: "м²", "мешок 50
    кг", "упаковка (2,16 м²)", "100 г", "месяц", "8 занятий" (a package: one unit, holding 8
    lessons). None when the column names no unit the reader knows."""
    tokens = _tokens(unit)
    found: list[tuple[Decimal | None, Family, Decimal]] = []
    pending: Decimal | None = None
    for word in tokens:
        number = _number(word)
        if number is not None:
            pending = number
            continue
        named = family_of(word)
        if named is not None:
            found.append((pending, named[0], named[1]))
        pending = None
    if not found:
        return None
    count, family, size = found[0]
    holds = None
    if len(found) > 1 and found[1][0] is not None:
        holds = (found[1][1], found[1][0] * found[1][2])
    if count is not None and count != 1 and holds is None:
        if family in (Family.MASS, Family.LIQUID, Family.LENGTH, Family.AREA):
            return Measure(family, count * size)  # "100 г": a price per 0.1 kg
        # "8 занятий", "100 шт" (business cards by the hundred): one unit holds that many.
        return Measure(Family.PACK, Decimal(1), (family, count))
    if count is not None and holds is None and family is not Family.PIECE:
        return Measure(Family.PACK, Decimal(1), (family, count))  # "1 месяц": a package
    return Measure(family, size, holds)


# Two sides of a thing sold by the m²: "3 на 4 метра", "2х3", "2,5 x 3,5 м", "200×300 см".
_SIDES_RE = re.compile(
    r"(?<![\d.,])(\d{1,3}(?:[.,]\d{1,2})?)\s*(?:x|х|×|\*|на|by)\s*(\d{1,3}(?:[.,]\d{1,2})?)"
    r"(?![\d.,])\s*(см|cm|сантиметр\w*|м|m|метр\w*|metr\w*|meter\w*)?(?![^\W\d_])",
    re.IGNORECASE,
)


def _area_of_sides(text: str) -> Decimal | None:
    """The area two sides make, in m²: in centimetres or metres where written so, in metres
    where both are small ("2х3"); None otherwise ("60х60" of a tile's size is no area)."""
    found = _SIDES_RE.search(text.lower())
    if found is None:
        return None
    a, b = (Decimal(found.group(n).replace(",", ".")) for n in (1, 2))
    unit = found.group(3) or ""
    if unit.startswith(("с", "c")):
        return a * b / 10000
    if unit or (a <= 20 and b <= 20):
        return a * b
    return None


def quantity_in(
    text: str, measure: Measure, named: dict[str, list[tuple[Decimal, str]]] | None = None
) -> Decimal | None:
    """How many priced units of an item `text` asks for, where it says so in a unit: "12 кв.м"
    of an item sold by m², "20 m2" of one sold by the pack of 2.16 m² (10 packs, rounded up),
    "4 куска по 6 метров" of one sold by the metre (24), "1 кг" of one sold per 100 g (10).
    None when the text gives no quantity in a unit the item is sold in. `named`: the sizes the
    item's name states ("Труба 20 мм"), which are which item, never how much of it."""
    tokens = _tokens(text)
    written: list[tuple[Decimal, Family, Decimal]] = []  # (number, family, size) as written
    for i, word in enumerate(tokens):
        glued = family_of(word[3:]) if word.startswith("пол") and len(word) > 5 else None
        if glued is not None:  # "полкило", "поллитра": half of the unit
            if (Decimal("0.5") * glued[1], "=") not in (named or {}).get(glued[0].value, []):
                written.append((Decimal("0.5"), *glued))
            continue
        number = _number(word)
        if number is None or number <= 0:
            continue
        j = i + 1
        if j < len(tokens) and tokens[j] in ("a", "an"):  # "half a kilo"
            j += 1
        if j < len(tokens) and tokens[j] in MULTIPLIER_WORDS:
            number *= MULTIPLIER_WORDS[tokens[j]]
            j += 1
        pieces = _pieces_of(tokens, j, measure)
        if pieces is not None:
            return _units(number * pieces, measure.size)
        unit = family_of(tokens[j]) if j < len(tokens) else None
        if unit is not None and (number * unit[1], "=") not in (named or {}).get(unit[0].value, []):
            written.append((number, *unit))
    # The item's own unit first ("10 мешков" beats the "50 кг" a bag holds), then what it holds.
    for number, family, size in written:
        if family == measure.family:
            return _units(number * size, measure.size)
    if measure.family is Family.AREA and (sides := _area_of_sides(text)) is not None:
        return _units(sides, measure.size)  # "ковёр 3 на 4 метра": 12 m²
    for number, family, size in written:
        converted = _convert(number * size, family, measure)
        if converted is not None:
            return converted
    return None


def _pieces_of(tokens: list[str], j: int, measure: Measure) -> Decimal | None:
    """The length (area…) of each piece when a count is followed by "по 6 метров", "(куска)
    по 6 м", "of 6 m": in the item's own family, else None."""
    for k in (j, j + 1):
        if k + 2 < len(tokens) and tokens[k] in _EACH:
            each = _number(tokens[k + 1])
            inner = family_of(tokens[k + 2])
            if each is not None and inner is not None and inner[0] == measure.family:
                return each * inner[1]
    return None


def _convert(amount: Decimal, family: Family, measure: Measure) -> Decimal | None:
    if family == measure.family:
        return _units(amount, measure.size)
    if measure.holds is not None and family == measure.holds[0] and measure.holds[1] > 0:
        return (amount / measure.holds[1]).to_integral_value(rounding=ROUND_CEILING)
    return None


def _units(amount: Decimal, size: Decimal) -> Decimal:
    units = amount / size if size else amount
    if units == units.to_integral_value():
        return units.quantize(Decimal(1))
    return units.normalize()


def format_quantity(qty: Decimal | int) -> str:
    """A quantity as a reply writes it: "30", "12,5" (a decimal comma: "12.5" reads as a date),
    never "30.00" or "1E+1"."""
    value = Decimal(qty)
    if value == value.to_integral_value():
        return str(int(value))
    return format(value.normalize(), "f").replace(".", ",")


# "Минимум 2 часа", "минимальный вес 1,5 кг", "не менее 3 часов", "minimum 4 hours",
# "отвешиваем от 0,5 кг", "от 50 м²", "кемінде 2 сағат": the least an item is sold in.
_MINIMUM_RE = re.compile(
    r"(?:минимум|минимальн\w*(?:\s+(?:вес|заказ|объем|количество|площадь|время|срок))?|"
    r"не менее|minimum(?:\s+(?:order|of))?|min|кемінде|от)\s+(?=\d)"
)


def minimum_of(description: str, measure: Measure | None) -> Decimal | None:
    """The least quantity of an item its description states, in the unit it is priced in; None
    when it states none in that unit ("от 14 лет" of a monthly course is an age, not a
    minimum)."""
    if measure is None or not description:
        return None
    found: list[Decimal] = []
    for match in _MINIMUM_RE.finditer(description.lower().replace("ё", "е")):
        tokens = _tokens(description.lower().replace("ё", "е")[match.end() :])[:2]
        number = _number(tokens[0]) if tokens else None
        unit = family_of(tokens[1]) if len(tokens) > 1 else None
        if match.group(0).startswith("от") and measure.family is Family.PIECE:
            continue  # "скидка от 5 шт" is a threshold, not the least one buys
        if number is not None and unit is not None and unit[0] == measure.family:
            found.append(_units(number * unit[1], measure.size))
    return max(found) if found else None
