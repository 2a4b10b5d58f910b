"""Full-text search over message text: one query function over two engines, both stemmed.

A word typed matches the words of a message as a prefix of the word or of its stem, so
"рассрочка" finds "рассрочку", "доставки" finds "доставка" and "deliveries" finds "delivery",
while a half-typed word still finds the whole one.

PostgreSQL (production) matches the `russian` vector of the text (Russian stems; Latin words get
the English stemmer inside that configuration) together with the `simple` one (whole words:
names, SKUs, Kazakh) through the GIN index of migration `0016_search_stems`. SQLite (`make run`)
keeps an FTS5 table of each message's words and their Snowball stems (`index_text`), written by
triggers that call the `inbox_search_tokens` SQL function every connection registers
(`register_sqlite_functions`, from `ConversationsConfig.ready`). Kazakh has no Snowball stemmer:
a word with a Kazakh letter is kept whole.

Callers pass the messages a user may see (`inbox.conversations.access`); this module never
widens them.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import snowballstemmer
from django.db import connection
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BooleanField, F, Func, QuerySet
from django.db.models.expressions import RawSQL
from django.db.models.sql.compiler import SQLCompiler

from inbox.conversations.models import Message

MAX_TERMS = 8
HIT_LIMIT = 30
_WORD = re.compile(r"\w+", re.UNICODE)
_LATIN = re.compile(r"[a-z]+")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]+")
# Letters of Kazakh that Russian lacks: a word with one is Kazakh, and stays whole.
_KAZAKH = set("әғқңөұүһі")
SQLITE_FUNCTION = "inbox_search_tokens"

# The same expression as the index, so PostgreSQL can use it.
_PG_VECTOR = (
    "(to_tsvector('russian'::regconfig, {column}) || to_tsvector('simple'::regconfig, {column}))"
)
_PG_WORD = "(to_tsquery('russian'::regconfig, %s) || to_tsquery('simple'::regconfig, %s))"
_SQLITE_MATCH = "SELECT rowid FROM inbox_message_fts WHERE inbox_message_fts MATCH %s"


@lru_cache(maxsize=2)
def _stemmer(language: str) -> Any:
    return snowballstemmer.stemmer(language)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball stem of one lower-cased word: Russian for a Cyrillic word, English for a
    Latin one; a Kazakh word, a number or a mixed token (an SKU) whole."""
    if _LATIN.fullmatch(word):
        return str(_stemmer("english").stemWord(word))
    if _CYRILLIC.fullmatch(word) and not _KAZAKH.intersection(word):
        return str(_stemmer("russian").stemWord(word))
    return word


def index_text(text: str | None) -> str:
    """What the SQLite index holds for a message: each word, followed by its stem where that
    differs, so a prefix of either matches."""
    tokens: list[str] = []
    for word in _WORD.findall((text or "").lower()):
        tokens.append(word)
        stemmed = stem(word)
        if stemmed != word:
            tokens.append(stemmed)
    return " ".join(tokens)


def register_sqlite_functions(raw: sqlite3.Connection) -> None:
    """The index triggers call `inbox_search_tokens(text)`: a connection without it cannot write
    messages, so every Django connection to SQLite gets it when it opens."""
    raw.create_function(SQLITE_FUNCTION, 1, index_text, deterministic=True)


def terms(query: str) -> list[str]:
    """The words of a query, lower-cased: what is matched, and what a hit highlights."""
    return [word.lower() for word in _WORD.findall(query)][:MAX_TERMS]


def _forms(word: str) -> list[str]:
    """The prefixes one query word matches: as typed, and its stem."""
    stemmed = stem(word)
    return [word] if stemmed == word else [word, stemmed]


class _PgTextMatches(Func):
    """`text` matches every word on PostgreSQL: the index's vector against, per word, its
    Russian-stemmed and its whole prefix. A `Func`, so the column is named as the query
    aliases it (inside a subquery too)."""

    output_field = BooleanField()

    def __init__(self, words: list[str]) -> None:
        super().__init__(F("text"))
        self.words = words

    def as_sql(
        self,
        compiler: SQLCompiler,
        connection: BaseDatabaseWrapper,
        function: str | None = None,
        template: str | None = None,
        arg_joiner: str | None = None,
        **extra_context: Any,
    ) -> tuple[str, tuple[str | int, ...]]:
        column, column_params = compiler.compile(self.source_expressions[0])
        vector = _PG_VECTOR.format(column=column)
        query = " && ".join([_PG_WORD] * len(self.words))
        # Only \w+ words reach to_tsquery, so its operators cannot be injected.
        words = [param for word in self.words for param in (f"{word}:*", f"{word}:*")]
        return f"{vector} @@ ({query})", (*column_params, *column_params, *words)


def _fts5_query(words: list[str]) -> str:
    # Each form quoted (FTS5 operators and column filters stay literal) and a prefix.
    groups = []
    for word in words:
        forms = ['"{}"*'.format(form.replace('"', '""')) for form in _forms(word)]
        groups.append(forms[0] if len(forms) == 1 else "(" + " OR ".join(forms) + ")")
    return " AND ".join(groups)


def matching_messages(messages: QuerySet[Message], query: str) -> QuerySet[Message]:
    """The messages among `messages` whose text matches every word of `query` (as a prefix of a
    word or of its stem), newest first; none for a query without words."""
    words = terms(query)
    if not words:
        return messages.none()
    vendor = connection.vendor
    if vendor == "postgresql":
        matched = messages.filter(_PgTextMatches(words))
    elif vendor == "sqlite":
        matched = messages.filter(pk__in=RawSQL(_SQLITE_MATCH, (_fts5_query(words),)))  # noqa: S611
    else:
        matched = messages
        for word in words:
            matched = matched.filter(text__icontains=word)
    return matched.order_by("-pk")


def _hit_test(words: list[str]) -> Callable[[str], bool]:
    """Whether a word of a message is one the query matched (the same rule as the index)."""
    prefixes = tuple({form for word in words for form in _forms(word)})

    def hit(token: str) -> bool:
        low = token.lower()
        return low.startswith(prefixes) or stem(low).startswith(prefixes)

    return hit


@dataclass(frozen=True)
class Segment:
    text: str
    hit: bool


def highlight(text: str, query: str, width: int = 160) -> list[Segment]:
    """An excerpt of `text` around the first matched word, split into plain and matched parts
    (the template escapes each part and marks the matched ones)."""
    words = terms(query)
    if not words:
        return [Segment(text[:width], False)]
    hit = _hit_test(words)
    first = next((found for found in _WORD.finditer(text) if hit(found.group())), None)
    start = max(0, (first.start() if first else 0) - width // 3)
    excerpt = text[start : start + width]
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + width < len(text) else ""
    segments: list[Segment] = [Segment(prefix, False)] if prefix else []
    cursor = 0
    for found in _WORD.finditer(excerpt):
        if not hit(found.group()):
            continue
        if found.start() > cursor:
            segments.append(Segment(excerpt[cursor : found.start()], False))
        segments.append(Segment(found.group(), True))
        cursor = found.end()
    if cursor < len(excerpt):
        segments.append(Segment(excerpt[cursor:], False))
    if suffix:
        segments.append(Segment(suffix, False))
    return segments
