"""Full-text search over message text: one query function over two engines.

PostgreSQL (production) matches the Russian and English vectors of the text against the words
typed, each a prefix of a stem, through the GIN index made by migration
`0006_search_labels_canned` ("диваны" finds "диван"). SQLite (`make run`) matches prefixes of
the words in an FTS5 table the same migration keeps in step with triggers (no stemming).

Callers pass the messages a user may see (`inbox.conversations.access`); this module never
widens them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import connection
from django.db.models import BooleanField, QuerySet
from django.db.models.expressions import RawSQL

from inbox.conversations.models import Message

MAX_TERMS = 8
HIT_LIMIT = 30
_WORD = re.compile(r"\w+", re.UNICODE)

# The same expression as the index, so PostgreSQL can use it.
_PG_MATCH = (
    "(to_tsvector('russian'::regconfig, inbox_message.text) "
    "|| to_tsvector('english'::regconfig, inbox_message.text)) "
    "@@ (to_tsquery('russian'::regconfig, %s) || to_tsquery('english'::regconfig, %s))"
)
_SQLITE_MATCH = "SELECT rowid FROM inbox_message_fts WHERE inbox_message_fts MATCH %s"


def terms(query: str) -> list[str]:
    """The words of a query, lower-cased: what is matched, and what a hit highlights."""
    return [word.lower() for word in _WORD.findall(query)][:MAX_TERMS]


def _pg_query(words: list[str]) -> str:
    # Only \w+ words reach to_tsquery, so its operators cannot be injected.
    return " & ".join(f"{word}:*" for word in words)


def _fts5_query(words: list[str]) -> str:
    # Each word quoted (FTS5 operators and column filters stay literal) and a prefix.
    return " ".join('"{}"*'.format(word.replace('"', '""')) for word in words)


def matching_messages(messages: QuerySet[Message], query: str) -> QuerySet[Message]:
    """The messages among `messages` whose text matches every word of `query` (as a prefix),
    newest first; none for a query without words."""
    words = terms(query)
    if not words:
        return messages.none()
    vendor = connection.vendor
    if vendor == "postgresql":
        tsquery = _pg_query(words)
        # Constant SQL; the words travel as parameters.
        matched = messages.filter(RawSQL(_PG_MATCH, (tsquery, tsquery), BooleanField()))  # noqa: S611
    elif vendor == "sqlite":
        matched = messages.filter(pk__in=RawSQL(_SQLITE_MATCH, (_fts5_query(words),)))  # noqa: S611
    else:
        matched = messages
        for word in words:
            matched = matched.filter(text__icontains=word)
    return matched.order_by("-pk")


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
    stems = [word[: max(3, len(word) - 2)] for word in words]
    pattern = re.compile("|".join(re.escape(stem) + r"\w*" for stem in stems), re.IGNORECASE)
    first = pattern.search(text)
    start = max(0, (first.start() if first else 0) - width // 3)
    excerpt = text[start : start + width]
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + width < len(text) else ""
    segments: list[Segment] = [Segment(prefix, False)] if prefix else []
    cursor = 0
    for found in pattern.finditer(excerpt):
        if found.start() > cursor:
            segments.append(Segment(excerpt[cursor : found.start()], False))
        segments.append(Segment(found.group(), True))
        cursor = found.end()
    if cursor < len(excerpt):
        segments.append(Segment(excerpt[cursor:], False))
    if suffix:
        segments.append(Segment(suffix, False))
    return segments
