"""The floor for the ingest consumer: the least a consumer can do per batch here.

Per batch it reads up to `--batch` entries (XREADGROUP), parses each event's JSON, stores them
with one multi-row `INSERT … ON CONFLICT DO NOTHING` into a plain table (unique channel +
provider id, the real table's dedup) in one transaction, then XACK + XDEL. No Django, no chats,
no hooks. Whatever `manage.py ingest_worker` costs above this on the same events is the
product's own work, so `bench/ingest.py` reports the consumer as a ratio to this process.

    python bench/floor_consumer.py --name floor-1   (DATABASE_URL: PostgreSQL, REDIS_URL)
"""

from __future__ import annotations

import argparse
import json
import os
import signal
from typing import Any

import psycopg
import redis

STREAM = "bench:floor:consumer"
GROUP = "floor"
TABLE = "bench_floor_message"

CREATE = f"""
CREATE TABLE IF NOT EXISTS {TABLE} (
    id bigserial PRIMARY KEY,
    channel_id integer NOT NULL,
    provider_message_id varchar(128) NOT NULL,
    chat_key varchar(128) NOT NULL,
    text text NOT NULL,
    payload jsonb NOT NULL,
    UNIQUE (channel_id, provider_message_id)
)
"""


def ensure(conn: psycopg.Connection[Any], client: redis.Redis) -> None:
    conn.execute(CREATE)
    conn.commit()
    try:
        client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" not in str(exc):
            raise


def store(conn: psycopg.Connection[Any], entries: list[tuple[Any, dict[bytes, bytes]]]) -> None:
    rows = []
    for _entry_id, fields in entries:
        event = json.loads(fields[b"e"])
        rows.append(
            (event["channel_id"], event["provider_message_id"], event["chat_key"],
             event.get("text", ""), json.dumps(event.get("extra") or {}))
        )  # fmt: skip
    values = ",".join(["(%s,%s,%s,%s,%s)"] * len(rows))
    params = [value for row in rows for value in row]
    with conn.transaction():
        conn.execute(
            f"INSERT INTO {TABLE} (channel_id, provider_message_id, chat_key, text, payload) "
            f"VALUES {values} ON CONFLICT DO NOTHING",
            params,
        )


def step(
    conn: psycopg.Connection[Any], client: redis.Redis, name: str, batch: int, block_ms: int
) -> int:
    """Read one batch, store it, acknowledge it; how many entries it held."""
    response: Any = client.xreadgroup(GROUP, name, {STREAM: ">"}, count=batch, block=block_ms)
    handled = 0
    for _stream, entries in response or []:
        store(conn, entries)
        ids = [entry_id for entry_id, _fields in entries]
        pipe = client.pipeline(transaction=True)
        pipe.xack(STREAM, GROUP, *ids)
        pipe.xdel(STREAM, *ids)
        pipe.execute()
        handled += len(entries)
    return handled


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--name", default="floor")
    p.add_argument("--batch", type=int, default=100)
    args = p.parse_args()
    url = os.environ["DATABASE_URL"]
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    stop = False

    def _stop(*_: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _stop)
    with psycopg.connect(url, autocommit=True) as conn:
        ensure(conn, client)
        while not stop:
            step(conn, client, args.name, args.batch, 200)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
