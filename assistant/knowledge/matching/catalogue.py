"""Lexical matching of what customers write against price-list names, across languages: no ML.

Tokens are lower-cased words of Latin, Cyrillic (Russian and Kazakh letters) and digits, with a
crude suffix-stripping stemmer (English plurals, Russian case endings) so "стулья", "стула" and
"стул" meet. Each word is then reduced to a key that does not depend on the language: the
meaning from a small bilingual vocabulary (`assistant.knowledge.vocabulary`: "sofa", "диван"
→ #sofa) or else its transliterated skeleton (`assistant.knowledge.transliteration`: "Бостон",
"Boston" → boston). A typo tolerance (one edit, two for long words, same first letter) applies
only to words the price list does not contain. An item is named by its name or by one of its
aliases (the price list's keywords column). Used by the catalogue assistant (which item did the
customer mean, how many?), by the guardrail (which item does a sentence name?) and by the
prompt's retrieval when the list is too big to send whole (BM25).
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from assistant import language
from assistant.knowledge.transliteration import skeleton
from assistant.knowledge.vocabulary import ATTRIBUTES, NAME_COMPOUNDS, PRODUCTS, QUERY_WIDER

WORD_RE = re.compile(r"[0-9a-zа-яёәғқңөұүһі]+", re.IGNORECASE)
COMPOUND_RE = re.compile(r"[0-9a-zа-яёәғқңөұүһі]+(?:[-./][0-9a-zа-яёәғқңөұүһі]+)*", re.IGNORECASE)

RU_ENDINGS = sorted(
    ["иями", "ями", "ами", "иях", "ях", "ах", "ого", "его", "ому", "ему", "ыми", "ими", "ых",
     "их", "ым", "им", "ой",
     "ей", "ий", "ый", "ая", "яя", "ое", "ее", "ые", "ие", "ую", "юю", "ов", "ев", "ом", "ем",
     "ам", "ям", "ью", "ья", "ье", "ьи", "а", "я", "ы", "и", "у", "ю", "е", "о", "ь", "й"],
    key=len,
    reverse=True,
)  # fmt: skip

# Words that carry the question, not the product; never used to match an item.
_STOPWORD_LINES = (
    "a an the is are am be do does did you your we our i me my it its this that these those",
    "there here have has had how much many what which who where when why price prices cost costs",
    "of for to from in on at by with and or but not no yes please pls can could would will shall",
    "want need like looking get got buy some any one per each item items thing hi hello hey",
    "thanks thank ok okay tell know about still also just only very available stock again sorry",
    "сколько стоит стоят стоимость цена цены ценой почем есть ли у вас вам нас в во на и а",
    "или но не нет да для мне меня нам нужно нужен нужна нужны хочу хотел хотела хотим можно",
    "какая какой какие каков это этот эта эти что как по за с со от до из о об привет",
    "здравствуйте добрый день вечер утро пожалуйста спасибо подскажите скажите наличии наличие",
    "бар ма ме қанша бағасы сәлем салем сiз сіз сізде рахмет еще тоже уже вот там тут",
    "шт штук штуки штука pcs pieces piece units unit x будет будут было был была надо",
    "show send give write text me us so then if take order total much more else other same",
    "стоить стоили цену цене напишите просто тогда также еще ещё беру возьму заказать купить",
    "покажите скиньте пришлите стал стала стали хорошо ладно ок",
    "тұрады керек маған бізге және ал алғым келеді ба бе па пе",
    # the same question words in Latin letters ("utyug tefal skolko")
    "skolko skoko stoit stoyat stoimost tsena cena tseny ceny est yest nuzhno nuzhen nuzhna",
    "hochu kupit zakazat mozhno pozhaluista pozhalusta privet zdravstvuite u vas nalichii",
)
STOPWORDS = frozenset(" ".join(_STOPWORD_LINES).split())

NUMBER_WORDS: dict[str, int] = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "dozen": 12, "couple": 2, "pair": 2,
    "один": 1, "одна": 1, "одну": 1, "одно": 1, "два": 2, "две": 2, "пару": 2, "пара": 2,
    "три": 3, "четыре": 4, "пять": 5, "шесть": 6, "семь": 7, "восемь": 8, "девять": 9,
    "десять": 10, "дюжину": 12, "двух": 2, "двум": 2, "трех": 3, "трем": 3, "четырех": 4,
    "пяти": 5, "шести": 6, "семи": 7, "восьми": 8, "девяти": 9, "десяти": 10,
    "бір": 1, "екі": 2, "үш": 3, "төрт": 4, "бес": 5, "алты": 6, "жеті": 7, "сегіз": 8,
    "тоғыз": 9,
}  # fmt: skip


def normalise(text: str) -> str:
    return text.lower().replace("ё", "е")


def stem(word: str) -> str:
    w = normalise(word)
    if w.isdigit() or len(w) <= 3:
        return w
    if language.is_cyrillic(w):
        for ending in RU_ENDINGS:
            if w.endswith(ending) and len(w) - len(ending) >= 3:
                return w[: -len(ending)]
        return w
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith(("ches", "shes", "sses", "xes")):
        return w[:-2]
    if w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


_DIGIT_LETTER = re.compile(r"(?<=\d)(?=[^\W\d_])|(?<=[^\W\d_])(?=\d)")


def words(text: str) -> list[str]:
    """Words, with digits split from letters ("x2" → "x", "2"; "2шт" → "2", "шт")."""
    return WORD_RE.findall(_DIGIT_LETTER.sub(" ", normalise(text)))


def compact(text: str) -> str:
    """A code with its separators removed: "CH-101" → "ch101"."""
    return re.sub(r"[^0-9a-zа-яёәғқңөұүһі]", "", normalise(text))


def edit_distance_at_most(a: str, b: str, limit: int) -> bool:
    """Damerau–Levenshtein distance (adjacent transpositions) ≤ limit."""
    if abs(len(a) - len(b)) > limit:
        return False
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > limit:
            return False
        prev2, prev = prev, cur
    return prev[-1] <= limit


def stems_match(query_stem: str, name_stem: str, fuzzy: bool) -> bool:
    if query_stem == name_stem:
        return True
    if query_stem.isdigit() or name_stem.isdigit():
        return False
    shorter = min(len(query_stem), len(name_stem))
    if shorter >= 4 and (query_stem.startswith(name_stem) or name_stem.startswith(query_stem)):
        return True
    # Long words of one root ("металлокерамической", "металлокерамика") share most letters.
    common = next(
        (i for i, (a, b) in enumerate(zip(query_stem, name_stem, strict=False)) if a != b), shorter
    )
    if shorter >= 8 and common >= max(7, int(shorter * 0.75)):
        return True
    if not fuzzy or shorter < 5 or query_stem[0] != name_stem[0]:
        return False
    return edit_distance_at_most(query_stem, name_stem, 1 if shorter < 7 else 2)


@dataclass(frozen=True)
class QueryToken:
    position: int
    word: str
    stem: str
    number: int | None


def analyse(text: str) -> list[QueryToken]:
    tokens = []
    for position, word in enumerate(words(text)):
        number = int(word) if word.isdigit() and len(word) <= 9 else NUMBER_WORDS.get(word)
        tokens.append(QueryToken(position, word, stem(word), number))
    return tokens


def content_tokens(tokens: Sequence[QueryToken]) -> list[QueryToken]:
    """Tokens that could name a product: not a question word, not a bare number."""
    return [
        t
        for t in tokens
        if not is_stopword(t.word) and t.number is None and not t.word.isdigit() and len(t.word) > 1
    ]


@dataclass(frozen=True)
class _Meaning:
    key: str
    attribute: bool


def _vocabulary() -> dict[str, _Meaning]:
    table: dict[str, _Meaning] = {}
    for entries, attribute in ((PRODUCTS, False), (ATTRIBUTES, True)):
        for meaning, forms in entries.items():
            for form in forms:
                for word in words(form):
                    table.setdefault(stem(word), _Meaning("#" + meaning, attribute))
    return table


MEANINGS = _vocabulary()
ATTRIBUTE_KEYS = frozenset(m.key for m in MEANINGS.values() if m.attribute)
# The same meanings by spelling, for Russian and Kazakh typed in Latin letters ("kolodki").
MEANINGS_BY_SHAPE = {skeleton(form): meaning for form, meaning in reversed(MEANINGS.items())}
STOPWORD_SHAPES = frozenset(skeleton(w) for w in STOPWORDS if language.is_cyrillic(w))
# Russian endings as they look in Latin letters: "zuba", "kolodki", "perednie".
LATIN_RU_ENDINGS = ("ami", "ykh", "ikh", "ogo", "ego", "ie", "ye", "yi", "ii", "oi", "ei", "ov",
                    "ev", "om", "em", "ah", "ax", "a", "y", "i", "u", "e", "o")  # fmt: skip
WIDER = {stem(form): tuple("#" + m for m in meanings) for form, meanings in QUERY_WIDER.items()}
COMPOUNDS = {("#" + a, "#" + b): "#" + c for (a, b), c in NAME_COMPOUNDS.items()}


def is_stopword(word: str) -> bool:
    """A question word, in either script ("skolko" is "сколько" typed in Latin letters)."""
    if word in STOPWORDS:
        return True
    return (
        not language.is_cyrillic(word)
        and stem(word) not in MEANINGS
        and (skeleton(word) in STOPWORD_SHAPES)
    )


def latin_shapes(word: str) -> list[str]:
    """Spellings of a Latin-typed word with a Russian ending taken off ("zuba" → "zub")."""
    if language.is_cyrillic(word) or word.isdigit():
        return []
    shape = skeleton(word)
    return [
        shape[: -len(e)] for e in LATIN_RU_ENDINGS if shape.endswith(e) and len(shape) - len(e) >= 3
    ]


# Kazakh plural, case and possessive endings, longest first: "тюльпандар", "диванды", "үстелге".
KK_ENDINGS = sorted(
    {f"{p}{c}" for p in ("лар", "лер", "дар", "дер", "тар", "тер")
     for c in ("", "дың", "дің", "ға", "ге", "ды", "ді", "да", "де", "ы", "і", "ың", "ің")}
    | {"ның", "нің", "дың", "дің", "тың", "тің", "ға", "ге", "қа", "ке", "ды", "ді", "ты", "ті",
       "ны", "ні", "да", "де", "та", "те", "сы", "сі", "ын", "ін", "ы", "і"},
    key=len,
    reverse=True,
)  # fmt: skip


def word_key(word: str) -> str:
    """The language-free key of one word: "#sofa" for "диванов", "boston" for "Бостон"."""
    if word.isdigit():
        return word
    stemmed = stem(word)
    meaning = MEANINGS.get(stemmed)
    if meaning is None and language.is_cyrillic(word):
        low = normalise(word)
        for ending in KK_ENDINGS:
            if low.endswith(ending) and len(low) - len(ending) >= 3:
                meaning = MEANINGS.get(stem(low[: -len(ending)]))
                if meaning is not None:
                    break
    if meaning is None and not language.is_cyrillic(word):
        shape = skeleton(stemmed)
        meaning = MEANINGS_BY_SHAPE.get(shape) or next(
            (MEANINGS_BY_SHAPE[s] for s in latin_shapes(word) if s in MEANINGS_BY_SHAPE), None
        )
    if meaning:
        return meaning.key
    shape = skeleton(stemmed)
    # A foreign name in Cyrillic loses too much to Russian endings ("Осстем" → "осст").
    return shape if len(shape) >= 4 or len(shape) == len(skeleton(word)) else skeleton(word)


def keys_match(query_key: str, name_key: str, fuzzy: bool) -> bool:
    """Meanings match exactly; spellings by prefix and, when `fuzzy`, within a typo."""
    if query_key.startswith("#") or name_key.startswith("#"):
        return query_key == name_key
    return stems_match(query_key, name_key, fuzzy)


def _meaning_by_typo(stemmed: str) -> str:
    """The vocabulary meaning a misspelt word stands for ("chiars" → #chair, "tulps" → #tulip),
    or "". Short words must keep their first two letters."""
    if len(stemmed) < 4:
        return ""
    limit = 1 if len(stemmed) < 7 else 2
    head = 1 if len(stemmed) >= 5 else 2
    for known, meaning in MEANINGS.items():
        if (
            len(known) >= 4
            and known[:head] == stemmed[:head]
            and not (head == 2 and meaning.attribute)
            and edit_distance_at_most(stemmed, known, limit)
        ):
            return meaning.key
    return ""


@dataclass(frozen=True)
class ItemMatch:
    index: int
    coverage: float  # share of the name's weight the query covered
    weight: float  # matched weight (idf)
    positions: frozenset[int]  # query token positions explained by this item
    by_sku: bool = False
    number_positions: frozenset[int] = field(default_factory=frozenset)
    # Only descriptive words (colour, material, size) matched: "white" alone is not a product.
    weak: bool = False
    # Every matched word is the name's own word, as written (not a translation of it).
    literal: bool = False


# Texts and words whose matches a catalogue keeps (each entry a few hundred bytes).
MATCH_CACHE_SIZE = 4096

SEPARATORS_RE = re.compile(
    r"[,;+\n]|(?<!\d)[.?!]|[.?!](?!\d)"
    r"|\s(?:and|also|plus|as well as|и|а также|плюс|ещё|еще|және|мен|тағы)\s",
    re.IGNORECASE,
)


def segments(text: str) -> list[str]:
    """The parts of a message that each name one thing: "a table and 4 chairs" → two parts."""
    return [part.strip() for part in SEPARATORS_RE.split(f" {text} ") if part and part.strip()]


class Catalogue:
    """An index over item names, aliases and SKUs for matching and retrieval."""

    def __init__(
        self,
        names: Sequence[str],
        skus: Sequence[str],
        texts: Sequence[str],
        aliases: Sequence[Sequence[str]] | None = None,
    ) -> None:
        self.names = list(names)
        alias_lists = list(aliases) if aliases is not None else [[] for _ in self.names]
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
        # BM25 over name + aliases + SKU + description
        self.doc_tokens = [
            [word_key(w) for w in words(f"{t} {' '.join(a)}")]
            for t, a in zip(texts, alias_lists, strict=True)
        ]
        self.doc_len = [len(d) for d in self.doc_tokens]
        self.avg_len = (sum(self.doc_len) / len(self.doc_len)) if self.doc_len else 1.0
        doc_df: Counter[str] = Counter()
        for d in self.doc_tokens:
            doc_df.update(set(d))
        self.doc_df = doc_df
        self.doc_tf = [Counter(d) for d in self.doc_tokens]

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
            meaning = _meaning_by_typo(word_stem)
            if meaning in self.vocabulary:
                found.add(meaning)
        found |= {k for k in WIDER.get(stem(word), ()) if k in self.vocabulary}
        return frozenset(found)

    def match(self, text: str) -> list[ItemMatch]:
        """Every item the text could be naming, best first."""
        return list(self._matches(text))

    def _match(self, text: str) -> tuple[ItemMatch, ...]:
        tokens = analyse(text)
        content = content_tokens(tokens)
        numbers = [t for t in tokens if t.number is not None and len(t.word) <= 9]
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
        if any(not m.weak for m in matches):
            matches = [m for m in matches if not m.weak]
        matches.sort(key=lambda m: (m.by_sku, m.coverage, m.weight), reverse=True)
        return tuple(matches)

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
        if not words_found:
            return None
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
        by_position = {t.position: t for t, _found in keys_of}
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
            weak=all(k in ATTRIBUTE_KEYS for k in words_found),
            literal=literal,
        )

    def resolve(self, text: str) -> list[list[ItemMatch]]:
        """Groups of matches, one group per thing the customer named: a group of one is a
        clear match; a group of several is ambiguous (they explain the same words equally)."""
        remaining = self.match(text)
        groups: list[list[ItemMatch]] = []
        consumed: set[int] = set()
        while remaining:
            remaining = [m for m in remaining if m.by_sku or (m.positions - consumed)]
            if not remaining:
                break
            top = remaining[0]
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
            groups.append(group)
            consumed |= set(top.positions)
            ids = {m.index for m in group}
            remaining = [
                m for m in remaining if m.index not in ids and not (m.positions <= consumed)
            ]
        return groups

    def order_lines(self, text: str) -> list[tuple[list[ItemMatch], int]]:
        """What the customer named, part by part, each with the quantity written next to it:
        "Oak table 180 and 4 oak chairs" → (table, 1), (chairs, 4). Positions are relative to
        each part."""
        lines: list[tuple[list[ItemMatch], int]] = []
        seen: set[int] = set()
        previous = ""
        last_line: int | None = None  # the line the part before named, for "…, штук 6"
        # Descriptive words alone ("white", "oak") name nothing when the message names a product.
        strong = any(not m.weak for m in self.match(text))
        for part in segments(text):
            resolved = self.resolve(part)
            groups = [g for g in resolved if not all(m.weak for m in g)] if strong else resolved
            vague = resolved and (not groups or len(groups[0]) > 1)
            if vague and previous:
                groups = self._elliptic(part, previous, seen) or groups
            previous = part if groups else previous
            if not groups:
                count = count_only(part)
                if count is not None and last_line is not None and lines[last_line][1] == 1:
                    lines[last_line] = (lines[last_line][0], count)
                last_line = None
                continue
            tokens = analyse(part)
            taken: set[int] = set()
            for group in groups:
                for m in group:
                    taken |= set(m.number_positions)
                    if m.by_sku:
                        taken |= set(m.positions)
            for number, group in enumerate(groups):
                if number and max(m.coverage for m in group) < 0.6:
                    continue  # a stray word beside the thing named ("teeth whitening")
                if len(group) == 1 and group[0].index in seen:
                    continue  # named twice ("the table … and that table"): one line
                lines.append((group, quantity_near(tokens, group[0].positions, taken)))
                last_line = len(lines) - 1
                if len(group) == 1:
                    seen.add(group[0].index)
        # "Диван бар ма? Бостон": a "which one?" that another part answers is no question.
        return [
            (group, qty)
            for group, qty in lines
            if len(group) == 1 or not ({m.index for m in group} & seen)
        ]

    def _elliptic(self, part: str, previous: str, seen: set[int]) -> list[list[ItemMatch]]:
        """A part that only describes ("and the oil one too" after "air filter Camry") read
        with the words of the part before it, for an item not named already."""
        own = len(analyse(part))
        for group in self.resolve(f"{part} {previous}"):
            fresh = [m for m in group if m.index not in seen]
            if len(fresh) == 1 and len(group) == 1 and min(fresh[0].positions) < own:
                only_own = frozenset(p for p in fresh[0].positions if p < own)
                return [[replace(fresh[0], positions=only_own, number_positions=frozenset())]]
        return []

    def unknown_words(self, text: str) -> list[str]:
        """The words of a message that could name a product but match nothing in the list
        ("swing", "terrace"): a sign the customer asks for something the list does not have."""
        return [t.word for t in content_tokens(analyse(text)) if not self._token_keys(t)]

    # --- retrieval (prompt, large lists) -------------------------------------------------

    def retrieve(self, text: str, k: int) -> list[int]:
        """Indices of the k items that score best for the text (BM25, k1=1.2, b=0.75)."""
        query = [word_key(t.word) for t in content_tokens(analyse(text))]
        query += [t.word for t in analyse(text) if t.word.isdigit()]
        if not query:
            return []
        expanded: list[str] = []
        for q in query:
            if q in self.doc_df:
                expanded.append(q)
                continue
            close = [s for s in self.vocabulary if keys_match(q, s, fuzzy=True)]
            expanded.extend(close[:3])
        n = len(self.doc_tokens)
        scores: list[tuple[float, int]] = []
        for i, tf in enumerate(self.doc_tf):
            score = 0.0
            for q in expanded:
                f = tf.get(q, 0)
                if not f:
                    continue
                idf = math.log(1 + (n - self.doc_df[q] + 0.5) / (self.doc_df[q] + 0.5))
                norm = 1.2 * (1 - 0.75 + 0.75 * self.doc_len[i] / self.avg_len)
                score += idf * f * 2.2 / (f + norm)
            if score > 0:
                scores.append((score, i))
        scores.sort(key=lambda s: (-s[0], s[1]))
        return [i for _, i in scores[:k]]


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
_COUNT_FILLERS = frozenset(
    [
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
    if not any(w in COUNT_UNITS for w in rest):
        return None
    if any(w not in COUNT_UNITS and w not in _COUNT_FILLERS for w in rest):
        return None
    return numbers[0]


# Words between an item and its count: "tires, a set of 4", "комплект из 4".
COUNT_WORDS = frozenset({"set", "kit", "pack", "box", "комплект", "набор", "из", "упаковка"})


def quantity_of_unit(text: str, unit: str) -> int | None:
    """A count written with the item's unit ("3 зуба" for a price per tooth), or None."""
    unit_keys = {word_key(w) for w in words(unit)}
    tokens = analyse(text)
    for this, after in itertools.pairwise(tokens):
        if this.number is not None and 0 < this.number < 1000 and word_key(after.word) in unit_keys:
            return this.number
    return None


# A number followed by one of these is a size, weight or amount, not how many the customer wants.
_MEASURES = (
    "cm mm m kg g l ml см мм м кг г л мл литр литра литров метр метра метров inch дюйм x х "
    "тг тенге kzt k к тыс тысяч тысячи млн usd rub руб ah лет года год years year old жас жаста "
    "жастағы месяцев months дней days этаж этаже floor floors"
)
MEASURE_WORDS = frozenset(_MEASURES.split())


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
        after = by_position.get(p + 1)
        if after is not None and after.word in MEASURE_WORDS and after.word != "x":
            return None
        if after is not None and len(after.word) == 3 and after.word.isdigit():
            return None  # "30 000": an amount written in groups of thousands
        return t.number

    for p in range(first - 1, max(-1, first - 4), -1):
        t = by_position.get(p)
        if t is None:
            break
        number = count_at(p)
        if number is not None:
            return number
        if not is_stopword(t.word) and t.number is None and p not in positions:
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
    return 1
