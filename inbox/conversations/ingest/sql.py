"""The ingest consumer's statements per batch, on PostgreSQL: lock the chats, then insert the
customer messages and write the chats' counters in one statement.

Each is one fixed statement whose rows travel as one JSON parameter (`jsonb_to_recordset`),
bound on the server, so a batch of a hundred events costs two round trips (three when a
message was stored already: its chat's counters follow in `save_counters`) and no SQL is
built or quoted per batch in Python. Django's `bulk_create` spent more time compiling 28
columns per row than the database spent storing them (docs/performance.md). The column lists
come from the models (`_meta`), and the columns a customer message leaves at their defaults
take the model field's default, so the models stay the one place those are defined.

SQLite (the embedded default) has no arrays and no row locks; there `chats` and `messages` do
the same through Django. Everything here runs on the connection Django holds, inside its
transaction.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from functools import cache
from operator import attrgetter
from typing import Any, TypeVar

import orjson
import psycopg
from django.db import connection
from django.db.models import Field, Model, signals
from django.db.models.base import ModelState
from psycopg.types.json import Jsonb

from inbox.conversations.models import Channel, Chat, Message

ChatKey = tuple[int, str]
M = TypeVar("M", bound=Model)

# The columns a plain customer message sets (`messages._message_columns`), with their array types.
# Every other column of the message table gets its model default.
CUSTOMER_MESSAGE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("chat_id", "bigint"),
    ("channel_id", "bigint"),
    ("direction", "text"),
    ("author", "text"),
    ("from_me", "boolean"),
    ("kind", "text"),
    ("text", "text"),
    ("provider_message_id", "text"),
    ("provider_timestamp", "timestamptz"),
    ("status", "text"),
    ("payload", "jsonb"),
    ("media_ref", "text"),
    ("media_mime", "text"),
    ("media_sha256", "text"),
    ("media_filename", "text"),
    ("transcript_status", "text"),
)
COUNTER_COLUMNS: tuple[tuple[str, str], ...] = (
    ("version", "bigint"),
    ("customer_messages", "integer"),
    ("last_customer_at", "timestamptz"),
    ("last_message_at", "timestamptz"),
    ("window_closes_at", "timestamptz"),
)


def available() -> bool:
    """Whether the connection is PostgreSQL (else the caller takes the Django path)."""
    return connection.vendor == "postgresql"


def _cursor() -> Any:
    """A cursor that binds parameters on the server, on Django's own connection and wrapped
    as Django wraps its own (errors as Django's, queries logged where Django logs them).
    Django's cursors bind on the client: every value quoted into the SQL text in Python.

    Results come in binary: Django loads a text `timestamptz` with a Python loader (its
    time-zone hook), 15 µs a value; the binary one is psycopg's C loader, in the session's
    time zone (UTC, as Django sets it). Statements are prepared only where the connection
    prepares (Django's `prepare_threshold` option: off by default, for connection poolers)."""
    connection.ensure_connection()
    raw = connection.connection
    assert raw is not None
    cursor: Any = psycopg.Cursor(raw)  # Django's wrappers are typed for its own cursors
    cursor.format = psycopg.pq.Format.BINARY
    if connection.queries_logged:
        return connection.make_debug_cursor(cursor)
    return connection.make_cursor(cursor)


def _quote(name: str) -> str:
    return connection.ops.quote_name(name)


def _fields(model: type[Chat] | type[Message]) -> list[Field[Any, Any]]:
    return list(model._meta.concrete_fields)


def _column(field: Field[Any, Any]) -> str:
    column = field.column
    assert column is not None  # a concrete field always has one
    return column


@cache
def _lock_chats_sql() -> str:
    table = _quote(Chat._meta.db_table)
    columns = ", ".join(f"c.{_quote(_column(f))}" for f in _fields(Chat))
    return (
        f"SELECT {columns} FROM {table} AS c "  # noqa: S608 - names from _meta, not input
        "JOIN jsonb_array_elements(%s::jsonb) AS k(key) "
        "ON c.channel_id = (k.key->>0)::bigint AND c.customer_key = k.key->>1 "
        "ORDER BY c.channel_id, c.customer_key FOR UPDATE OF c"
    )


def lock_chats(keys: Sequence[ChatKey], channels: Mapping[int, Channel]) -> dict[ChatKey, Chat]:
    """The chats of `keys` that exist, each row locked until the transaction ends, taken in
    (channel, customer) order so that consumers never deadlock on them. The chats are loaded
    as Django would load them (`Model.from_db`), each with its channel from `channels` (by
    id, where given); the assignee loads when read."""
    if not keys:
        return {}
    names = [f.attname for f in _fields(Chat)]
    with _cursor() as cursor:
        # The keys as [channel, customer] pairs: no dict per chat to build and encode.
        cursor.execute(_lock_chats_sql(), [_json(keys)])
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    related: list[dict[str, Model]] = [
        {"channel": channels[row["channel_id"]]} if row["channel_id"] in channels else {}
        for row in rows
    ]
    return {(chat.channel_id, chat.customer_key): chat for chat in loaded(Chat, rows, related)}


def loaded(
    model: type[M],
    rows: Sequence[dict[str, Any]],
    related: Sequence[dict[str, Model]] | None = None,
) -> list[M]:
    """Instances of `model` as `Model.from_db` makes them from rows (attname → value, every
    concrete field, converted already), without the per-field `__init__`: a third of the
    cost for a 30-column row, paid once per stored message and locked chat. Each row dict
    becomes its instance's `__dict__`, not copied: the caller hands over fresh dicts.
    `related`: per row, the objects its foreign keys point to, by field name, as
    `select_related` leaves them (the dict becomes the instance's cache:
    `Field.set_cached_value` without its two look-ups). A model with `pre_init`/`post_init`
    receivers (none of ours has) goes through `from_db`."""
    db = connection.alias
    if signals.pre_init.has_listeners(model) or signals.post_init.has_listeners(model):
        out = [model.from_db(db, list(row), list(row.values())) for row in rows]
    else:
        out = []
        new = model.__new__
        for row in rows:
            instance = new(model)
            instance.__dict__ = row
            state = ModelState()
            state.adding = False
            state.db = db
            row["_state"] = state
            out.append(instance)
    if related is not None:
        for instance, objects in zip(out, related, strict=True):
            instance._state.fields_cache = objects
    return out


@cache
def _defaults() -> tuple[list[tuple[str, str]], list[Any]]:
    """The message columns a customer message leaves at their model defaults, and those
    defaults as the database takes them."""
    given = {name for name, _type in CUSTOMER_MESSAGE_COLUMNS} | {"id", "created_at"}
    columns, values = [], []
    for field in _fields(Message):
        if _column(field) in given:
            continue
        value = field.get_db_prep_save(field.get_default(), connection)
        columns.append((_column(field), field.db_type(connection) or "text"))
        values.append(value.value if isinstance(value, enum.Enum) else value)
    return columns, values


@cache
def _insert_sql() -> str:
    table = _quote(Message._meta.db_table)
    default_columns, _values = _defaults()
    given = [name for name, _type in CUSTOMER_MESSAGE_COLUMNS]
    columns = ", ".join(
        _quote(c) for c in [*given, "created_at", *(c for c, _t in default_columns)]
    )
    record = ", ".join(f"{name} {sql_type}" for name, sql_type in CUSTOMER_MESSAGE_COLUMNS)
    # Typed: a bare parameter in a SELECT list would be taken as text.
    constants = "".join(f", %s::{sql_type}" for _c, sql_type in default_columns)
    # The partial unique index on (channel, provider id) decides a duplicate: one already
    # stored, or one another consumer inserts at the same moment (it waits for that commit).
    return (
        f"INSERT INTO {table} ({columns}) "  # noqa: S608 - names from _meta, not input
        f"SELECT v.*, %s::timestamptz{constants} "
        f"FROM jsonb_to_recordset(%s::jsonb) AS v({record}) "
        "ON CONFLICT (channel_id, provider_message_id) WHERE provider_message_id <> '' "
        "DO NOTHING RETURNING id, channel_id, provider_message_id, chat_id"
    )


@cache
def _insert_counting_sql() -> str:
    """The insert, and in the same statement the counters of each chat every one of whose
    rows it stored (a round trip fewer per batch than `save_counters` after it). A chat with a
    row stored already keeps its counters: the caller writes them from what was stored."""
    table = _quote(Chat._meta.db_table)
    assignments = ", ".join(
        f"{_quote(name)} = (v.r->>{n})::{sql_type}"
        for n, (name, sql_type) in enumerate(COUNTER_COLUMNS, start=1)
    )
    expected = len(COUNTER_COLUMNS) + 1  # each chat's array: [id, *counters, its rows]
    return (
        f"WITH ins AS ({_insert_sql()}), "  # noqa: S608 - names from _meta, not input
        "stored AS (SELECT chat_id, count(*) AS n FROM ins GROUP BY chat_id), "
        f"upd AS (UPDATE {table} AS c SET {assignments} "
        "FROM jsonb_array_elements(%s::jsonb) AS v(r) "
        "JOIN stored ON stored.chat_id = (v.r->>0)::bigint "
        f"WHERE c.id = stored.chat_id AND stored.n = (v.r->>{expected})::bigint RETURNING c.id) "
        "SELECT id, channel_id, provider_message_id, NULL::bigint FROM ins "
        "UNION ALL SELECT NULL, NULL, NULL, id FROM upd"
    )


def _iso(value: object) -> str:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _dumps(rows: Any) -> bytes | str:
    try:
        return orjson.dumps(rows)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(rows, ensure_ascii=False, separators=(",", ":"), default=_iso)


def _json(rows: Sequence[Any]) -> Jsonb:
    """Rows as one JSON document for `jsonb_to_recordset`: one parameter, instead of an array
    of Python objects per column for the driver to adapt. orjson writes it (0.4 µs a message
    row against 3.3 for the standard library), as the UTF-8 bytes the driver sends: a str
    would be decoded from them and encoded again, 6 k instructions an event for a customer
    writing in Cyrillic. What orjson refuses (an integer beyond 64 bits in a payload) goes
    through the standard library, so no event fails over its encoder."""
    return Jsonb(rows, dumps=_dumps)


def insert_customer_messages(
    rows: Sequence[dict[str, Any]], at: datetime, counters: Sequence[Sequence[Any]] = ()
) -> tuple[dict[tuple[int, str], int], set[int]]:
    """Insert plain customer messages (each a dict of `CUSTOMER_MESSAGE_COLUMNS`; no two with
    the same channel and provider id, none with an empty one), created `at`, in one statement.
    Returns (channel, provider id) → new message id for those stored (a message stored
    already is left out), and the chats whose counters the statement wrote.

    `counters`: per chat of the rows, [id, *`COUNTER_COLUMNS` values, how many of the rows
    are its]: the values it gets when all of its rows are stored, written in the same
    statement then. A chat with a row stored already is left alone (not in the set)."""
    if not rows:
        return {}, set()
    _columns, constants = _defaults()
    stored: dict[tuple[int, str], int] = {}
    counted: set[int] = set()
    with _cursor() as cursor:
        # Parameters in the order they appear in the text.
        if counters:
            cursor.execute(_insert_counting_sql(), [at, *constants, _json(rows), _json(counters)])
        else:
            cursor.execute(_insert_sql(), [at, *constants, _json(rows)])
        for pk, channel_id, provider_id, chat_id in cursor.fetchall():
            if pk is None:
                counted.add(chat_id)
            else:
                stored[(channel_id, provider_id)] = pk
    return stored, counted


@cache
def _counters_sql() -> str:
    table = _quote(Chat._meta.db_table)
    # Each chat is the array [id, *counters]: its values by position, cast to their types.
    assignments = ", ".join(
        f"{_quote(name)} = (v.r->>{n})::{sql_type}"
        for n, (name, sql_type) in enumerate(COUNTER_COLUMNS, start=1)
    )
    return (
        f"UPDATE {table} AS c SET {assignments} "  # noqa: S608 - names from _meta, not input
        "FROM jsonb_array_elements(%s::jsonb) AS v(r) WHERE c.id = (v.r->>0)::bigint"
    )


_counter_values = attrgetter("id", *(name for name, _type in COUNTER_COLUMNS))


def save_counters(chats: Sequence[Chat]) -> None:
    """Write the chats' counters (`COUNTER_COLUMNS`) in one statement, each chat one array
    (no dict per chat to build and encode: a batch touches up to a hundred)."""
    if not chats:
        return
    with _cursor() as cursor:
        cursor.execute(_counters_sql(), [_json([_counter_values(chat) for chat in chats])])
