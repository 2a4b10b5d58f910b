"""`ItemIndex`: an index over a price list's names, aliases and SKUs. `match` scores every item
a text could name, `resolve` groups the matches by thing named (a group of several is
ambiguous), `retrieve` ranks items for the prompt when the list is too big to send whole
(BM25). `catalogue.Catalogue` reads orders on top of it. The word-level rules live beside it
(`keys`, `units`, `quantities`, `distinctions`)."""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from decimal import Decimal

from assistant import language
from assistant.knowledge.matching.distinctions import (
    described_keys,
    picked_by_size,
)
from assistant.knowledge.matching.item_match import ItemMatch
from assistant.knowledge.matching.keys import (
    ATTRIBUTE_KEYS,
    COMPOUNDS,
    WIDER,
    content_tokens,
    is_stopword,
    keys_match,
    latin_shapes,
    meaning_by_typo,
    shared_root,
    stems_match,
    word_key,
)
from assistant.knowledge.matching.retrieval import Bm25
from assistant.knowledge.matching.telling_apart import TellingApart
from assistant.knowledge.matching.tokens import (
    COMPOUND_RE,
    QueryToken,
    analyse,
    compact,
    normalise,
    stem,
    words,
)
from assistant.knowledge.matching.units import (
    CONTAINERS,
    COUNTED,
    PACKAGING,
    Family,
    Measure,
    family_of,
    measure_of,
    minimum_of,
)
from assistant.knowledge.transliteration import skeleton

CHILD = word_key("child")
# A son, a daughter, a child, kids, in any of the three languages.
_SPEAKS_OF_CHILDREN = re.compile(
    r"\b(?:сын|доч|дет|ребен|ребён|малыш|школьн|son|daughter|kid|child|бала|ұл|қыз)",
    re.IGNORECASE,
)
# English verb forms ("complaining", "asked") name no product, whatever root they share.
_VERB_RE = re.compile(r"[a-z]{3,}(?:ing|ed)$")
# Russian adjective endings ("упаковочный", "картонная").
_ADJECTIVE_RE = re.compile(r"[а-яё]{3,}(?:ый|ий|ой|ая|яя|ое|ее|ые|ие|ого|ому|ую)$")
# Russian verb endings ("оформляйте", "заказать", "привезёте"): an action shares a root with
# the list's noun ("Оформление бороды") and names none of its items.
_RU_VERB_RE = re.compile(
    r"[а-яё]{3,}(?:йте|ите|ать|ять|ить|еть|уть|ыть|оть|ться|тся|ешь|ете|ёте|ишь|ает|яет|ует|ают|яют|уют)$"
)


def _family(word: str) -> Family | None:
    named = family_of(word)
    return named[0] if named is not None else None


# Families that say how long or for how many people: beside a thing named, no item.
_HOW_LONG = frozenset({Family.MONTH, Family.WEEK, Family.DAY, Family.HOUR, Family.PERSON})
# A name that is a charge for something: "Залог за бутыль", "Deposit for bottle".
_CHARGE_FOR_RE = re.compile(r"^\s*([^\W\d_]+)\s+(?:за|for)\s+\w", re.IGNORECASE)
# What follows an age: "8 лет", "8 и 10 лет", "10 жаста", "7 years old".
_AGE_AFTER = re.compile(r"^(?:(?:и|and|,)?\s*\d+\s+)?(?:лет|года|годиков|жас|жаста|years?|yo)\b")
# Three or more consonants and no vowel: an abbreviation ("ВВГ", "ПВС", "MDF"), not a word.
_ABBREVIATION_RE = re.compile(r"[^\Waeiouyаеёиоуыэюяәөүұі\d_]{3,6}")

# Texts and words whose matches a catalogue keeps (each entry a few hundred bytes).
MATCH_CACHE_SIZE = 4096


_RANGE_RE = re.compile(r"(?<![\d.,])(\d{1,4})\s?[–—-]\s?(\d{1,4})(?![\d.,])")


