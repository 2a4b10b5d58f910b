"""Dashboard fan-out: inbound messages to N open dashboards, from webhook to socket.

    .venv/bin/python bench/fanout.py [--clients 10,100,500] [--mode auto|product|layer] [--out F]

Real processes: daphne serving the websockets and the webhook server taking the webhooks, as
deployed (`--webhook-server own`, `inbox.site.webhook_server`; `daphne`: the webhooks on the
sockets' daphne too, as `make run` serves them), the ingest consumer storing
each message and publishing it through `inbox.web.live.realtime` over the channel layer (Redis
pub/sub). N websocket clients, all of one business, are open while signed Cloud API webhooks
arrive from bench/poster.py, a sender in a child process (`--sender inline`: httpx in this
process's event loop, as before):
  steady: `--rate` messages/s for `--seconds`;  bursty: `--bursts` bursts of `--burst-size`
  messages sent at once, one second apart.
Every client must receive every message in a `message.changed` event (one event carries all the
messages of a chat that one ingest batch stored). Reported per N and pattern:
delivered events/s, events lost (must be 0), p50/p99 from the webhook POST to the socket, where
that time goes (the webhook's answer; POST → the row's created_at; created_at → each socket),
and the CPU seconds the server, the consumer, the sender and the clients (this process) spent.

Modes: `product` connects to the dashboard's own consumer (`/ws/inbox/` in inbox.site.asgi, session
login, Origin check); `layer` serves bench/fanout_app.py, a stand-in that keeps that consumer's
group/forwarding contract, for a tree where the dashboard consumer is not there yet. `auto`
picks `product` when `inbox.site.routing` exists.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import json
import random
import re
import sys
import time
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench import common, ingest, poster

PHONE_NUMBER_ID = "190000000000005"
APP_SECRET = "bench-fanout-secret"
CUSTOMERS = 50  # the messages go round this many customers' chats


# The ids of a `message.changed` event, as the server's json.dumps writes them. Inside a JSON
# string every quote is escaped, so neither pattern can match customer text or fragment HTML.
MESSAGE_IDS = re.compile(r'"message_ids": \[([0-9, ]*)\]')
MESSAGE_CHANGED = '"event": "message.changed"'


class CpuMeter(Protocol):
    def cpu_seconds(self) -> float: ...


class Client:
    """One open dashboard: records when each message's event arrived.

    All N clients share this process and its CPU with the servers under test, so only the
    first client of a level decodes every frame as the page does (`full`); the others take
    the message ids out of the frame's text and decode it only when that does not account for
    every `message.changed` in it. Decoding 500 copies of each frame's HTML was the largest CPU
    cost of the 500-client levels, and it delayed the very arrival times being measured."""

    def __init__(self, *, full: bool = False) -> None:
        self.full = full
        self.received: dict[int, float] = {}
        self.ready = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.error = ""

    async def run(self, url: str, headers: dict[str, str]) -> None:
        import websockets

        try:
            async with websockets.connect(url, additional_headers=headers, max_queue=None,
                                          open_timeout=60, ping_interval=None) as ws:  # fmt: skip
                async for raw in ws:
                    now = time.time()
                    if not self.full and self.take_ids(raw, now):
                        continue
                    decoded = json.loads(raw)
                    # A socket behind by a burst gets one frame of many events (in order).
                    for message in decoded.get("events") or [decoded]:
                        self.take(message, now)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a dropped socket is a result (lost events), not a crash
            self.error = f"{type(exc).__name__}: {exc}"[:200]
            self.ready.set()

    def take_ids(self, raw: str | bytes, now: float) -> bool:
        """The frame's message ids without decoding it; False where it must be decoded."""
        if not isinstance(raw, str):
            return False
        found = MESSAGE_IDS.findall(raw)
        if not found or len(found) != raw.count(MESSAGE_CHANGED):
            return False
        for ids in found:
            for mid in ids.split(","):
                self.received.setdefault(int(mid), now)
        return True

    def take(self, message: dict[str, Any], now: float) -> None:
        kind = message.get("type")
        if kind == "hello":
            self.ready.set()
        elif kind == "event" and message.get("event") == "message.changed":
            # One push carries every message of a chat that one batch stored.
            data = message.get("data") or {}
            for mid in data.get("message_ids") or [data.get("message_id")]:
                if mid is not None:
                    self.received.setdefault(int(mid), now)


