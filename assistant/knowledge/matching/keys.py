"""Each word reduced to a key that does not depend on the language, and when two keys match.

The key is the word's meaning from a small bilingual vocabulary (`knowledge.vocabulary`: "sofa",
"диван" → #sofa; Kazakh endings and Russian typed in Latin letters read too) or else its
transliterated skeleton (`knowledge.transliteration`: "Бостон", "Boston" → boston). Meanings
match exactly; spellings by prefix, by a long shared root, or (`fuzzy`, for words the list does
not contain) within one edit, two for long words, same first letter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from assistant import language
from assistant.knowledge.matching.tokens import STOPWORDS, QueryToken, normalise, stem, words
from assistant.knowledge.transliteration import skeleton
from assistant.knowledge.vocabulary import ATTRIBUTES, NAME_COMPOUNDS, PRODUCTS, QUERY_WIDER


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


def common_prefix(a: str, b: str) -> int:
    """How many letters two words share from the start."""
    differ = (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y)
    return next(differ, min(len(a), len(b)))


def stems_match(query_stem: str, name_stem: str, fuzzy: bool) -> bool:
    if query_stem == name_stem:
        return True
    if query_stem.isdigit() or name_stem.isdigit():
        return False
    shorter = min(len(query_stem), len(name_stem))
    if shorter >= 4 and (query_stem.startswith(name_stem) or name_stem.startswith(query_stem)):
        return True
    # Long words of one root ("металлокерамической", "металлокерамика") share most letters.
    common = common_prefix(query_stem, name_stem)
    if shorter >= 8 and common >= max(7, int(shorter * 0.75)):
        return True
    if not fuzzy or shorter < 5 or query_stem[0] != name_stem[0]:
        return False
    return edit_distance_at_most(query_stem, name_stem, 1 if shorter < 7 else 2)


def one_root(a: str, b: str) -> bool:
    """Two words of one script share a root, if not an ending: "тюля" and "тюль", "газа" and
    "газированная". Three letters and three quarters of the shorter word, from the start."""
    return common_prefix(a, b) >= max(3, 0.75 * min(len(a), len(b)))


def shared_root(a: str, b: str) -> bool:
    """Two spellings of one borrowed word across scripts share its root, if not its ending:
    "lamination" and "ламинирование" (lamin-), "correction" and "коррекция" (korekt-). Half
    the shorter word and at least five letters, from the start."""
    shorter = min(len(a), len(b))
    common = common_prefix(a, b)
    return common >= 5 and common * 2 >= shorter


def content_tokens(tokens: Sequence[QueryToken]) -> list[QueryToken]:
    """Tokens that could name a product: not a question word, not a bare number; a single
    letter only as the head of a code ("М500", "B2": a letter before a number)."""
    numbered = {t.position - 1 for t in tokens if t.word.isdigit()}
    return [
        t
        for t in tokens
        if not is_stopword(t.word)
        and t.number is None
        and not t.word.isdigit()
        and (len(t.word) > 1 or (t.position in numbered and t.word.isalpha()))
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


def meaning_by_typo(stemmed: str) -> str:
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
