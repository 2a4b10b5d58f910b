"""One spelling for a word whatever the script: "Бостон" and "Boston", "Тойота" and "Toyota",
"Қарағанды" and "Karaganda" meet.

`skeleton(word)` writes Cyrillic (Russian and Kazakh letters) in Latin, then folds the spellings
that differ only by convention (c/k, ph/f, oo/u, double letters, y/i), so brand and model names
match across scripts. It is a matching key, never shown to anyone.
"""

from __future__ import annotations

import functools
import re

CYRILLIC_TO_LATIN: dict[str, str] = {
    "а": "a", "б": "b", "в": "v", "г": "g", "д": "d", "е": "e", "ё": "e", "ж": "zh", "з": "z",
    "и": "i", "й": "i", "к": "k", "л": "l", "м": "m", "н": "n", "о": "o", "п": "p", "р": "r",
    "с": "s", "т": "t", "у": "u", "ф": "f", "х": "h", "ц": "ts", "ч": "ch", "ш": "sh", "щ": "sh",
    "ъ": "", "ы": "i", "ь": "", "э": "e", "ю": "u", "я": "ia",
    # Kazakh letters
    "ә": "a", "ғ": "g", "қ": "k", "ң": "n", "ө": "o", "ұ": "u", "ү": "u", "һ": "h", "і": "i",
}  # fmt: skip

# Latin spellings folded to one (order matters: longer patterns first).
_FOLDS: tuple[tuple[str, str], ...] = (
    ("sch", "sh"),
    ("tsch", "ch"),
    ("dzh", "zh"),
    ("kh", "h"),
    ("ph", "f"),
    ("th", "t"),
    ("ck", "k"),
    ("qu", "kv"),
    ("q", "k"),
    ("x", "ks"),
    ("w", "v"),
    ("j", "zh"),
    ("oo", "u"),
    ("ee", "i"),
    ("ou", "u"),
    ("y", "i"),
    # "ю" is written "yu" in Latin ("utyug" for "утюг"), "я" as "ya"
    ("iu", "u"),
)
_C_SOFT = re.compile(r"c(?=[eiy])")
# A word-initial x is an s in Chinese brand names as Russian writes them ("Xiaomi" → "Сяоми").
_X_START = re.compile(r"^(?:x|ks)")
_DOUBLE = re.compile(r"([a-z])\1+")


def to_latin(word: str) -> str:
    """Cyrillic letters written in Latin; other characters unchanged."""
    return "".join(CYRILLIC_TO_LATIN.get(ch, ch) for ch in word.lower())


@functools.lru_cache(maxsize=16384)
def skeleton(word: str) -> str:
    """The script-free matching key of one word (already lower-cased and stemmed). Kept per
    process: matching asks again for the same few thousand words."""
    latin = _X_START.sub("s", to_latin(word))
    latin = _C_SOFT.sub("s", latin).replace("ch", "\x00").replace("c", "k").replace("\x00", "ch")
    for old, new in _FOLDS:
        latin = latin.replace(old, new)
    return _DOUBLE.sub(r"\1", latin)
