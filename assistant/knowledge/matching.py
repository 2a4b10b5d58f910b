"""Lexical matching of what customers write against price-list names: no ML, no dictionaries.

Tokens are lower-cased words of Latin, Cyrillic (Russian and Kazakh letters) and digits, with a
crude suffix-stripping stemmer (English plurals, Russian case endings) so "стулья", "стула" and
"стул" meet, and a typo tolerance (one edit, two for long words, same first letter) applied
only to words the price list does not contain. Used by the catalogue assistant (which item did
the customer mean?) and by the prompt's retrieval when the list is too big to send whole (BM25).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from assistant import language

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
)
STOPWORDS = frozenset(" ".join(_STOPWORD_LINES).split())

NUMBER_WORDS: dict[str, int] = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "dozen": 12, "couple": 2, "pair": 2,
    "один": 1, "одна": 1, "одну": 1, "одно": 1, "два": 2, "две": 2, "пару": 2, "пара": 2,
    "три": 3, "четыре": 4, "пять": 5, "шесть": 6, "семь": 7, "восемь": 8, "девять": 9,
    "десять": 10, "дюжину": 12,
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
    if not fuzzy or shorter < 4 or query_stem[0] != name_stem[0]:
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
        if t.word not in STOPWORDS and t.number is None and not t.word.isdigit() and len(t.word) > 1
    ]


@dataclass
class ItemMatch:
    index: int
    coverage: float  # share of the name's weight the query covered
    weight: float  # matched weight (idf)
    positions: frozenset[int]  # query token positions explained by this item
    by_sku: bool = False
    number_positions: frozenset[int] = field(default_factory=frozenset)


class Catalogue:
    """An index over item names (and SKUs) for matching and retrieval."""

    def __init__(self, names: Sequence[str], skus: Sequence[str], texts: Sequence[str]) -> None:
        self.names = list(names)
        self.name_stems = [list(dict.fromkeys(stem(w) for w in words(n))) for n in names]
        self.skus = [compact(s) for s in skus]
        df: Counter[str] = Counter()
        for stems in self.name_stems:
            df.update(set(stems))
        self.vocabulary = set(df)
        n = max(1, len(names))
        self.idf = {s: math.log(1 + n / c) for s, c in df.items()}
        # BM25 over name + SKU + description
        self.doc_tokens = [[stem(w) for w in words(t)] for t in texts]
        self.doc_len = [len(d) for d in self.doc_tokens]
        self.avg_len = (sum(self.doc_len) / len(self.doc_len)) if self.doc_len else 1.0
        doc_df: Counter[str] = Counter()
        for d in self.doc_tokens:
            doc_df.update(set(d))
        self.doc_df = doc_df
        self.doc_tf = [Counter(d) for d in self.doc_tokens]

    # --- matching (catalogue assistant) ---------------------------------------------------

    def match(self, text: str) -> list[ItemMatch]:
        """Every item the text could be naming, best first."""
        tokens = analyse(text)
        content = content_tokens(tokens)
        numbers = [t for t in tokens if t.word.isdigit()]
        compounds = {compact(c) for c in COMPOUND_RE.findall(normalise(text))}
        compounds |= {t.word for t in tokens}
        # Which name stems each content token matches, computed once over the vocabulary
        # rather than once per item (names share most of their words).
        matching_stems = [
            {s for s in self.vocabulary if stems_match(t.stem, s, t.stem not in self.vocabulary)}
            for t in content
        ]
        matches: list[ItemMatch] = []
        for index, stems in enumerate(self.name_stems):
            if self.skus[index] and len(self.skus[index]) >= 3 and self.skus[index] in compounds:
                sku_positions = frozenset(
                    t.position for t in tokens if t.word and t.word in self.skus[index]
                )
                matches.append(ItemMatch(index, 1.0, 99.0, sku_positions, by_sku=True))
                continue
            total = sum(self.idf.get(s, 1.0) for s in stems) or 1.0
            matched = 0.0
            positions: set[int] = set()
            number_positions: set[int] = set()
            for s in stems:
                if s.isdigit():
                    for t in numbers:
                        if t.word == s:
                            matched += self.idf.get(s, 1.0)
                            number_positions.add(t.position)
                            break
                    continue
                for t, stems_of_t in zip(content, matching_stems, strict=True):
                    if s in stems_of_t:
                        matched += self.idf.get(s, 1.0)
                        positions.add(t.position)
                        break
            if positions:
                matches.append(
                    ItemMatch(
                        index,
                        matched / total,
                        matched,
                        frozenset(positions | number_positions),
                        number_positions=frozenset(number_positions),
                    )
                )
        matches.sort(key=lambda m: (m.by_sku, m.coverage, m.weight), reverse=True)
        return matches

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
                # contain the same words ("table" vs "table lamp").
                complete = [m for m in group if m.coverage >= 0.999]
                if len(complete) == 1:
                    group = complete
            groups.append(group)
            consumed |= set(top.positions)
            ids = {m.index for m in group}
            remaining = [
                m for m in remaining if m.index not in ids and not (m.positions <= consumed)
            ]
        return groups

    # --- retrieval (prompt, large lists) -------------------------------------------------

    def retrieve(self, text: str, k: int) -> list[int]:
        """Indices of the k items that score best for the text (BM25, k1=1.2, b=0.75)."""
        query = [t.stem for t in content_tokens(analyse(text))]
        query += [t.word for t in analyse(text) if t.word.isdigit()]
        if not query:
            return []
        expanded: list[str] = []
        for q in query:
            if q in self.doc_df:
                expanded.append(q)
                continue
            close = [s for s in self.vocabulary if stems_match(q, s, fuzzy=True)]
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


def quantity_near(
    tokens: Sequence[QueryToken], positions: frozenset[int], exclude: set[int]
) -> int:
    """The quantity the customer put next to an item: "2 chairs", "chairs x2", "стул 3 шт"."""
    if not positions:
        return 1
    first, last = min(positions), max(positions)
    by_position = {t.position: t for t in tokens}
    for p in range(first - 1, max(-1, first - 4), -1):
        t = by_position.get(p)
        if t is None:
            break
        if t.number is not None and p not in exclude and 0 < t.number < 1000:
            return t.number
        if t.word not in STOPWORDS and t.number is None and p not in positions:
            break
    for p in range(last + 1, last + 3):
        t = by_position.get(p)
        if t is None:
            break
        if t.number is not None and p not in exclude and 0 < t.number < 1000:
            return t.number
    return 1
