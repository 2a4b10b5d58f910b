"""The customer's language: the one place that decides it.

The assistant's fixed sentences exist in English, Russian and Kazakh. A turn's language is what
the customer wrote in it (all its pending messages together), else, with no letters in it, the
channel's configured language ("kk" stays "kk"):

- Cyrillic mostly: Kazakh when the text is clearly Kazakh, else Russian. A word is a Kazakh
  marker when it holds a letter Russian lacks (ә ғ қ ң ө ұ ү һ і) or is a common Kazakh word
  often typed without them (`KAZAKH_WORDS`: "канша", "керек", "бар", "емес"…). Greetings and
  thanks ("сәлем", "салам", "рахмет": `POLITE_WORDS`) are said by Russian speakers in
  Kazakhstan too, so they count only towards the second condition below.
  The text is Kazakh when
  1. it has at least two markers (greetings and thanks aside) and they are at least a quarter
     of its Cyrillic words, or
  2. markers (greetings and thanks included) are at least half of its Cyrillic words (a lone
     "Рахмет", "Сәлем!", "Сәлеметсіз бе!").
  So the mixed "Монтажная пена бар ма? 4 баллон керек" (бар, керек: two of six words) is
  Kazakh, while "Балаларға плавание бар ма? ребенку 6 лет, одно занятие в группе сколько?"
  (two of eleven), "салем, отбеливание зум сколько стоит? рахмет заранее" (greetings only) and
  "Доставка в Өскемен сколько стоит?" (one marker) stay Russian.
- Latin letters mostly: English (transliterated Russian or Kazakh included).

`script` is only the alphabet (rule sentences and item names are chosen by it: a Kazakh reply
quotes the Cyrillic ones).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SUPPORTED = ("en", "ru", "kk")
CYRILLIC = re.compile(r"[а-яёәғқңөұүһі]", re.IGNORECASE)
LATIN = re.compile(r"[a-z]", re.IGNORECASE)
KAZAKH_LETTERS = re.compile(r"[әғқңөұүһі]", re.IGNORECASE)
WORD = re.compile(r"[^\W\d_]+")
# Kazakh words customers type with Russian letters only; none is a Russian word.
_KAZAKH_WORD_LINES = (
    "керек керекпа бар жок емес иа канша кандай калай кайда кашан неше багасы багасын баганы",
    "болады бола жане мен маган бизге сизде сиздерде сиздер сиз бер бериниз жеткизу жеткиз",
    "алайын аламын алсам алсак керемет жаксы жарайды тапсырыс тапсырыспен",
)
KAZAKH_WORDS = frozenset(" ".join(_KAZAKH_WORD_LINES).split())
# Greetings and thanks Russian-speaking customers in Kazakhstan use too: Kazakh markers only in
# a message that is little more than them.
_POLITE_LINES = ("салем салам сәлем рахмет рақмет ассалаумагалейкум ассалаумағалейкум",)
POLITE_WORDS = frozenset(" ".join(_POLITE_LINES).split())
# The shares of the Cyrillic words that make a message Kazakh: two or more markers (greetings
# and thanks aside) that are at least a quarter of them, or markers that are half of them.
MIXED_SHARE = 1 / 4
SHORT_SHARE = 1 / 2


def is_cyrillic(text: str) -> bool:
    """Whether the text holds any Cyrillic letter (Russian or Kazakh)."""
    return CYRILLIC.search(text) is not None


def script(text: str) -> str:
    """ "cyrillic" when most of the text's letters are Cyrillic (Russian or Kazakh), else
    "latin"."""
    cyrillic = len(CYRILLIC.findall(text))
    latin = len(LATIN.findall(text))
    return "cyrillic" if cyrillic > latin else "latin"


def script_of(lang: str) -> str:
    """The alphabet replies in a language are written in: Cyrillic for Russian and Kazakh."""
    return "latin" if supported(lang) == "en" else "cyrillic"


def is_kazakh(text: str) -> bool:
    """Whether Cyrillic text is Kazakh rather than Russian (the rule of the module docstring)."""
    words = [w.lower() for w in WORD.findall(text) if is_cyrillic(w)]
    polite = sum(1 for w in words if w in POLITE_WORDS)
    strong = sum(
        1
        for w in words
        if w not in POLITE_WORDS and (KAZAKH_LETTERS.search(w) or w in KAZAKH_WORDS)
    )
    markers = strong + polite
    if strong >= 2 and strong >= MIXED_SHARE * len(words):
        return True
    return markers > 0 and markers >= SHORT_SHARE * len(words)


def detect(text: str) -> str:
    """ "kk", "ru" or "en": the language of a text with letters (see the module docstring)."""
    if script(text) == "latin":
        return "en"
    return "kk" if is_kazakh(text) else "ru"


def supported(language: str) -> str:
    """A configured language code ("ru-RU", "kk", "de") as one the replies exist in."""
    code = speech_code(language) or ""
    return code if code in SUPPORTED else "en"


def customer_language(written: Iterable[str], channel_language: str) -> str:
    """What the customer wrote decides; with no letters in it, the channel's language."""
    text = " ".join(written)
    if CYRILLIC.search(text) or LATIN.search(text):
        return detect(text)
    return supported(channel_language)


def speech_code(language: str | None) -> str | None:
    """'en', 'en-US', 'EN_gb' → 'en'; blank → None (let the speech model detect it)."""
    if not language or not language.strip():
        return None
    return language.strip().replace("_", "-").split("-")[0].lower() or None