def product_headers(business: Any, base_url: str) -> dict[str, str]:
    """A manager's session cookie and a same-site Origin, as a browser tab sends them."""
    from django.contrib.auth import get_user_model
    from django.test import Client as DjangoClient

    from inbox.conversations.models import Membership

    user, _ = get_user_model().objects.get_or_create(username="bench-fanout-manager")
    Membership.objects.get_or_create(user=user, business=business,
                                     defaults={"role": Membership.Role.MANAGER})  # fmt: skip
    browser = DjangoClient()
    browser.force_login(user)
    return {"Cookie": f"sessionid={browser.cookies['sessionid'].value}", "Origin": base_url}


async def one_level(ws_url: str, headers: dict[str, str], webhook: str,
                    sender: poster.Poster | None, n: int, pattern: str, args: argparse.Namespace,
                    procs: dict[str, CpuMeter]) -> dict[str, Any]:  # fmt: skip
    from tests.emulators.graph_api import sign

    clients = [Client(full=i == 0) for i in range(n)]
    for start in range(0, n, 50):  # connect in waves: a 500-socket thundering herd is its own test
        for client in clients[start : start + 50]:
            client.task = asyncio.create_task(client.run(ws_url, headers))
        await asyncio.wait_for(
            asyncio.gather(*(c.ready.wait() for c in clients[start : start + 50])), 120
        )
    connected = sum(1 for c in clients if not c.error)
    cpu_before = _cpu(procs)
    nonce = f"{random.getrandbits(40):010x}"
    if pattern == "steady":
        total = int(args.rate * args.seconds)
        offsets = [i / args.rate for i in range(total)]
    else:
        total = args.bursts * args.burst_size
        offsets = [float(i // args.burst_size) for i in range(total)]
    plan_bodies = []
    for index in range(total):
        body = ingest.webhook_body(nonce, index, CUSTOMERS, PHONE_NUMBER_ID)
        wamid = json.loads(body)["entry"][0]["changes"][0]["value"]["messages"][0]["id"]
        headers_ = {"Content-Type": "application/json",
                    "X-Hub-Signature-256": sign(APP_SECRET, body)}  # fmt: skip
        plan_bodies.append((offsets[index], wamid, body, headers_))
    first = time.time() + 0.3  # the sender's connections open before the first is due
    split = urlsplit(webhook)
    address = (split.hostname or "127.0.0.1", split.port or 80, split.path)
    if sender is None:
        sent = await _post_inline(webhook, first, plan_bodies)
    else:
        plan = [(first + offset, wamid, poster.request_bytes(*address, body, headers_))
                for offset, wamid, body, headers_ in plan_bodies]  # fmt: skip
        sent = await asyncio.to_thread(sender.send, plan, args.timeout)
    sent_at = sent.sent_at
    answered = list(sent.answer_s.values())
    statuses = [sent.status.get(wamid, 0) for wamid in sent_at]
    wamids = list(sent_at)
    ids = await asyncio.to_thread(_message_ids, wamids, args.timeout)
    expected = {mid: sent_at[w] for w, mid in ids.items()}
    stored_at = await asyncio.to_thread(_stored_at, list(expected))

    def all_delivered() -> bool:
        # Counting first: the full check costs N × messages look-ups, and it runs in the loop
        # that stamps the clients' arrival times.
        if sum(len(c.received) for c in clients) < len(expected) * n:
            return False
        return all(mid in c.received for c in clients for mid in expected)

    deadline = time.time() + args.timeout
    while not all_delivered() and time.time() < deadline:  # noqa: ASYNC110 - polls N clients
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.2)
    cpu = {name: round(after - cpu_before[name], 2) for name, after in _cpu(procs).items()}
    for client in clients:
        if client.task is not None:
            client.task.cancel()
    await asyncio.gather(*(c.task for c in clients if c.task), return_exceptions=True)
    latencies = [c.received[mid] - t for c in clients for mid, t in expected.items()
                 if mid in c.received]  # fmt: skip
    got = len(latencies)
    to_stored = [stored_at[mid] - t for mid, t in expected.items() if mid in stored_at]
    to_socket = [c.received[mid] - stored_at[mid] for c in clients for mid in expected
                 if mid in c.received and mid in stored_at]  # fmt: skip
    last = max((c.received[mid] for c in clients for mid in expected if mid in c.received),
               default=first)  # fmt: skip
    return {
        "clients": n,
        "connected": connected,
        "pattern": pattern,
        "messages": total,
        "webhooks_not_200": sum(1 for s in statuses if s != 200),
        "stored": len(ids),
        "expected_deliveries": len(expected) * n,
        "delivered": got,
        "lost": len(expected) * n - got + (total - len(ids)) * n,
        "delivered_per_s": round(got / (last - first), 1) if last > first else None,
        "p50_ms": common.pct_ms(latencies, 50),
        "p99_ms": common.pct_ms(latencies, 99),
        "max_ms": common.ms(max(latencies)) if latencies else None,
        # Where the time goes: the webhook's answer, POST → the row's created_at (the webhook,
        # the stream and the consumer's batch), and created_at → each socket (the commit, the
        # push and the server's sends).
        "webhook_answer_p50_ms": common.pct_ms(answered, 50),
        "to_stored_p50_ms": common.pct_ms(to_stored, 50),
        "to_stored_p99_ms": common.pct_ms(to_stored, 99),
        "stored_to_socket_p50_ms": common.pct_ms(to_socket, 50),
        "stored_to_socket_p99_ms": common.pct_ms(to_socket, 99),
        "client_errors": sorted({c.error for c in clients if c.error})[:3],
        "cpu_s": cpu,
    }


async def _post_inline(
    webhook: str, first: float, plan: list[tuple[float, str, bytes, dict[str, str]]]
) -> poster.Sent:
    """The same plan sent with httpx from this event loop (`--sender inline`): the client's own
    cost then lands in the loop that stamps the sockets' arrivals (bench/poster.py says why
    that is not the default)."""
    sent = poster.Sent({}, {}, {})
    async with httpx.AsyncClient(timeout=30) as http:

        async def post(wamid: str, body: bytes, headers: dict[str, str]) -> None:
            sent.sent_at[wamid] = time.time()
            response = await http.post(webhook, content=body, headers=headers)
            sent.answer_s[wamid] = time.time() - sent.sent_at[wamid]
            sent.status[wamid] = response.status_code

        posts: list[asyncio.Task[None]] = []
        for offset, wamid, body, headers in plan:
            await asyncio.sleep(max(0.0, first + offset - time.time()))
            posts.append(asyncio.create_task(post(wamid, body, headers)))
        await asyncio.gather(*posts)
    return sent


def _cpu(procs: dict[str, CpuMeter]) -> dict[str, float]:
    """CPU seconds so far of the server, the consumer and this process (the N clients): on a
    shared machine the figure that says who did the work, where wall-clock latency cannot."""
    return {**{name: proc.cpu_seconds() for name, proc in procs.items()},
            "clients": time.process_time()}  # fmt: skip


async def warm_up(webhook: str, n: int, wait_s: float) -> None:
    """One message per customer before any level is measured: every level then finds its chats
    stored and the processes warm, instead of the first one paying for both."""
    from tests.emulators.graph_api import sign

    nonce = f"warm{random.getrandbits(32):08x}"
    wamids = []
    async with httpx.AsyncClient(timeout=30) as http:
        for index in range(n):
            body = ingest.webhook_body(nonce, index, n, PHONE_NUMBER_ID)
            payload = json.loads(body)
            wamids.append(payload["entry"][0]["changes"][0]["value"]["messages"][0]["id"])
            await http.post(webhook, content=body, headers={
                "Content-Type": "application/json",
                "X-Hub-Signature-256": sign(APP_SECRET, body)})  # fmt: skip
    await asyncio.to_thread(_message_ids, wamids, wait_s)


def _stored_at(ids: list[int]) -> dict[int, float]:
    from inbox.conversations.models import Message

    rows = Message.objects.filter(pk__in=ids).values_list("pk", "created_at")
    return {pk: created.timestamp() for pk, created in rows}


def _message_ids(wamids: list[str], timeout: float) -> dict[str, int]:
    from inbox.conversations.models import Message

    def stored() -> dict[str, int]:
        rows = Message.objects.filter(provider_message_id__in=wamids)
        return dict(rows.values_list("provider_message_id", "pk"))

    try:
        return common.wait_until(lambda: len(stored()) == len(wamids) and stored(), timeout,
                                 "the messages to be stored", 0.1)  # fmt: skip
    except TimeoutError:
        return stored()


def run(args: argparse.Namespace) -> dict[str, Any]:
    common.setup_django()
    if not args.no_migrate:
        common.migrate()
    from inbox.conversations.models import Business

    mode = args.mode
    if mode == "auto":
        mode = "product" if importlib.util.find_spec("inbox.site.routing") else "layer"
    business, _ = Business.objects.get_or_create(name="Benchmark fan-out")
    from bench import fixtures

    fixtures.cloud_channel(business, PHONE_NUMBER_ID, debounce_seconds=60.0)
    env = common.subprocess_env(WHATSAPP_APP_SECRET=APP_SECRET, LOG_LEVEL="WARNING")
    app = "inbox.site.asgi:application" if mode == "product" else "bench.fanout_app:application"
    server, base_url = common.start_server("daphne", app, env, name=f"fanout-{mode}")
    hook_server = None
    hook_url = base_url
    if args.webhook_server == "own" and mode == "product":
        port = common.free_port()
        hook_server = common.start(
            "fanout-hooks",
            [sys.executable, "-m", "inbox.site.webhook_server", "-p", str(port),
             "--no-access-log"],
            env,
        )  # fmt: skip
        common.wait_listening(hook_server, port)
        hook_url = f"http://127.0.0.1:{port}"
    elif args.webhook_server == "own":  # a tree without the webhook server: the app on uvicorn
        hook_server, hook_url = common.start_server("uvicorn", app, env, name="fanout-hooks")
    consumer = common.start("fanout-ingest", [sys.executable, "manage.py", "ingest_worker"], env)
    levels = []
    try:
        if mode == "product":
            headers = product_headers(business, base_url)
            ws_url = base_url.replace("http://", "ws://") + "/ws/inbox/"
        else:
            headers = {}
            ws_url = base_url.replace("http://", "ws://") + f"/ws/inbox/?business={business.pk}"
        webhook = f"{hook_url}/webhooks/whatsapp/"
        if args.warmup:
            asyncio.run(warm_up(webhook, args.warmup, args.timeout))
        split = urlsplit(webhook)
        sender = None
        if args.sender == "process":
            sender = poster.Poster(split.hostname or "127.0.0.1", split.port or 80,
                                   connections=args.burst_size)  # fmt: skip
        # This process stamps every arrival: a full collection walking Django's heap here
        # (105-112 ms, seen with gc.callbacks) would be counted as every client's latency.
        gc.collect()
        gc.freeze()
        for n in [int(c) for c in args.clients.split(",") if c.strip()]:
            for pattern in ("steady", "bursty"):
                procs: dict[str, CpuMeter] = {"server": server, "consumer": consumer}
                if hook_server is not None:
                    procs["webhooks"] = hook_server
                if sender is not None:
                    procs["sender"] = sender
                level = asyncio.run(
                    one_level(ws_url, headers, webhook, sender, n, pattern, args, procs)
                )
                levels.append(level)
                print(
                    f"  {n:>4} clients {pattern:7} {level['delivered_per_s']} events/s  lost "
                    f"{level['lost']}  p50 {level['p50_ms']} ms  p99 {level['p99_ms']} ms  (answer "
                    f"{level['webhook_answer_p50_ms']}, stored {level['to_stored_p50_ms']}/"
                    f"{level['to_stored_p99_ms']}, to socket {level['stored_to_socket_p50_ms']}/"
                    f"{level['stored_to_socket_p99_ms']})  cpu s "
                    + " ".join(f"{k} {v}" for k, v in level["cpu_s"].items())
                    + (f"  errors {level['client_errors']}" if level["client_errors"] else ""),
                    flush=True,
                )
    finally:
        if sender is not None:
            sender.close()
        consumer.stop()
        server.stop()
        if hook_server is not None:
            hook_server.stop()
        ingest.reset_redis()
    return {
        "mode": mode,
        "server": "daphne",
        "webhook_server": args.webhook_server,
        "sender": args.sender,
        "p99_ms": {f"{lv['clients']}_{lv['pattern']}": lv["p99_ms"] for lv in levels},
        "lost": sum(lv["lost"] for lv in levels),
        "levels": levels,
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--clients", default="10,100,500")
    p.add_argument("--mode", choices=["auto", "product", "layer"], default="auto")
    p.add_argument("--rate", type=float, default=20.0, help="steady: messages per second")
    p.add_argument("--seconds", type=float, default=5.0, help="steady: how long")
    p.add_argument("--bursts", type=int, default=5)
    p.add_argument("--burst-size", type=int, default=20)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--warmup", type=int, default=CUSTOMERS,
                   help="messages sent before the first level (one per chat)")  # fmt: skip
    p.add_argument("--sender", choices=["process", "inline"], default="process",
                   help="process: bench/poster.py in a child process; inline: httpx in the "
                   "clients' event loop")  # fmt: skip
    p.add_argument("--webhook-server", choices=["own", "daphne"], default="own",
                   help="own: the webhook server, as deployed; daphne: the sockets' "
                   "daphne")  # fmt: skip
    p.add_argument("--no-migrate", action="store_true")
    p.add_argument("--out", type=Path, default=None)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result = run(args)
    if args.out:
        common.write_json(args.out, result)
    print(json.dumps({"mode": result["mode"], "p99_ms": result["p99_ms"], "lost": result["lost"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
