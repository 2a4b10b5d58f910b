"""How the guardrail cuts and blanks a text: sentences (a decimal point is not an end), the
sentence around a position, and the text with its amounts of money blanked or its currency
signs removed. Functions of the text alone; imports only `knowledge.money`."""

from __future__ import annotations

import bisect
import functools
import re

from assistant.knowledge.money import CURRENCY_RE, find_amounts

SENTENCE_END_RE = re.compile(r"[.!?;…]+(?=\s)|\n+")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line; a decimal point is not an end."""
    spans, start = [], 0
    for match in SENTENCE_END_RE.finditer(text):
        spans.append((start, match.end()))
        start = match.end()
    spans.append((start, len(text)))
    return spans


@functools.lru_cache(maxsize=64)
def _sentence_starts(text: str) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    # Every deadline or amount in a long reference text asks for its sentence: split it once.
    spans = tuple(sentence_spans(text))
    return tuple(a for a, _ in spans), spans


def sentence_text(text: str, position: int) -> str:
    starts, spans = _sentence_starts(text)
    a, b = spans[max(0, bisect.bisect_right(starts, position) - 1)]
    return text[a:b] if a <= position < b else text


def blank_amounts(text: str) -> str:
    for amount in find_amounts(text):
        text = text[: amount.start] + " " * (amount.end - amount.start) + text[amount.end :]
    return text


def strip_currency(text: str) -> str:
    return CURRENCY_RE.sub("", text)


def find_amounts_free(text: str) -> str:
    """The text with amounts of money blanked (a price "1.500" is not a date or a time)."""
    for amount in find_amounts(text):
        if any(c in amount.text for c in ".:"):
            text = text[: amount.start] + " " * (amount.end - amount.start) + text[amount.end :]
    return text
