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

The modules, each importing only those listed before it:
- `tokens`: words, stems, numbers spelt in words, stopwords;
- `keys`: a word's language-free key, and when two keys (or stems) match, typos included;
- `quantities`: a message cut into parts, the count the customer put next to a thing, and
  who the order is for (a party, children with their ages);
- `units`: units and sizes as customers and lists write them;
- `distinctions`: what tells look-alike items apart (with/without, codes, sizes, periods,
  "small"/"big", refused words), from the text alone;
- `retrieval`: BM25 over the list's texts, for the prompt;
- `item_match`: `ItemMatch`, how one item is named in a text;
- `telling_apart`: `TellingApart`, what tells the list's look-alikes apart, item by item, and
  the narrowing of a text's matches by it;
- `index`: `ItemIndex`, the index over a list's names, aliases and SKUs (match, resolve);
- `catalogue`: `Catalogue`, the index reading orders (order lines with their quantities).
Callers import from this package, never from its modules.
"""

from assistant.knowledge.matching.catalogue import Catalogue
from assistant.knowledge.matching.item_match import ItemMatch
from assistant.knowledge.matching.keys import content_tokens, is_stopword, word_key
from assistant.knowledge.matching.quantities import (
    MEASURE_WORDS,
    NOT_COUNTS,
    Party,
    party_of,
    quantity_near,
    quantity_of_unit,
    segments,
)
from assistant.knowledge.matching.tokens import (
    NUMBER_WORDS,
    QueryToken,
    analyse,
    compact,
    normalise,
    stem,
    words,
)
from assistant.knowledge.matching.units import (
    Family,
    Measure,
    family_of,
    format_quantity,
    measure_of,
    minimum_of,
    quantity_in,
)

__all__ = [
    "MEASURE_WORDS",
    "NOT_COUNTS",
    "NUMBER_WORDS",
    "Catalogue",
    "Family",
    "ItemMatch",
    "Measure",
    "Party",
    "QueryToken",
    "analyse",
    "compact",
    "content_tokens",
    "family_of",
    "format_quantity",
    "is_stopword",
    "measure_of",
    "minimum_of",
    "normalise",
    "party_of",
    "quantity_in",
    "quantity_near",
    "quantity_of_unit",
    "segments",
    "stem",
    "word_key",
    "words",
]
