"""Which items of the list a text names, and the quantities the customer gave them.

`items_named` resolves a text to list items (`Catalogue.resolve`, remembered per list);
`stated_quantities` reads the customer's messages for "4 chairs" ("4" to the chairs, not to the
table named before them; an age, a floor or an amount of money is not a count); `mask_codes`
blanks the list's SKUs so "04465-33471" is never read as money."""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from decimal import Decimal

from assistant.decision.guardrails.sentences import blank_amounts
from assistant.knowledge.effective import Knowledge
from assistant.knowledge.matching import (
    Catalogue,
    ItemMatch,
    QueryToken,
    analyse,
    content_tokens,
    quantity_in,
    quantity_near,
    segments,
)


def items_named(knowledge: Knowledge, text: str, strong: bool = False) -> set[int]:
    """The items a text names: each thing named resolves to the items that explain its words
    best ("oak table" to the oak tables, not to every table); SKUs name their item. `strong`
    keeps only things named by at least half their name (a stray "come" is not "Корея")."""
    if not text.strip() or not knowledge.items:
        return set()
    return {
        m.index
        for group in _resolve(knowledge, text)
        if not strong or any(m.by_sku or m.coverage >= 0.5 for m in group)
        for m in group
    }


def stated_quantities(knowledge: Knowledge, texts: Sequence[str]) -> dict[int, set[Decimal]]:
    """item index → the quantities the customer put next to it (`Catalogue.order_lines`: "4
    oak dining chairs" gives the chairs 4, not the table named before them). A number that
    reads as a count anywhere in the message goes to what it names ("the Lux chair for 40k if
    I take ten": ten; "7 жаста", a child's age, is not one); a message naming none ("4 of
    them") gives its numbers to the items named last. Amounts of money are not quantities;
    a quantity in the unit an item is sold in is one, in that unit ("for 3 months" of a
    monthly fee, "12 кв.м" of a price per m²)."""
    stated: dict[int, set[Decimal]] = {}
    last: set[int] = set()
    catalogue = knowledge.catalogue
    for raw in texts:
        unmasked = blank_amounts(mask_codes(raw, knowledge))
        text = NOT_A_COUNT.sub(lambda m: " " * len(m.group(0)), unmasked)
        lines = catalogue.order_lines(text) if knowledge.items else []
        lines += [
            (group, qty)
            for group, qty in (catalogue.order_lines(unmasked) if knowledge.items else [])
            if len(group) == 1 and qty != 1 and catalogue.measures[group[0].index] is not None
        ]
        groups = _resolve(knowledge, text)
        in_names = {p for g in groups for m in g for p in m.number_positions}
        tokens = analyse(text)
        free = [
            Decimal(t.number)
            for t in tokens
            if t.number is not None
            and 0 < t.number < 1000
            and t.position not in in_names
            and _reads_as_a_count(tokens, t.position)
        ]
        if not lines:
            for index in last:
                stated.setdefault(index, set()).update(free)
            continue
        named_now: set[int] = set()
        for group, qty in [*lines, *_own_quantities(knowledge, text)]:
            for match in group:
                stated.setdefault(match.index, set()).add(qty)
                stated[match.index].update(free)
                named_now.add(match.index)
        last = named_now
    return stated


# A number that is an age, a floor, a size or a time, not how many the customer wants.
NOT_A_COUNT = re.compile(
    r"(?<![\d.,])\d+\s*-?\s*(?:жас\w*|лет|год\w*|years?|yo\b|old|этаж\w*|floor\w*|қабат\w*|"
    r"дн\w*|день|days?|күн\w*|час\w*|hours?|сағат\w*|недел\w*|weeks?|месяц\w*|months?|"
    r"%|st\b|nd\b|rd\b|th\b)",
    re.IGNORECASE,
)
_BUYING = frozenset(
    [
        "take",
        "buy",
        "order",
        "need",
        "want",
        "get",
        "for",
        "x",
        "×",
        "возьму",
        "беру",
        "берём",
        "возьмём",
        "куплю",
        "купим",
        "нужно",
        "нужна",
        "нужен",
        "надо",
        "хочу",
        "закажу",
        "заказать",
        "аламын",
        "аламыз",
        "керек",
        "алам",
    ]
)
_PIECES = frozenset(
    [
        "шт",
        "штук",
        "штуки",
        "штука",
        "pcs",
        "pieces",
        "piece",
        "units",
        "unit",
        "дана",
        "of",
        "канистр",
        "канистры",
    ]
)


