"""`Catalogue`: the item index (`index.ItemIndex`) and the reading of orders on it:
`order_lines` pairs each thing a customer named with its quantity, part by part ("a table and
4 chairs"), in the unit each item is sold in, with a service asked "with" the goods counted as
they are, one duration said for the order held by each hourly line, and a price per person
counted for the party."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import replace
from decimal import Decimal
from typing import NamedTuple

from assistant.knowledge.matching.index import ItemIndex
from assistant.knowledge.matching.item_match import ItemMatch
from assistant.knowledge.matching.keys import (
    content_tokens,
    is_stopword,
    one_root,
    word_key,
)
from assistant.knowledge.matching.quantities import (
    Party,
    count_only,
    orders_unnamed,
    party_of,
    quantity_near,
    quantity_of_unit,
    segments,
)
from assistant.knowledge.matching.tokens import (
    QueryToken,
    analyse,
    words,
)
from assistant.knowledge.matching.units import SIZES, Family, family_of, quantity_in

# "с пошивом", "with sewing", "plus assembly", "пошивімен": a service asked with the goods.
_WITH_WORDS = frozenset({"с", "со", "with", "plus", "+", "и", "and"})
_KAZAKH_WITH = re.compile(r"(?:мен|пен|бен|імен|ымен)$")


def _attached(tokens: list[QueryToken], group: list[ItemMatch]) -> bool:
    """Whether the words naming `group` are said as "with" the goods before them."""
    first = min(min(m.positions) for m in group) if all(m.positions for m in group) else None
    if first is None:
        return False
    by_position = {t.position: t for t in tokens}
    before = by_position.get(first - 1)
    word = by_position[first].word if first in by_position else ""
    return (before is not None and before.word in _WITH_WORDS) or bool(_KAZAKH_WITH.search(word))


def _name_words(name: str) -> list[str]:
    return [w for w in words(name) if w.isalpha() and len(w) >= 4 and not is_stopword(w)]


def _same_root(these: Iterable[str], those: Iterable[str]) -> bool:
    """Whether a word of one set and one of the other share a root ("тюля", "тюль")."""

    those = list(those)
    return any(one_root(a, b) for a in these for b in those)


# Units a service is priced by the time of: a count of it beside runs for each ("2 грузчика").
_TIME = frozenset({Family.HOUR, Family.DAY, Family.WEEK, Family.MONTH})
# What is hired by the hour or the day: one length of time said for the order holds for each.
_RUNS = frozenset({Family.HOUR, Family.DAY})


TIME_RE = re.compile(r"(?<![\d.,])\d{1,2}:\d{2}(?![\d.,])|(?<!\d)\d{1,2}\s?(?:am|pm)\b", re.I)


class OrderReading(NamedTuple):
    lines: list[tuple[list[ItemMatch], Decimal]]
    unread: list[str]  # parts counting something the list does not name
    options: bool  # one part named several items, no count: a choice, not an order
    party: Party | None = None  # who it is for ("2 взрослых и ребёнок 8 лет")


class Catalogue(ItemIndex):
    """The item index, reading orders."""

    def order_lines(self, text: str) -> list[tuple[list[ItemMatch], Decimal]]:
        """`read_order`'s lines."""
        return self.read_order(text).lines

    def read_order(self, text: str) -> OrderReading:
        """What the customer named, part by part, each with the quantity written next to it:
        "Oak table 180 and 4 oak chairs" → (table, 1), (chairs, 4); a quantity in the unit an
        item is sold in counts in that unit ("12 кв.м ламината" → 12 of a price per m²).
        Positions are relative to each part. With them, the parts that count pieces of something
        the list does not name ("фумленту 3 шт"), whether one part gave several lines with no
        count ("the Charyn day trip" naming two trips: options, not an order), and who the
        order is for ("нас трое": three of a price per person)."""
        lines: list[tuple[list[ItemMatch], Decimal]] = []
        unread: list[str] = []
        options = False
        untimed: set[int] = set()
        text = TIME_RE.sub(lambda m: " " * len(m.group(0)), text)  # "на 12:00" is no count
        seen: set[int] = set()
        previous = ""
        last_line: int | None = None  # the line the part before named, for "…, штук 6"
        # Descriptive words alone ("white", "oak") name nothing when the message names a product.
        strong = any(not m.weak for m in self.match(text))
        for part in segments(text):
            resolved = self.resolve(part, text)
            groups = [g for g in resolved if not all(m.weak for m in g)] if strong else resolved
            vague = resolved and (not groups or len(groups[0]) > 1)
            if not groups and all(m.how_long for g in resolved for m in g):
                vague = False  # "…, сколько за троих в месяц?" asks of what was named before
            if vague and previous:
                groups = self._elliptic(part, previous, seen) or groups
            previous = part if groups else previous
            if not groups:
                count = count_only(part)
                if count is not None and last_line is not None and lines[last_line][1] == 1:
                    lines[last_line] = (lines[last_line][0], Decimal(count))
                elif last_line is not None and lines[last_line][1] == 1:
                    # "торт с фигурками, вес 3 кг": a part that gives only the amount, in the
                    # unit the item named before it is sold in.
                    group = lines[last_line][0]
                    measure = self.measures[group[0].index] if len(group) == 1 else None
                    in_unit = quantity_in(part, measure) if measure is not None else None
                    if in_unit is None and len(group) == 1 and self.units[group[0].index]:
                        named = quantity_of_unit(part, self.units[group[0].index])
                        in_unit = Decimal(named) if named else None  # "…, 6 таблеток"
                    if in_unit is not None:
                        lines[last_line] = (group, in_unit)
                        untimed.discard(last_line)  # "5 тонник, на 4 часа": its own hours
                    elif orders_unnamed(part):
                        unread.append(part)
                elif orders_unnamed(part):
                    unread.append(part)
                last_line = None
                continue
            tokens = analyse(part)
            groups = [self._sold_as_counted(group, tokens) for group in groups]
            # A stray word beside the thing named ("teeth whitening") names nothing; nor does
            # its number hide the count ("3 дивана бостон" is no "Sofa Milano 3-seat").
            groups = [
                g
                for n, g in enumerate(groups)
                if not n or max(m.coverage for m in g) >= 0.6 or _attached(tokens, g)
            ]
            taken: set[int] = set()
            for group in groups:
                for m in group:
                    taken |= set(m.number_positions) | self._in_name_range(m, tokens)
                    if m.by_sku:
                        taken |= set(m.positions)
            before = len(lines)
            for group in groups:
                if len(group) == 1 and group[0].index in seen:
                    continue  # named twice ("the table … and that table"): one line
                qty = self._quantity(part, group, tokens, taken)
                plus = text[: max(0, text.find(part))].rstrip().endswith(("+", " plus", " with"))
                if lines and (_attached(tokens, group) or plus):
                    group, qty = self._with_goods(group, qty, lines[-1])
                if self._runs_for(group) and self._said_how_long(part, group) is None:
                    untimed.add(len(lines))  # "2 грузчика" beside "газель на 5 часов"
                lines.append((group, qty))
                last_line = len(lines) - 1
                if len(group) == 1:
                    seen.add(group[0].index)
            added = lines[before:]
            joined = any(_attached(tokens, g) for g, _qty in added)  # "мойка с воском"
            options = options or (
                len(added) > 1 and not joined and all(qty == 1 for _g, qty in added)
            )
        # "газель на 5 часов и 2 грузчика", "палатку, 2 спальника и 2 коврика на 2 суток": one
        # length of time said for the order is each line's that says none of its own.
        for n in untimed:
            group, qty = lines[n]
            said = {d for p in segments(text) if (d := self._said_how_long(p, group)) is not None}
            if len(said) == 1:
                lines[n] = (group, qty * said.pop())
        # "Диван бар ма? Бостон": a "which one?" that another part answers is no question.
        answered = [
            (group, qty)
            for group, qty in lines
            if len(group) == 1 or not ({m.index for m in group} & seen)
        ]
        # "нас трое", "2 взрослых и ребёнок": as many of a thing priced per person (the
        # adults, where children are named: their rate is the rules'), where none is counted.
        party = party_of(text)
        if party is not None and party.people is not None:
            answered = [
                (g, Decimal(party.people) if qty == 1 and self._per_person(g) else qty)
                for g, qty in answered
            ]
        return OrderReading(answered, unread, options, party)

    def _runs_for(self, group: list[ItemMatch]) -> bool:
        """Whether the item is priced by the hour or the day (a van, a mover, a tent)."""
        measure = self.measures[group[0].index] if len(group) == 1 else None
        return measure is not None and measure.family in _RUNS and measure.size == 1

    def _said_how_long(self, part: str, group: list[ItemMatch]) -> Decimal | None:
        """The hours or days a part says, in the unit the item is priced by; None if none."""
        measure = self.measures[group[0].index]
        if measure is None or not any(
            (family_of(w) or (None,))[0] is measure.family for w in words(part)
        ):
            return None
        return quantity_in(part, measure)

    def _per_person(self, group: list[ItemMatch]) -> bool:
        """Whether the items are priced per person ("/ чел", "per person")."""
        measures = {self.measures[m.index] for m in group}
        return all(m is not None and m.family is Family.PERSON for m in measures)

    def _in_name_range(self, match: ItemMatch, tokens: list[QueryToken]) -> set[int]:
        """Positions of the numbers inside a range the item's name writes: the 12 of "айфон 12"
        for "iPhone 11–13" names the model, it counts nothing."""
        ranges = self.ranges[match.index].items()
        return {
            t.position
            for t in tokens
            if t.number is not None and any(low <= t.number <= high for low, high in ranges)
        }

    def _with_goods(
        self, group: list[ItemMatch], qty: Decimal, goods: tuple[list[ItemMatch], Decimal]
    ) -> tuple[list[ItemMatch], Decimal]:
        """A service asked with the goods before it ("6 м блэкаута + пошив", "тюль с
        пошивом"): of look-alike services, the one whose words the goods' name shares ("Пошив
        тюля" for a tulle) or else the one naming nothing else the list sells; with no count of
        its own, as much as the goods when both are sold by one measure (metres)."""
        goods_group, goods_qty = goods
        if len(goods_group) != 1:
            return group, qty
        item = goods_group[0].index
        if len(group) > 1:
            goods_words = _name_words(self.names[item])
            sharing = [
                m for m in group if _same_root(goods_words, _name_words(self.names[m.index]))
            ]
            ids = {m.index for m in group}
            # the first word of what else is sold ("Тюль …"), not every word ("…штора")
            sold = [
                ws[0] for i, n in enumerate(self.names) if i not in ids if (ws := _name_words(n))
            ]
            said = {w for m in group for w in _name_words(self.names[m.index])}
            shared = {w for w in said if all(w in _name_words(self.names[m.index]) for m in group)}
            plain = [
                m
                for m in group
                if not _same_root(set(_name_words(self.names[m.index])) - shared, sold)
            ]
            group = sharing if len(sharing) == 1 else plain if len(plain) == 1 else group
        measure, service = self.measures[item], self.measures[group[0].index]
        if (
            len(group) == 1
            and qty == 1
            and measure is not None
            and service is not None
            and measure.family == service.family
            and measure.family in SIZES  # metres of fabric, not "a bed with a mattress"
        ):
            qty = goods_qty
        return group, qty

    def _sold_as_counted(self, group: list[ItemMatch], tokens: list[QueryToken]) -> list[ItemMatch]:
        """Of several items that fit, those sold in the unit the customer counts in ("3 бутыли
        воды": the water sold by the bottle, not the 6-pack), and of those the one named in the
        customer's own words rather than in translation."""
        if len(group) < 2:
            return group
        counted = {
            word_key(after.word)
            for before, after in itertools.pairwise(tokens)
            if before.number is not None and after.word.isalpha() and len(after.word) >= 3
        }
        sold = [
            m
            for m in group
            if counted & {word_key(w) for w in words(self.units[m.index]) if w.isalpha()}
        ]
        if not sold or len(sold) == len(group):
            return group
        literal = [m for m in sold if m.literal]
        return literal if len(literal) == 1 else sold

    def _quantity(
        self, part: str, group: list[ItemMatch], tokens: list[QueryToken], taken: set[int]
    ) -> Decimal:
        """How many of the item a part asks for: in the item's own unit where the part says
        so ("12 кв.м", "for 3 months", "4 pieces of 6 m"), else the count beside its name."""
        # Items still to tell apart but sold in one measure ("газель на 4 часа", either van)
        # are counted in it.
        measures = {self.measures[m.index] for m in group}
        measure = measures.pop() if len(measures) == 1 else None
        if measure is not None:
            sizes: dict[str, list[tuple[Decimal, str]]] = {}
            for m in group:
                for family, stated in self.apart.sizes[m.index].items():
                    sizes.setdefault(family, []).extend(stated)
            in_unit = quantity_in(part, measure, sizes)
            if in_unit is not None and measure.family in _TIME:
                # "2 грузчика на 3 часа", "3 велосипеда на 2 дня": of a thing priced per
                # hour or day, as many of them as counted, each for that long.
                return in_unit * quantity_near(tokens, group[0].positions, taken)
            if in_unit is not None:
                return in_unit
        count = Decimal(quantity_near(tokens, group[0].positions, taken))
        if count == 1 and measure is None and len(group) == 1 and self.units[group[0].index]:
            # "6 таблеток" of an item sold per "таблетка", "3 зуба" per tooth: a count in the
            # item's own unit word, whatever the unit.
            count = Decimal(quantity_of_unit(part, self.units[group[0].index]) or 1)
        if measure is not None and measure.holds is not None and measure.holds[0] is Family.PIECE:
            # "500 визиток" of cards sold by the hundred: 5 hundreds; "4 шины" of a set of 4.
            per = measure.holds[1]
            if per > 1 and count >= per and count % per == 0:
                return count / per
        return count

    def _elliptic(self, part: str, previous: str, seen: set[int]) -> list[list[ItemMatch]]:
        """A part that only describes ("and the oil one too" after "air filter Camry") read
        with the words of the part before it, for an item not named already."""
        own = len(analyse(part))
        combined = f"{part} {previous}"
        for group in self.resolve(combined):
            fresh = [m for m in group if m.index not in seen]
            if len(fresh) == 1 and len(group) == 1 and min(fresh[0].positions) < own:
                return [self._own_part(fresh[0], own)]
        # "детскую группу английского + учебник": a part naming a kind of thing ("учебник")
        # means the one of that kind a word of the part before also names ("English File" by
        # "английского"), though that word already named the course.
        heads = any(word_key(t.word) in self.heads for t in content_tokens(analyse(part)))
        bridging = [
            m
            for m in (self.match(combined) if heads else [])
            if m.index not in seen and not m.weak and min(m.positions) < own <= max(m.positions)
        ]
        best = max((len(m.positions) for m in bridging), default=0)
        widest = [m for m in bridging if len(m.positions) == best]
        if len(widest) == 1:
            return [self._own_part(widest[0], own)]
        return []

    @staticmethod
    def _own_part(match: ItemMatch, own: int) -> list[ItemMatch]:
        only_own = frozenset(p for p in match.positions if p < own)
        return [replace(match, positions=only_own, number_positions=frozenset())]
