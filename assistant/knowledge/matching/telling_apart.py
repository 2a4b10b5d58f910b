"""`TellingApart`: what tells a list's look-alike items apart, item by item (words said "with"
or "without", letter codes, sizes, periods its name states), and the narrowing of a text's
matches by it: an item the customer's words contradict or refuse drops out while another fits."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal

from assistant.knowledge.matching.distinctions import (
    code_positions,
    fits,
    is_denied,
    letter_codes,
    periods_stated,
    polarity,
    refused_positions,
    sizes_stated,
)
from assistant.knowledge.matching.item_match import ItemMatch
from assistant.knowledge.matching.keys import one_root, word_key
from assistant.knowledge.matching.tokens import QueryToken, analyse, words
from assistant.knowledge.matching.units import Family, Measure


@dataclass(frozen=True)
class TellingApart:
    names: list[str]
    measures: list[Measure | None]
    # Name words said with "без/without/-сыз" ("Маникюр без покрытия": покрытие denied) and
    # the words said plainly, for the options "with" and "without" a thing.
    polarity: list[dict[str, bool]]
    # Letter codes with their numbers ("М500" → {"м": {"500"}}, "R16", "B2"): a query's "М400"
    # or "R17" is not an item whose same letter carries another number.
    codes: list[dict[str, set[str]]]
    # Sizes a name states ("8 кг", "12 мм", "до 70 м²"): a customer's "2-килограммовый" is not
    # the 8 kg bag.
    sizes: list[dict[str, list[tuple[Decimal, str]]]]
    # How long each name says it lasts, in months and in days ("Безлимит, 3 месяца",
    # "годовой", "Тур 2 дня / 1 ночь").
    lasting: dict[Family, list[frozenset[Decimal]]]

    @classmethod
    def of(cls, names: Sequence[str], measures: Sequence[Measure | None]) -> TellingApart:
        said = [polarity(name) for name in names]
        options = {key for words_said in said for key, denied in words_said.items() if denied}
        return cls(
            names=list(names),
            measures=list(measures),
            polarity=[
                {key: denied for key, denied in words_said.items() if key in options}
                for words_said in said
            ],
            codes=[letter_codes(analyse(name)) for name in names],
            sizes=[sizes_stated(name) for name in names],
            lasting={
                family: [frozenset(periods_stated(name, family)) for name in names]
                for family in (Family.MONTH, Family.DAY)
            },
        )

    def without_refused(
        self,
        tokens: list[QueryToken],
        matches: list[ItemMatch],
        token_keys: Callable[[QueryToken], frozenset[str]],
    ) -> list[ItemMatch]:
        """Items the customer says they do not want ("не комплексную, только кузов", "залог
        не нужен"): a match made on a refused word drops out, unless the item's own name
        denies that word too ("Маникюр без покрытия" for "без покрытия")."""
        refused = refused_positions(tokens)
        if not refused:
            return matches
        by_position = {t.position: t for t in tokens}

        def agrees(m: ItemMatch, position: int) -> bool:
            denied_by_name = self.polarity[m.index]
            return any(denied_by_name.get(k) for k in token_keys(by_position[position]))

        kept = [
            m
            for m in matches
            if m.by_sku or not any(p in refused and not agrees(m, p) for p in m.positions)
        ]

        # "без газа" is not the "газированная" one: a refused word whose root a name's word
        # shares, while another item fits; not where the message also asks for it ("без
        # покрытия — 4 000, с покрытием — 8 000").
        roots = [
            by_position[p]
            for p in refused
            if len(by_position[p].word) >= 3
            and not any(
                one_root(t.word, by_position[p].word)
                for t in tokens
                if t.position not in refused and t.number is None and len(t.word) >= 3
            )
        ]

        def names_refused(m: ItemMatch) -> bool:
            named = [w for w in words(self.names[m.index]) if w.isalpha() and len(w) >= 4]
            return any(
                one_root(t.word, w) and not agrees(m, t.position) for t in roots for w in named
            )

        plain = [m for m in kept if m.by_sku or not names_refused(m)]
        return plain or kept

    def without_contradictions(
        self, text: str, tokens: list[QueryToken], matches: list[ItemMatch]
    ) -> list[ItemMatch]:
        """Options told apart by "with"/"without": "маникюр с покрытием" is not the one "без
        покрытия", and "без покрытия" is not the one with it. An item whose name denies a
        word the customer asks for (or asserts one the customer denies) drops out while
        another item fits."""
        asked: dict[str, set[bool]] = {}
        for t in tokens:
            asked.setdefault(word_key(t.word), set()).add(is_denied(tokens, t.position))
        coded = letter_codes(tokens)
        sized = sizes_stated(text)
        kept = [
            m
            for m in matches
            if not any(
                key in asked and denied not in asked[key]
                for key, denied in self.polarity[m.index].items()
            )
            and not any(
                letter in self.codes[m.index] and not numbers & self.codes[m.index][letter]
                for letter, numbers in coded.items()
            )
            and not any(
                family in self.sizes[m.index]
                and not self.sold_in(m.index, family)
                and not any(
                    fits(value, bound)
                    for value, _op in values
                    for bound in self.sizes[m.index][family]
                )
                for family, values in sized.items()
            )
        ]
        # A period the customer states ("на год", "на 3 месяца") keeps the items whose name
        # says that long, where one does (else "2 months" is two of the monthly one); a name
        # that says no period is not contradicted.
        for family, lasts in self.lasting.items():
            said = set(periods_stated(text, family))
            if said:
                lasting = [m for m in kept if not lasts[m.index] or said & lasts[m.index]]
                if any(said & lasts[m.index] for m in lasting):
                    kept = lasting
        # A code the customer wrote that no item carries ("R17") names none of them.
        if coded and not kept and any(m.positions & code_positions(tokens) for m in matches):
            return [m for m in matches if not m.positions & code_positions(tokens)]
        return kept or matches

    def sold_in(self, index: int, family: str) -> bool:
        """Whether an item is sold by a unit of this family: a length asked of fabric sold by
        the metre ("10 м блэкаута") is how much, not its "высота 2,8 м"."""
        measure = self.measures[index]
        return (
            measure is not None
            and measure.family.value == family
            and measure.size == 1  # not "бухта 100 м": 35 m is not that coil
            and measure.holds is None
        )
