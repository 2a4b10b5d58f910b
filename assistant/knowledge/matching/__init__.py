"""Lexical matching of what customers write against price-list names (`catalogue.py`); split by
concern in the next step."""

from assistant.knowledge.matching.catalogue import (
    MEASURE_WORDS,
    NUMBER_WORDS,
    Catalogue,
    ItemMatch,
    QueryToken,
    analyse,
    compact,
    content_tokens,
    normalise,
    quantity_near,
    quantity_of_unit,
    segments,
    stem,
    words,
)

__all__ = [
    "MEASURE_WORDS",
    "NUMBER_WORDS",
    "Catalogue",
    "ItemMatch",
    "QueryToken",
    "analyse",
    "compact",
    "content_tokens",
    "normalise",
    "quantity_near",
    "quantity_of_unit",
    "segments",
    "stem",
    "words",
]
