"""The customer's language: the one place that decides it.

The assistant's fixed sentences exist in English and Russian; Kazakh and mixed Kazakh/Russian
chats get Russian, as most businesses there do. A turn's language is what the customer wrote in
it (the script most of its letters are in), else the channel's configured language.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

SUPPORTED = ("en", "ru")
CYRILLIC = re.compile(r"[а-яёәғқңөұүһі]", re.IGNORECASE)
LATIN = re.compile(r"[a-z]", re.IGNORECASE)


def is_cyrillic(text: str) -> bool:
    """Whether the text holds any Cyrillic letter (Russian or Kazakh)."""
    return CYRILLIC.search(text) is not None


def detect(text: str) -> str:
    """ "ru" when the text is mostly Cyrillic (Russian or Kazakh), else "en"."""
    cyrillic = len(CYRILLIC.findall(text))
    latin = len(LATIN.findall(text))
    return "ru" if cyrillic > latin else "en"


def supported(language: str) -> str:
    """A configured language code ("ru-RU", "kk", "de") as one the replies exist in."""
    code = speech_code(language) or ""
    if code == "kk":
        return "ru"
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
