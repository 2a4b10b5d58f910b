"""`ItemMatch`: how one item of a list is named in a text (which words, how much of its name,
by SKU or by descriptive words only)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    # The name's words the query did not say ("педикюр" of a manicure-and-pedicure set).
    unsaid: frozenset[str] = field(default_factory=frozenset)
    # Only a period or a count of people matched ("в месяц", "за троих"): how long, not what.
    how_long: bool = False
