"""What tells items of one list apart, read from the names and descriptions themselves, so a
new trade needs no vocabulary of its own: options said with or without a thing ("Маникюр без
покрытия"), letter codes with their numbers ("М500", "R16", "B2"), sizes ("8 кг", "12 мм",
"до 70 м²"), and the words of a description that no other description shares. `Catalogue`
drops a match that contradicts what the customer wrote. Functions of the text alone."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal

from assistant.knowledge.matching.keys import content_tokens, is_stopword, word_key
from assistant.knowledge.matching.tokens import NUMBER_WORDS, QueryToken, analyse, normalise, words
from assistant.knowledge.matching.units import SIZES, Family, family_of


def described_keys(descriptions: Sequence[str]) -> list[frozenset[str]]:
    """Each description's word keys, less those many descriptions share ("цена от, зависит
    от длины" sets nothing apart)."""
    keyed = [
        {word_key(w) for w in words(d) if not w.isdigit() and not is_stopword(w) and len(w) > 2}
        for d in descriptions
    ]
    df = Counter(key for keys in keyed for key in keys)
    common = max(2, len(descriptions) // 10)
    return [frozenset(k for k in keys if df[k] <= common) for keys in keyed]


# Words that deny the word after them: "без покрытия", "without coating", "no gel".
DENYING = frozenset({"без", "without", "no", "non", "не"})


def is_denied(tokens: Sequence[QueryToken], position: int) -> bool:
    before = [t for t in tokens if position - 2 <= t.position < position]
    return any(t.word in DENYING for t in before)


# "не комплексную", "not the unlimited": the word after says what the customer does not want.
_NOT_BEFORE = frozenset({"не", "not", "без", "without"})
# "безлимит не нужен", "залог не надо", "абонемент керек емес": the word before is refused.
_REFUSED_AFTER = (
    ("не", "нужен"), ("не", "нужна"), ("не", "нужно"), ("не", "нужны"), ("не", "надо"),
    ("не", "интересует"), ("керек", "емес"), ("керек", "жоқ"), ("not", "needed"),
)  # fmt: skip


def refused_positions(tokens: Sequence[QueryToken]) -> frozenset[int]:
    """Positions of the words a customer refuses ("не комплексную, только кузов", "безлимит
    не нужен"): the first content word after a denial, or the last one before a refusal."""
    content = [t for t in tokens if not is_stopword(t.word) and t.number is None]
    by_position = {t.position: t for t in tokens}
    refused: set[int] = set()
    for t in tokens:
        after = by_position.get(t.position + 1)
        if t.word in _NOT_BEFORE:
            nxt = next((c for c in content if c.position > t.position), None)
            if nxt is not None and nxt.position - t.position <= 2:
                refused.add(nxt.position)
        if after is not None and (t.word, after.word) in _REFUSED_AFTER:
            before = [c for c in content if c.position < t.position]
            if before and t.position - before[-1].position <= 2:
                refused.add(before[-1].position)
    return frozenset(refused)


def letter_codes(tokens: Sequence[QueryToken]) -> dict[str, set[str]]:
    """Letter codes: a single letter right before a number ("м 500" of "М500", "r 16")."""
    by_position = {t.position: t for t in tokens}
    found: dict[str, set[str]] = {}
    for t in tokens:
        after = by_position.get(t.position + 1)
        if len(t.word) == 1 and t.word.isalpha() and after is not None and after.word.isdigit():
            found.setdefault(t.word, set()).add(after.word)
    return found


_UP_TO = frozenset({"до", "upto", "to", "max", "максимум", "дейін"})
_FROM = frozenset({"от", "from", "min", "минимум", "бастап"})


# A size as written: a number with its decimals ("0,5 л", "1.5 l", "19л"), a fraction or
# count in words ("полтора литра", "пол литра", "поллитровая", "half a litre", "он тоғыз
# литрлік"), then the unit, with the bound word before it ("до 70 м²").
_FRACTIONS = {"пол": Decimal("0.5"), "half": Decimal("0.5"), "полтора": Decimal("1.5"),
              "полторы": Decimal("1.5"), "жарты": Decimal("0.5")}  # fmt: skip
_SIZE_WORD_RE = re.compile(r"\d+(?:[.,]\d+)?|[a-zа-яёәғқңөұүһі]+")
_FILLERS = frozenset({"a", "an", "-"})
# Unit words that, said alone, are one of the unit ("кило", "литр"): a size, as "1 кг" is.
_ONE_OF = frozenset({"кило", "килограмм", "kilo", "литр", "litre", "liter"})


def sizes_stated(text: str) -> dict[str, list[tuple[Decimal, str]]]:
    """Sizes stated as a number and a unit of size ("8 кг", "0,5 л", "полтора литра", "до
    70 м²"), in the family's base unit, each with "<=" / ">=" when written as a bound, else
    "="."""
    written = [w for w in _SIZE_WORD_RE.findall(normalise(text)) if w not in _FILLERS]
    found: dict[str, list[tuple[Decimal, str]]] = {}
    # "двадцать четыре литра" is read as 24 and as 4 (a voice note's "ноль вэ двадцать,
    # четыре литра"): an item fits when either does.
    for i, word in enumerate(written):
        value, unit_at = _size_number(written, i)
        if value is None and word in _ONE_OF and (not i or _size_number(written, i - 1)[0] is None):
            value, unit_word = Decimal(1), word  # "бразилия кило": the kilo pack
        elif value is None and word.startswith("пол") and len(word) > 5:
            value, unit_word = Decimal("0.5"), word[3:]  # "поллитровая"
        elif value is not None and unit_at < len(written):
            unit_word = written[unit_at]
        else:
            continue
        unit = family_of(unit_word)
        if unit is None or unit[0] not in SIZES:
            continue
        bound = written[i - 1] if i else ""
        op = "<=" if bound in _UP_TO else ">=" if bound in _FROM else "="
        found.setdefault(unit[0].value, []).append((value * unit[1], op))
    return found


def periods_stated(text: str, family: Family = Family.MONTH) -> list[Decimal]:
    """The periods a text states, in months (or days): "3 месяца", "12 months", "на 2 дня",
    and a period said without a count ("на год", "monthly", "айлық") as one of it. "Безлимит
    на год" is then the name's "12 месяцев", not its "1 месяц"."""
    written = [w for w in _SIZE_WORD_RE.findall(normalise(text)) if w not in _FILLERS]
    found: list[Decimal] = []
    counted: set[int] = set()
    for i in range(len(written)):
        value, unit_at = _size_number(written, i)
        if value is None or unit_at >= len(written):
            continue
        unit = family_of(written[unit_at])
        if unit is not None and unit[0] is family:
            found.append(value * unit[1])
            counted.add(unit_at)
    for i, word in enumerate(written):
        unit = family_of(word)
        if i not in counted and unit is not None and unit[0] is family:
            found.append(unit[1])
    return found


def _size_number(written: list[str], i: int) -> tuple[Decimal | None, int]:
    """The number written at `i` (digits, a fraction or a count in words, "он тоғыз" as one)
    and where the word after it is."""
    word = written[i]
    if word[0].isdigit():
        return Decimal(word.replace(",", ".")), i + 1
    if word in _FRACTIONS:
        return _FRACTIONS[word], i + 1
    count = NUMBER_WORDS.get(word)
    if count is None and word != "он":
        return None, i
    after = NUMBER_WORDS.get(written[i + 1]) if i + 1 < len(written) else None
    if after is not None and after < 10 and (word == "он" or (count or 0) % 10 == 0):
        return Decimal((count or 10) + after), i + 2  # "он тоғыз", "двадцать пять"
    return (Decimal(count), i + 1) if count is not None else (None, i)


def fits(value: Decimal, bound: tuple[Decimal, str]) -> bool:
    size, op = bound
    return value <= size if op == "<=" else value >= size if op == ">=" else value == size


def code_positions(tokens: Sequence[QueryToken]) -> frozenset[int]:
    by_position = {t.position: t for t in tokens}
    return frozenset(
        p
        for t in tokens
        if len(t.word) == 1
        and t.word.isalpha()
        and (after := by_position.get(t.position + 1)) is not None
        and after.word.isdigit()
        for p in (t.position, t.position + 1)
    )


def polarity(name: str) -> dict[str, bool]:
    """A name's words, each with whether the name denies it: {key: denied}. Only the words
    some name of the list denies (the options) are compared."""
    tokens = analyse(name)
    return {word_key(t.word): is_denied(tokens, t.position) for t in content_tokens(tokens)}


SMALL, LARGE = word_key("small"), word_key("large")


def picked_by_size(names: Sequence[str], text: str) -> int | None:
    """Of look-alikes told apart by their sizes alone ("Коробка 40×30×30 см", "… 60×40×40
    см"), the one asked for as "small" or "big" in any language: the smallest or the biggest
    (its place in `names`); None when the text says neither or the sizes do not tell."""
    if len(names) < 2:
        return None
    asked = {word_key(w) for w in words(text)} & {SMALL, LARGE}
    if len(asked) != 1 or any(asked & {word_key(w) for w in words(n)} for n in names):
        return None
    sizes = [_name_size(n) for n in names]
    if None in sizes or len(set(sizes)) < len(names):
        return None
    pick = min if asked == {SMALL} else max
    return pick(range(len(names)), key=lambda i: sizes[i] or 0)


def _name_size(name: str) -> Decimal | None:
    """How big a name says its item is: the product of its numbers ("40×30×30 см")."""
    numbers = re.findall(r"\d+(?:[.,]\d+)?", name)
    if not numbers:
        return None
    return math.prod((Decimal(n.replace(",", ".")) for n in numbers), start=Decimal(1))