def _reads_as_a_count(tokens: Sequence[QueryToken], position: int) -> bool:
    """Whether a number stands where a count stands: after "take/need/возьму/аламын" or before
    "pcs/шт/дана" ("if I take ten", "12 канистр"), not any number of a message."""
    by_position = {t.position: t for t in tokens}
    before = {by_position[p].word for p in (position - 1, position - 2) if p in by_position}
    after = by_position.get(position + 1)
    return bool(before & _BUYING) or (after is not None and after.word in _PIECES)


def _own_quantities(knowledge: Knowledge, text: str) -> list[tuple[list[ItemMatch], Decimal]]:
    """The quantity next to each thing named, part by part, where only the thing's own name
    numbers are not quantities: `order_lines` also sets aside numbers another, weaker match
    took ("4 × Масляный фильтр" loses its 4 to "Масло … 4л")."""
    found = []
    for part in segments(text):
        tokens = analyse(part)
        letters = {t.position for t in tokens if len(t.word) == 1 and not t.word.isdigit()}
        for group in _resolve(knowledge, part):
            words_at = set(group[0].positions) - set(group[0].number_positions)
            if not words_at:
                continue
            first = min(words_at)
            # A name's numbers follow its words ("Масло … 4л"): a number before them is a
            # quantity even when it equals one ("4 Масло моторное … 4л").
            own = {p for p in group[0].number_positions if p > first}
            positions = words_at | own
            while max(positions) + 1 in letters:  # "4л", "0W-20": the unit letter
                positions.add(max(positions) + 1)
            measure = knowledge.catalogue.measures[group[0].index]
            in_unit = quantity_in(part, measure) if measure is not None else None
            qty = in_unit or Decimal(quantity_near(tokens, frozenset(positions), own))
            found.append((group, qty))
    return found


_CODE_RE = re.compile(r"[^\s,;:()\[\]]+")


def mask_codes(text: str, knowledge: Knowledge) -> str:
    """The text with the list's SKUs blanked, so "04465-33471" is never read as money. One pass
    over the text's words, whatever the size of the list."""
    skus = _skus(knowledge)
    if not skus:
        return text

    def blank(match: re.Match[str]) -> str:
        word = match.group(0)
        core = word.rstrip(".!?…").lower()
        return " " * len(core) + word[len(core) :] if core in skus else word

    return _CODE_RE.sub(blank, text)


_SKU_CACHE: weakref.WeakKeyDictionary[Catalogue, frozenset[str]] = weakref.WeakKeyDictionary()
_RESOLVED: weakref.WeakKeyDictionary[Catalogue, dict[str, list[list[ItemMatch]]]] = (
    weakref.WeakKeyDictionary()
)


def _skus(knowledge: Knowledge) -> frozenset[str]:
    """The list's SKUs that hold a digit (the only ones a number could be read from)."""
    found = _SKU_CACHE.get(knowledge.catalogue)
    if found is None:
        found = frozenset(
            i.sku.lower() for i in knowledge.items if i.sku and any(c.isdigit() for c in i.sku)
        )
        _SKU_CACHE[knowledge.catalogue] = found
    return found


def _resolve(knowledge: Knowledge, text: str) -> list[list[ItemMatch]]:
    """`Catalogue.resolve`, remembered per list for the texts of recent turns (a reply's
    sentences and the chat's messages are read several times per check)."""
    if not knowledge.items or (not content_tokens(analyse(text)) and not re.search(r"\d", text)):
        return []
    cache = _RESOLVED.setdefault(knowledge.catalogue, {})
    groups = cache.get(text)
    if groups is None:
        if len(cache) > 512:
            cache.clear()
        groups = cache[text] = knowledge.catalogue.resolve(text)
    return groups
