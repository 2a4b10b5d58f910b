"""The ingest consumer and its floor in instructions per event, counted by valgrind.

    .venv/bin/python bench/consumer_instructions.py [--chats 1,100,1000] [--events 2000]

Process CPU on a shared machine moves by a fifth between runs minutes apart, more than most
changes to the consumer; an instruction count repeats to within 0.5 k an event whatever else
the machine does. For each kind (`product`: `IngestWorker`, the code `manage.py ingest_worker`
runs; `floor`: `bench/floor_consumer.py`'s loop) and each number of active chats, a child
process runs under `valgrind --tool=callgrind` twice: once draining `--events` events from its
stream after a warm-up, once filling the same events without draining them. The difference
over the events is what one event costs the consumer; start-up, the warm-up and making the
events cancel out. Both children freeze their start-up heap (the product's also sets its GC
threshold as `ingest_worker` does), so neither counts collections over Django. Needs valgrind
(Debian package), PostgreSQL and Redis (`DATABASE_URL`, `REDIS_URL`); a full run takes a few
minutes per figure (valgrind runs Python ~50 times slower).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

KINDS = ("product", "floor")


def _child(kind: str, chats: int, events: int, drain: bool) -> None:
    """What runs under valgrind: warm up, fill `events` events, drain them (or not)."""
    common.setup_django()
    from bench import floor_consumer
    from bench.ingest import _fill, consumer_events, ensure_channel, reset_redis
    from inbox.conversations import ingest
    from inbox.conversations.ingest.worker import IngestWorker
    from inbox.platform.redis import get_redis

    channel_id = ensure_channel()
    reset_redis()
    client = get_redis()
    client.unlink(floor_consumer.STREAM)
    nonce = f"{random.getrandbits(32):08x}"
    if kind == "product":
        stream = ingest.STREAM
        worker = IngestWorker(name="instructions", block_ms=10)

        def drain_all() -> None:
            while worker.step():
                pass

    else:
        import psycopg

        stream = floor_consumer.STREAM
        conn = psycopg.connect(os.environ["DATABASE_URL"], autocommit=True)
        floor_consumer.ensure(conn, client)

        def drain_all() -> None:
            while floor_consumer.step(conn, client, "instructions", 100, 10):
                pass

    _fill(stream, consumer_events(channel_id, 2 * chats + 200, chats, f"w{nonce}"))
    drain_all()
    # What this child loaded to make the events (Django, for both kinds) is frozen, so a full
    # collection does not walk it: `bench/floor_consumer.py` never loads Django, and
    # `manage.py ingest_worker` freezes it too and sets its young-collection threshold.
    gc.collect()
    gc.freeze()
    if kind == "product":
        gc.set_threshold(20_000, 20, 20)
    _fill(stream, consumer_events(channel_id, events, chats, nonce))
    if drain:
        drain_all()


def _instructions(kind: str, chats: int, events: int, drain: bool, tmp: Path) -> int:
    out = tmp / f"callgrind.{kind}.{chats}.{int(drain)}"
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", kind, "--chats", str(chats),
            "--events", str(events)] + ([] if drain else ["--no-drain"])  # fmt: skip
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *argv],
        env=env, capture_output=True, text=True, check=True, cwd=common.ROOT,
    )  # fmt: skip
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise RuntimeError(f"no instruction count from valgrind:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def measure(kinds: list[str], chats_list: list[int], events: int) -> dict[str, Any]:
    result: dict[str, Any] = {"events": events, "by_chats": {}}
    with tempfile.TemporaryDirectory(prefix="instructions-") as tmp:
        for chats in chats_list:
            row: dict[str, Any] = {}
            for kind in kinds:
                drained = _instructions(kind, chats, events, True, Path(tmp))
                filled = _instructions(kind, chats, events, False, Path(tmp))
                row[kind] = round((drained - filled) / events / 1000, 1)  # k per event
            if "product" in row and "floor" in row:
                row["ratio_to_floor"] = round(row["floor"] / row["product"], 3)
            result["by_chats"][str(chats)] = row
            figures = "  ".join(f"{k} {v}" for k, v in row.items())
            print(f"  {chats:>5} chats  {figures}", flush=True)
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--chats", default="1,100,1000", help="active chats per figure")
    p.add_argument("--events", type=int, default=2000)
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    p.add_argument("--no-drain", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args.child, int(args.chats), args.events, not args.no_drain)
        return 0
    if shutil.which("valgrind") is None:
        p.error("valgrind is not installed (Debian package valgrind)")
    common.setup_django()
    common.migrate()
    kinds = [k for k in args.kinds.split(",") if k]
    result = measure(kinds, [int(c) for c in args.chats.split(",") if c], args.events)
    print(json.dumps(result))
    if args.out:
        common.write_json(args.out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
