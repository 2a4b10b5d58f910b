"""Search that understands word forms (inbox/conversations/search.py reads what this builds).

PostgreSQL: the GIN index over the text's vectors becomes `russian` (Russian stems, English ones
for Latin words) plus `simple` (whole words: names, SKUs, Kazakh), the expression the search
writes. SQLite: the FTS5 table holds each word and its Snowball stem, written by triggers through
the `inbox_search_tokens` function, and is rebuilt for the messages already stored.
"""

from typing import Any

from django.db import migrations

PG_DROP = "DROP INDEX IF EXISTS inbox_message_text_search"
PG_STEMMED = (
    "CREATE INDEX IF NOT EXISTS inbox_message_text_search ON inbox_message USING GIN "
    "((to_tsvector('russian'::regconfig, text) || to_tsvector('simple'::regconfig, text)))"
)
PG_BEFORE = (
    "CREATE INDEX IF NOT EXISTS inbox_message_text_search ON inbox_message USING GIN "
    "((to_tsvector('russian'::regconfig, text) || to_tsvector('english'::regconfig, text)))"
)
SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS inbox_message_fts_insert",
    "DROP TRIGGER IF EXISTS inbox_message_fts_delete",
    "DROP TRIGGER IF EXISTS inbox_message_fts_update",
    "DROP TABLE IF EXISTS inbox_message_fts",
]


# The FTS5 table, filled from the stored messages, and its triggers: stemmed (this migration) and
# as migration 0006 left them (whole words, for going back).
_TABLE = (
    "CREATE VIRTUAL TABLE inbox_message_fts USING fts5("
    "text, tokenize = 'unicode61 remove_diacritics 2')"
)
_DELETE = (
    "CREATE TRIGGER inbox_message_fts_delete AFTER DELETE ON inbox_message "
    "BEGIN DELETE FROM inbox_message_fts WHERE rowid = old.id; END"
)
SQLITE_STEMMED = [
    _TABLE,
    "INSERT INTO inbox_message_fts(rowid, text) "
    "SELECT id, inbox_search_tokens(text) FROM inbox_message WHERE text != ''",
    "CREATE TRIGGER inbox_message_fts_insert AFTER INSERT ON inbox_message BEGIN "
    "INSERT INTO inbox_message_fts(rowid, text) VALUES (new.id, inbox_search_tokens(new.text)); "
    "END",
    _DELETE,
    "CREATE TRIGGER inbox_message_fts_update AFTER UPDATE OF text ON inbox_message BEGIN "
    "DELETE FROM inbox_message_fts WHERE rowid = old.id; "
    "INSERT INTO inbox_message_fts(rowid, text) VALUES (new.id, inbox_search_tokens(new.text)); "
    "END",
]
SQLITE_BEFORE = [
    _TABLE,
    "INSERT INTO inbox_message_fts(rowid, text) SELECT id, text FROM inbox_message "
    "WHERE text != ''",
    "CREATE TRIGGER inbox_message_fts_insert AFTER INSERT ON inbox_message "
    "BEGIN INSERT INTO inbox_message_fts(rowid, text) VALUES (new.id, new.text); END",
    _DELETE,
    "CREATE TRIGGER inbox_message_fts_update AFTER UPDATE OF text ON inbox_message "
    "BEGIN DELETE FROM inbox_message_fts WHERE rowid = old.id; "
    "INSERT INTO inbox_message_fts(rowid, text) VALUES (new.id, new.text); END",
]


def _rebuild(schema_editor: Any, pg_index: str, sqlite_create: list[str]) -> None:
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_DROP)
        schema_editor.execute(pg_index)
    elif vendor == "sqlite":
        from inbox.conversations import search

        schema_editor.connection.ensure_connection()
        search.register_sqlite_functions(schema_editor.connection.connection)
        for statement in SQLITE_DROP + sqlite_create:
            schema_editor.execute(statement)


def stemmed(apps: Any, schema_editor: Any) -> None:
    _rebuild(schema_editor, PG_STEMMED, SQLITE_STEMMED)


def unstemmed(apps: Any, schema_editor: Any) -> None:
    _rebuild(schema_editor, PG_BEFORE, SQLITE_BEFORE)


class Migration(migrations.Migration):

    dependencies = [
        ('inbox', '0015_channel_gateway_instance'),
    ]

    operations = [
        migrations.RunPython(stemmed, unstemmed),
    ]