class ItemIndex:
    """An index over item names, aliases and SKUs for matching and retrieval."""

    def __init__(
        self,
        names: Sequence[str],
        skus: Sequence[str],
        texts: Sequence[str],
        aliases: Sequence[Sequence[str]] | None = None,
        units: Sequence[str] | None = None,
        descriptions: Sequence[str] | None = None,
    ) -> None:
        self.names = list(names)
        self.units = list(units or []) or ["" for _ in self.names]
        # What one priced unit of each item is ("м²", "мешок 50 кг"): a customer's "12 кв.м"
        # or "5 қап" is a quantity of the items sold that way.
        self.measures: list[Measure | None] = [measure_of(u) for u in (units or [])] or [
            None for _ in self.names
        ]
        # The words the list's unit column uses ("мешок", "лист", "занятие"): how a thing is
        # sold, not which thing it is, so "сколько мешок?" names no cement.
        self.unit_words = frozenset(
            word_key(w)
            for u in (units or [])
            for w in words(u)
            if len(w) >= 3 and (family_of(w) or (None,))[0] in CONTAINERS - {Family.PACK}
        )
        # The number ranges each name writes ("iPhone 11–13": 11 → 13), by their low end.
        self.ranges: list[dict[int, int]] = [
            {int(a): int(b) for a, b in _RANGE_RE.findall(name) if int(a) < int(b)}
            for name in self.names
        ]
        # The least of each item its description says it is sold in ("Минимум 2 часа").
        self.minimums: list[Decimal | None] = [
            minimum_of(d, m)
            for d, m in zip(descriptions or ["" for _ in self.names], self.measures, strict=False)
        ]
        alias_lists = list(aliases) if aliases is not None else [[] for _ in self.names]
        # Each description's words that set its item apart, by key: a word of the customer's
        # that no name knows ("газоблок", "балаяж") may still name the item it describes.
        self.described: list[frozenset[str]] = described_keys(descriptions or [])
        self.items_by_description: dict[str, list[int]] = {}
        for index, described in enumerate(self.described):
            for key in sorted(described):
                self.items_by_description.setdefault(key, []).append(index)
        # Each item is named by its name and by each alias: one key list per way of naming it.
        self.variants: list[list[list[str]]] = []
        # key → the spelling of the name word it came from, per way of naming an item
        self.shapes: list[list[dict[str, str]]] = []
        # key → other keys a query word may match it by ("кресло" for the "chair" of an
        # "office chair"), per way of naming an item
        self.also: list[list[dict[str, set[str]]]] = []
        for name, extra in zip(self.names, alias_lists, strict=True):
            keyed = [
                {
                    word_key(w): skeleton(stem(w))
                    for w in words(v)
                    if w.isdigit() or not is_stopword(w)
                }
                for v in (name, *extra)
                if v
            ]
            self.variants.append([list(k) for k in keyed])
            self.shapes.append(keyed)
            also: list[dict[str, set[str]]] = []
            for k in keyed:
                extra_keys: dict[str, set[str]] = {}
                for (a, b), c in COMPOUNDS.items():
                    if a in k and b in k:
                        extra_keys.setdefault(b, set()).add(c)
                also.append(extra_keys)
            self.also.append(also)
        # What tells look-alike items apart (with/without, codes, sizes, periods).
        self.apart = TellingApart.of(self.names, self.measures)
        # Name keys by the script of the word they came from: a word the customer types in
        # the other script may share its root ("lamination", "Ламинирование").
        self.keys_by_script: dict[bool, set[str]] = {True: set(), False: set()}
        for name, extra in zip(self.names, alias_lists, strict=True):
            for v in (name, *extra):
                for w in words(v or ""):
                    if w.isalpha() and not is_stopword(w):
                        self.keys_by_script[language.is_cyrillic(w)].add(word_key(w))
        # Each name word as spelled (lower case) → its key: what an abbreviation may begin.
        self.spellings: dict[str, str] = {
            w: word_key(w)
            for name in self.names
            for w in words(name)
            if w.isalpha() and len(w) >= 4 and not is_stopword(w)
        }
        self.packaging: dict[Family, set[str]] = {}
        for name in self.names:
            for w in words(name):
                named = family_of(w)
                # "упаковочный" (packing tape) describes; only a noun is the pack itself
                if _ADJECTIVE_RE.search(w):
                    continue
                if named is not None and named[0] in PACKAGING and len(w) >= 3:
                    self.packaging.setdefault(named[0], set()).add(word_key(w))
        # A charge for a thing ("Залог за бутыль 19 л", "Deposit for the bottle"): named only
        # when its own first word is said, never by the thing it is charged for.
        self.charge_heads: list[str | None] = [
            word_key(m.group(1)) if (m := _CHARGE_FOR_RE.match(normalise(name))) else None
            for name in self.names
        ]
        # The counts names state with their unit ("3 месяца", "8 занятий", "10 тренировок").
        self.periods: set[tuple[int | None, Family]] = {
            (before.number, family[0])
            for name in self.names
            for before, after in itertools.pairwise(analyse(name))
            if before.number is not None and (family := family_of(after.word)) is not None
        }
        self.skus = [compact(s) for s in skus]
        # What a query can reach each item by: the items a key can score (a name word of one
        # of its namings, or a word it also matches by), and the items a compound SKU names.
        # `match` scores only these; every other item would score nothing.
        self.items_by_key: dict[str, list[int]] = {}
        for index, (variants, also_of) in enumerate(zip(self.variants, self.also, strict=True)):
            reach: set[str] = set()
            for keys, extra_keys in zip(variants, also_of, strict=True):
                for reached in keys:
                    if not reached.isdigit():
                        reach |= {reached, *extra_keys.get(reached, ())}
            for reached in sorted(reach):
                self.items_by_key.setdefault(reached, []).append(index)
        self.items_by_sku: dict[str, list[int]] = {}
        for index, sku in enumerate(self.skus):
            if len(sku) >= 3:
                self.items_by_sku.setdefault(sku, []).append(index)
        # A catalogue lives as long as its price list's version (`effective`), and each turn
        # reads the chat's whole history again: what a text or a word matches is kept.
        self._matches = functools.lru_cache(maxsize=MATCH_CACHE_SIZE)(self._match)
        self._keys_of_word = functools.lru_cache(maxsize=MATCH_CACHE_SIZE)(self._word_keys)
        df: Counter[str] = Counter()
        for variants in self.variants:
            df.update({key for keys in variants for key in keys})
        self.vocabulary = set(df)
        self.vocabulary |= {c for also in self.also for a in also for cs in a.values() for c in cs}
        n = max(1, len(names))
        self.idf = {s: math.log(1 + n / c) for s, c in df.items()}
        # BM25 over name + aliases + SKU + description, for the prompt's retrieval
        self.bm25 = Bm25([f"{t} {' '.join(a)}" for t, a in zip(texts, alias_lists, strict=True)])

    @functools.cached_property
    def name_words(self) -> frozenset[str]:
        """Every word key the list's names and aliases use (what is sold)."""
        return frozenset(k for v in self.variants for keys in v for k in keys if not k.isdigit())

    @functools.cached_property
    def heads(self) -> dict[str, frozenset[int]]:
        """The items each word heads (is the first word of a name of): "педикюр" heads the
        pedicure."""
        heads: dict[str, set[int]] = {}
        for index, variants in enumerate(self.variants):
            for keys in variants:
                first = next((k for k in keys if not k.isdigit()), None)
                if first is not None:
                    heads.setdefault(first, set()).add(index)
        return {k: frozenset(v) for k, v in heads.items()}

    def said(self, text: str) -> frozenset[str]:
        """The name words a text says."""
        return frozenset(k for t in content_tokens(analyse(text)) for k in self._token_keys(t))

    def _bundles(self, bigger: ItemMatch, smaller: ItemMatch, said: frozenset[str]) -> bool:
        """`bigger` is a set that holds `smaller` and another item the message does not name:
        its unsaid words are the smaller one's and more, among them the head of another name
        ("маникюр с покрытием" is the manicure, not "маникюр + педикюр с покрытием", unless
        the customer says "педикюр" too)."""
        if not smaller.unsaid < bigger.unsaid:
            return False
        others = {bigger.index, smaller.index}
        return any(
            self.heads.get(k, frozenset()) - others and k not in said
            for k in bigger.unsaid - smaller.unsaid
        )

    # --- matching (catalogue assistant) ---------------------------------------------------

    def _token_keys(self, token: QueryToken) -> frozenset[str]:
        return self._keys_of_word(token.word, token.stem)

    def _word_keys(self, word: str, word_stem: str) -> frozenset[str]:
        """The name keys of the list a query word matches."""
        key = word_key(word)
        found = {k for k in self.vocabulary if keys_match(key, k, key not in self.vocabulary)}
        if not found and not key.startswith("#"):
            for shape in latin_shapes(word):
                found |= {k for k in self.vocabulary if keys_match(shape, k, False)}
        if not found and not key.startswith("#"):
            meaning = meaning_by_typo(word_stem)
            if meaning in self.vocabulary:
                found.add(meaning)
        if not found and not key.startswith("#") and word.isalpha() and not _VERB_RE.search(word):
            # A root shared past its ending: a borrowed word across scripts ("lamination",
            # "Ламинирование"), or a colloquial form in the list's own ("картошка",
            # "Картофель").
            cyrillic = language.is_cyrillic(word)
            scripts = (not cyrillic,) if _RU_VERB_RE.search(word) else (True, False)
            found |= {
                k
                for script in scripts
                for k in self.keys_by_script[script]
                if not k.startswith("#") and shared_root(key, k)
            }
        if not found and _ABBREVIATION_RE.fullmatch(word):
            # An abbreviation of consonants names the code it begins ("ВВГ" the "ВВГнг").
            found |= {
                k
                for spelled, k in self.spellings.items()
                if spelled.startswith(word) and len(spelled) - len(word) <= 2
            }
        found |= {k for k in WIDER.get(stem(word), ()) if k in self.vocabulary}
        # Packaging words meet across languages by what they are: "box" is the "коробка" of
        # "Макарон коробка 6 шт", "bag" the "мешок".
        named = family_of(word)
        if named is not None and named[0] in PACKAGING:
            found |= self.packaging.get(named[0], set())
        return frozenset(found)

    def match(self, text: str) -> list[ItemMatch]:
        """Every item the text could be naming, best first."""
        return list(self._matches(text))

    def _match(self, text: str) -> tuple[ItemMatch, ...]:
        tokens = analyse(text)
        # "12 мешков", "5 листов": a unit after a count says how much, not which item (every
        # cement and plaster name says "мешок").
        units = {
            t.position
            for before, t in itertools.pairwise(tokens)
            if before.number is not None and family_of(t.word) is not None
        }
        by_position = {t.position: t for t in tokens}
        content = [
            t
            for t in content_tokens(tokens)
            if t.position not in units
            and word_key(t.word) not in self.unit_words
            and not (len(t.word) == 2 and family_of(t.word) is not None)  # "км" is no "CM"
        ]
        # A count of bags, months or lessons ("2 месяца") is how many, never the "2" of a
        # name's "A1–B2"; a size ("200 см", "5 кг") may be the name's own.
        # Unless a name says the same ("Безлимит, 3 месяца"): then it is which item.
        counted = {
            p
            for p in units
            if (family_of(by_position[p].word) or (None,))[0] in COUNTED
            and (by_position[p - 1].number, _family(by_position[p].word)) not in self.periods
        }
        # An age ("сыну 8 лет", "8 и 10 лет") says who it is for: no name's number.
        ages = {
            t.position
            for t in tokens
            if t.number is not None
            and _AGE_AFTER.match(" ".join(w.word for w in tokens[t.position + 1 : t.position + 4]))
        }
        numbers = [
            t
            for t in tokens
            if t.number is not None
            and len(t.word) <= 9
            and t.position + 1 not in counted
            and t.position not in ages
        ]
        compounds = {compact(c) for c in COMPOUND_RE.findall(normalise(text))}
        compounds |= {t.word for t in tokens}
        # Which name keys each content token matches, computed once over the vocabulary
        # rather than once per item (names share most of their words).
        keys_of = [(t, self._token_keys(t)) for t in content]
        reached = {i for _t, found in keys_of for k in found for i in self.items_by_key.get(k, ())}
        named_by_sku = {i for c in compounds for i in self.items_by_sku.get(c, ())}
        matches: list[ItemMatch] = []
        for index in sorted(reached | named_by_sku):
            variants = self.variants[index]
            if index in named_by_sku:
                sku = self.skus[index]
                sku_positions = frozenset(t.position for t in tokens if t.word and t.word in sku)
                matches.append(ItemMatch(index, 1.0, 99.0, sku_positions, by_sku=True))
                continue
            best = max(
                (
                    self._score(
                        index, keys, self.shapes[index][v], self.also[index][v], keys_of, numbers
                    )
                    for v, keys in enumerate(variants)
                ),
                key=lambda m: (m.coverage, m.weight) if m else (-1.0, -1.0),
                default=None,
            )
            if best is not None:
                matches.append(best)
        # A description may explain more of the query than the item's name does ("бездрожжевой
        # хлеб": the bread described as yeast-free, the word beside the name's): it then stands
        # for that item.
        described = self._by_description(keys_of)
        unnamed = {t.position for t, found in keys_of if not found and family_of(t.word) is None}
        wider = {
            d.index: d
            for d in described
            if all(
                d.positions > m.positions
                and any(abs(u - p) == 1 for u in d.positions & unnamed for p in m.positions)
                for m in matches
                if m.index == d.index
            )
        }
        matches = [m for m in matches if m.index not in wider] + list(wider.values())
        if any(not m.weak for m in matches):
            matches = [m for m in matches if not m.weak]
        matches = self.apart.without_contradictions(text, tokens, matches)
        matches = self.apart.without_refused(tokens, matches, self._token_keys)
        matches.sort(key=lambda m: (m.by_sku, m.coverage, m.weight), reverse=True)
        return tuple(matches)

    def _by_description(self, keys_of: list[tuple[QueryToken, frozenset[str]]]) -> list[ItemMatch]:
        """Items the customer names by what their description says, where the words name no
        item by its name: "клей для газоблока" is the masonry mix described as "клей для
        газоблока", not the tile adhesive that shares "клей". Only when a word of the query
        is known to no name; the match covers the query words the description holds."""
        if not self.items_by_description:
            return []
        # A unit ("метра", "кг") says how much, never which item's description it is.
        unnamed = [t for t, found in keys_of if not found and family_of(t.word) is None]
        reached = {i for t in unnamed for i in self.items_by_description.get(word_key(t.word), ())}
        found: list[ItemMatch] = []
        content = len(keys_of) or 1
        said = {k for t, keys in keys_of for k in (*keys, word_key(t.word))}
        for index in sorted(reached):
            head = self.charge_heads[index]
            if head is not None and head not in said:
                continue  # a charge for a thing is named by its own word, as by its name
            described = self.described[index]
            name_keys = set(self.variants[index][0]) if self.variants[index] else set()
            at = frozenset(
                t.position
                for t, keys in keys_of
                if word_key(t.word) in described or keys & name_keys
            )
            if len(at) >= 2:  # one shared word ("тест" in "пробные тесты") is no description
                found.append(ItemMatch(index, 0.9 * len(at) / content, float(len(at)), at))
        return found

    def _score(
        self,
        index: int,
        keys: list[str],
        shapes: dict[str, str],
        also: dict[str, set[str]],
        keys_of: list[tuple[QueryToken, frozenset[str]]],
        numbers: list[QueryToken],
    ) -> ItemMatch | None:
        """How well the query names one way of naming an item. Each name word binds to the
        query word nearest to the others, so "a table … and 4 oak chairs" keeps them apart."""
        total = sum(self.idf.get(k, 1.0) for k in keys) or 1.0
        candidates: dict[str, list[int]] = {}
        for k in keys:
            if k.isdigit():
                at = [t.position for t in numbers if t.number == int(k)]
            else:
                via = also.get(k, set()) | {k}
                at = [t.position for t, found in keys_of if via & found]
            if at:
                candidates[k] = at
        words_found = [k for k in candidates if not k.isdigit()]
        by_position = {t.position: t for t, _found in keys_of}
        head = self.charge_heads[index]
        if not words_found or (head is not None and head not in candidates):
            return None
        # A period and a number ("…, сколько за троих в месяц?") say how long: beside a thing
        # named, they name no item of their own ("Интенсив 3 месяца").
        how_long = all(
            (family_of(by_position[p].word) or (None,))[0] in _HOW_LONG
            for k in words_found
            for p in candidates[k]
        )
        chosen: dict[str, int] = {}
        for k in sorted(words_found, key=lambda k: -self.idf.get(k, 1.0)):
            if not chosen:
                chosen[k] = candidates[k][0]
                continue
            anchor = list(chosen.values())
            chosen[k] = min(candidates[k], key=lambda p: min(abs(p - a) for a in anchor))
        number_positions: set[int] = set()
        anchor = list(chosen.values())
        for k in candidates:
            if k.isdigit():
                p = min(candidates[k], key=lambda p: min(abs(p - a) for a in anchor))
                chosen[k] = p
                number_positions.add(p)
        matched = sum(self.idf.get(k, 1.0) for k in chosen)
        literal = all(
            stems_match(skeleton(by_position[p].stem), shapes[k], fuzzy=True)
            for k, p in chosen.items()
            if p in by_position
        )
        return ItemMatch(
            index,
            matched / total,
            matched,
            frozenset(chosen.values()),
            number_positions=frozenset(number_positions),
            weak=how_long or all(k in ATTRIBUTE_KEYS for k in words_found),
            how_long=how_long,
            literal=literal,
            unsaid=frozenset(k for k in keys if k not in chosen and not k.isdigit()),
        )

    def resolve(self, text: str, message: str = "") -> list[list[ItemMatch]]:
        """Groups of matches, one group per thing the customer named: a group of one is a
        clear match; a group of several is ambiguous (they explain the same words equally).
        `message` is the whole message `text` is a part of (what else the customer said)."""
        said = self.said(message or text)
        remaining = self.match(text)
        groups: list[list[ItemMatch]] = []
        consumed: set[int] = set()
        while remaining:
            remaining = [m for m in remaining if m.by_sku or (m.positions - consumed)]
            if not remaining:
                break
            top = remaining[0]
            # A name that explains every word the best one does and more ("китайский в
            # группе": the Chinese group, not any group) leads when it fits nearly as well.
            wider = [
                m
                for m in remaining
                if not top.by_sku
                and m.positions > top.positions
                and m.coverage >= top.coverage - 0.15
            ]
            if wider:
                top = max(wider, key=lambda m: (len(m.positions), m.coverage, m.weight))
            if top.by_sku:
                group = [top]
            else:
                group = [
                    m
                    for m in remaining
                    if not m.by_sku
                    and (m.positions - consumed) == (top.positions - consumed)
                    and m.coverage >= top.coverage - 0.34
                ]
                # A name fully named (every word present) beats longer names that merely
                # contain the same words ("table" vs "table lamp"); an exact name beats all.
                complete = [m for m in group if m.coverage >= 0.999]
                if len(complete) > 1:
                    heaviest = max(m.weight for m in complete)
                    complete = [m for m in complete if m.weight >= heaviest - 1e-9]
                if len(complete) == 1:
                    group = complete
                # The name in the customer's own words beats one matched only in translation
                # ("office chair" → "Office chair Lux", not "Кресло офисное").
                literal = [m for m in group if m.literal and m.coverage >= 0.5]
                if len(group) > 1 and len(literal) == 1:
                    group = literal
                group = [m for m in group if not any(self._bundles(m, n, said) for n in group)]
                # Children's courses, sizes, menus are asked for as such ("детская группа",
                # "for my son"): a name for children the message does not speak of steps back.
                if len(group) > 1 and not _SPEAKS_OF_CHILDREN.search(message or text):
                    group = [m for m in group if CHILD not in m.unsaid] or group
                picked = picked_by_size([self.names[m.index] for m in group], text)
                group = [group[picked]] if picked is not None else group
            groups.append(group)
            consumed |= set(top.positions)
            ids = {m.index for m in group}
            remaining = [
                m for m in remaining if m.index not in ids and not (m.positions <= consumed)
            ]
        return groups

    def unknown_words(self, text: str) -> list[str]:
        """The words of a message that could name a product but match nothing in the list
        ("swing", "terrace"): a sign the customer asks for something the list does not have."""
        return [t.word for t in content_tokens(analyse(text)) if not self._token_keys(t)]

    # --- retrieval (prompt, large lists) -------------------------------------------------

    def retrieve(self, text: str, k: int) -> list[int]:
        """Indices of the k items that score best for the text (BM25)."""
        return self.bm25.top(text, k, self.vocabulary)
