"""Burst and debounce: N chats each send a burst of messages; each burst must be one turn.

    .venv/bin/python bench/burst.py [--chats 200] [--burst 3] [--gap 0.3] [--out FILE]

The whole pipeline runs as real processes: uvicorn serving the webhook, the ingest consumer,
a Celery worker running turns; the Graph API emulator delivers the signed webhooks and takes the
replies, the OpenAI-compatible emulator answers instantly. Each chat's burst is `--burst`
messages `--gap` seconds apart (several chats at once); the channel's debounce is `--debounce`
seconds. Reported: turns (must equal the number of chats), model calls (the emulator's count;
must equal the turns), replies sent, and the time from the last message of a burst to its reply.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, fixtures

PHONE_NUMBER_ID = "190000000000003"
APP_SECRET = "bench-burst-secret"
TOKEN = "bench-token"
BURST = [
    "hi",
    "how much is the Office chair Ergo 1, black",
    "and delivery to Almaty?",
    "my name is Aigerim",
    "I need two of them",
]


def wait_ready(graph: Any, procs: list[common.Proc], timeout: float = 90) -> None:
    """Before the clock starts: the Celery worker has announced itself and one webhook went all
    the way through the consumer (process start-up would otherwise stretch the first bursts)."""
    from inbox.conversations.models import Message
    from inbox.platform.redis import get_redis
    from inbox.site.celery import HEARTBEAT_KEY
    from tests.emulators.graph_api import envelope, text_message

    client = get_redis()
    since = time.time() - 1
    common.wait_until(
        lambda: client.zrangebyscore(HEARTBEAT_KEY, since, "+inf"),
        timeout,
        "the Celery worker",
        0.2,
    )
    probe = text_message("77000000000", "probe")
    # A status-only webhook would not start a turn; a message to a human-owned chat neither.
    from inbox.conversations.models import Chat, Owner

    chat, _ = Chat.objects.get_or_create(
        channel__phone_number_id=PHONE_NUMBER_ID,
        customer_key="77000000000",
        defaults={"channel_id": _channel_id()},
    )
    Chat.objects.filter(pk=chat.pk).update(owner=Owner.HUMAN)
    assert graph.deliver(envelope(PHONE_NUMBER_ID, messages=[probe])) == 200
    common.wait_until(
        lambda: Message.objects.filter(provider_message_id=probe["id"]).exists(),
        timeout,
        "the ingest consumer",
        0.1,
    )
    for proc in procs:
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited: see {proc.log_path}")


def _channel_id() -> int:
    from inbox.conversations.models import Channel

    return int(Channel.objects.get(phone_number_id=PHONE_NUMBER_ID).pk)


def run(args: argparse.Namespace) -> dict[str, Any]:
    common.setup_django()
    if not args.no_migrate:
        common.migrate()
    from inbox.conversations.models import Chat, Turn
    from tests.emulators.graph_api import GraphApiEmulator, contact, envelope, sign, text_message
    from tests.emulators.openai_server import OpenAIEmulator
    from tests.processes import ingest_drained

    business = fixtures.business_with_prices("Benchmark furniture", args.items)
    channel = fixtures.cloud_channel(business, PHONE_NUMBER_ID, debounce_seconds=args.debounce)
    nonce = f"{int(time.time() * 1000) % 10**8:08d}"
    customers = [f"77{nonce}{n:03d}" for n in range(args.chats)]
    with GraphApiEmulator(app_secret=APP_SECRET) as graph, OpenAIEmulator() as llm:
        graph.register_number(PHONE_NUMBER_ID, TOKEN)
        env = common.subprocess_env(
            WHATSAPP_GRAPH_URL=graph.graph_url,
            LLM_BASE_URL=llm.base_url,
            LLM_MODEL="assistant",
            WHATSAPP_APP_SECRET=APP_SECRET,
            LOG_LEVEL="WARNING",
        )
        server, base_url = common.start_server(
            "uvicorn", "inbox.site.asgi:application", env, name="burst-uvicorn"
        )
        procs = [
            server,
            common.start("burst-ingest", [sys.executable, "manage.py", "ingest_worker"], env),
            common.start(
                "burst-worker",
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "inbox",
                    "worker",
                    "-Q",
                    "assistant",
                    "--concurrency",
                    str(args.worker_concurrency),
                    "--loglevel",
                    "WARNING",
                    "--without-gossip",
                    "--without-mingle",
                    "--hostname",
                    f"bench-burst-{nonce}@%h",
                ],
                env,
            ),
        ]
        graph.webhook_url = f"{base_url}/webhooks/whatsapp/"
        first_sent: dict[str, float] = {}
        last_sent: dict[str, float] = {}
        statuses: list[int] = []
        lock = threading.Lock()

        def burst(customer: str) -> None:
            for i in range(args.burst):
                if i:
                    time.sleep(args.gap)
                body = envelope(
                    PHONE_NUMBER_ID,
                    messages=[text_message(customer, BURST[i % len(BURST)])],
                    contacts=[contact(customer)],
                )
                if not i:
                    first_sent[customer] = time.time()
                raw = json.dumps(body).encode()
                response = http.post(
                    graph.webhook_url,
                    content=raw,
                    headers={
                        "Content-Type": "application/json",
                        "X-Hub-Signature-256": sign(APP_SECRET, raw),
                    },
                )
                status = response.status_code
                with lock:
                    statuses.append(status)
            last_sent[customer] = time.time()

        with common.running(procs):
            wait_ready(graph, procs)
            started = time.time()
            # One pooled client: a new httpx client per request costs more than the webhook.
            with (
                httpx.Client(timeout=30, limits=httpx.Limits(max_connections=args.senders)) as http,
                ThreadPoolExecutor(max_workers=args.senders) as pool,
            ):
                list(pool.map(burst, customers))
            sent_s = time.time() - started
            common.wait_until(ingest_drained, args.timeout, "every message to be stored", 0.1)

            def finished() -> int:
                return (
                    Turn.objects.filter(
                        chat__channel=channel,
                        chat__customer_key__in=customers,
                    )
                    .exclude(outcome=Turn.Outcome.RUNNING)
                    .count()
                )

            with contextlib.suppress(TimeoutError):  # too few turns is a result, not a crash
                common.wait_until(lambda: finished() >= args.chats, args.timeout, "the turns", 0.2)
            # Late extra turns would show up within a debounce period or two: wait that long.
            time.sleep(args.debounce * 2 + 1)
            wall_s = time.time() - started
        turns = list(Turn.objects.filter(chat__channel=channel, chat__customer_key__in=customers))
        replies = {c: graph.sent_to(c) for c in customers}
        model_calls = len(llm.chat_requests)
    chats = Chat.objects.filter(channel=channel, customer_key__in=customers).count()
    reply_latency = [replies[c][0].at - last_sent[c] for c in customers if replies[c]]
    outcomes: dict[str, int] = {}
    for turn in turns:
        outcomes[turn.outcome] = outcomes.get(turn.outcome, 0) + 1
    spans = [last_sent[c] - first_sent[c] for c in customers]
    per_chat: dict[int, int] = {}
    for turn in turns:
        per_chat[turn.chat_id] = per_chat.get(turn.chat_id, 0) + 1
    return {
        "chats": args.chats,
        "messages_per_burst": args.burst,
        "gap_s": args.gap,
        "debounce_s": args.debounce,
        "webhooks_sent": len(statuses),
        "webhooks_not_200": sum(1 for s in statuses if s != 200),
        "chats_created": chats,
        "turns": len(turns),
        "turns_expected": args.chats,
        "chats_with_more_than_one_turn": sum(1 for n in per_chat.values() if n > 1),
        "model_calls": model_calls,
        "replies_sent": sum(len(r) for r in replies.values()),
        "outcomes": outcomes,
        "reply_after_last_message_ms": {
            "p50": common.pct_ms(reply_latency, 50),
            "p95": common.pct_ms(reply_latency, 95),
            "max": common.ms(max(reply_latency)) if reply_latency else None,
        },
        # A burst that took longer than the debounce to arrive may rightly be two turns (the
        # first reply is then dropped as stale); the target assumes bursts inside the window.
        "burst_span_ms": {"p50": common.pct_ms(spans, 50), "max": common.ms(max(spans))},
        "bursts_longer_than_debounce": sum(1 for s in spans if s >= args.debounce),
        "send_phase_s": round(sent_s, 2),
        "wall_s": round(wall_s, 2),
        "ok": len(turns) == args.chats == model_calls
        and all(len(r) == 1 for r in replies.values()),
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--chats", type=int, default=200)
    p.add_argument("--burst", type=int, default=3, help="messages per burst")
    p.add_argument("--gap", type=float, default=0.3, help="seconds between a burst's messages")
    p.add_argument("--debounce", type=float, default=2.0, help="the channel's debounce seconds")
    p.add_argument("--senders", type=int, default=20, help="chats sending at once")
    p.add_argument("--worker-concurrency", type=int, default=2)
    p.add_argument("--items", type=int, default=300, help="price list items")
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--no-migrate", action="store_true")
    p.add_argument("--out", type=Path, default=None)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result = run(args)
    if args.out:
        common.write_json(args.out, result)
    print(
        json.dumps({k: result[k] for k in ("chats", "turns", "model_calls", "replies_sent", "ok")})
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
