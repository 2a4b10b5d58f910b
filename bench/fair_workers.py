"""Fair workers: business B's bot turns while other businesses upload price lists without pause.

    .venv/bin/python bench/fair_workers.py [--turns 20] [--upload-every 1.5] [--out FILE]

Real processes in the topology of `make run`: a Celery worker on the `assistant` queue (the
turns, and on a thread the debounce scheduler) and one on the `bulk` queue (price-list parsing);
the model is the OpenAI-compatible emulator answering instantly, the transport the Cloud API
through the Graph API emulator. One turn of B at a time: a customer message stored, the chat's
debounce timer set (`--delay`), and the time from the timer's due moment to the reply reaching
the Graph emulator.

Phases, in one run, so each is a ratio to a floor measured on the same machine minutes apart:
- `floor`: B's turns with nothing else running.
- `uploads`: the same while the admins of `--uploaders` other businesses each submit a slow
  spreadsheet (a ~50 KB XLSX whose `--rows` × `--cells` cells take openpyxl seconds) every
  `--upload-every` seconds through the upload page's own path (`price_upload.submit`); each
  upload replaces the same business's one still being read.
- `shared_pool` (unless `--no-shared`): the same load with one pool for turns and parses (a
  worker on `assistant` and `bulk`), the topology before the split: what the benchmark detects.

Reported per phase: reply p50 / p95 / max ms after the timer is due, and the ratios of p50 and
p95 to the floor's; uploads submitted, parsed, replaced.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, fixtures

PHONE_NUMBER_ID = "190000000000046"
TOKEN = "bench-token"
TEXTS = [
    "How much is the Office chair Ergo 1, black?",
    "Do you deliver to Astana?",
    "Is the Sofa Loft 7 in stock?",
]


def slow_xlsx(rows: int, cells: int = 500, dimension: str | None = None) -> bytes:
    """A small XLSX (tens of KB) whose rows are wide: openpyxl reads every cell of every row,
    about 10 µs each on a shared core, so `rows` × `cells` sets how long a parse takes.
    `dimension` is the declared size (`A1:C1048576`); none is declared otherwise."""
    import openpyxl

    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["sku", "name", "price"])
    sheet.append(["T1", "Oak table", 100])
    plain = io.BytesIO()
    workbook.save(plain)
    filler = b"<row>" + b"<c><v>1</v></c>" * cells + b"</row>"
    declared = f'<dimension ref="{dimension}" />'.encode() if dimension else b""
    out = io.BytesIO()
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for member in src.infolist():
            raw = src.read(member.filename)
            if member.filename == "xl/worksheets/sheet1.xml":
                raw = raw.replace(b'<dimension ref="A1:C2" />', declared)
                raw = raw.replace(b"</sheetData>", filler * rows + b"</sheetData>")
            dst.writestr(member.filename, raw)
    return out.getvalue()


def worker(name: str, queues: str, concurrency: int, env: dict[str, str], nonce: str) -> Any:
    return common.start(
        f"fair-{name}",
        [sys.executable, "-m", "celery", "-A", "inbox", "worker", "-Q", queues,
         "--concurrency", str(concurrency), "--loglevel", "WARNING", "--without-gossip",
         "--without-mingle", "--hostname", f"bench-fair-{name}-{nonce}@%h"],
        env,
    )  # fmt: skip


def wait_workers(procs: list[Any], since: float, timeout: float = 90) -> None:
    """Every worker has announced itself (its heartbeat) after `since`."""
    from inbox.platform.redis import get_redis
    from inbox.site.celery import HEARTBEAT_KEY

    client = get_redis()

    def beating() -> bool:
        for proc in procs:
            if not proc.alive():
                raise RuntimeError(f"{proc.name} exited: see {proc.log_path}")
        return len(client.zrangebyscore(HEARTBEAT_KEY, since, "+inf")) >= len(procs)

    common.wait_until(beating, timeout, "the Celery workers", 0.2)


def one_turn(chat: Any, graph: Any, delay: float, n: int, timeout: float = 120) -> float:
    """Seconds from the chat's debounce timer being due to its reply at the Graph emulator."""
    from inbox.conversations import debounce

    fixtures.customer_message(chat, TEXTS[n % len(TEXTS)])
    before = len(graph.sent_to(chat.customer_key))
    due = time.time() + delay
    debounce.schedule(chat.pk, delay=delay)
    common.wait_until(
        lambda: len(graph.sent_to(chat.customer_key)) > before, timeout, f"reply {n}", 0.005
    )
    return float(graph.sent_to(chat.customer_key)[-1].at - due)


class Uploaders:
    """Admins of other businesses submitting a slow spreadsheet every few seconds each, from a
    thread, through price_upload.submit (what the upload page calls)."""

    def __init__(self, businesses: list[Any], users: list[Any], data: bytes, every: float):
        self.businesses, self.users, self.data, self.every = businesses, users, data, every
        self.stop_event = threading.Event()
        self.tokens: list[str] = []
        self.thread = threading.Thread(target=self._run, name="uploaders", daemon=True)

    def _run(self) -> None:
        from django.db import connection

        from assistant.knowledge import price_upload

        try:
            while not self.stop_event.is_set():
                for business, user in zip(self.businesses, self.users, strict=True):
                    self.tokens.append(price_upload.submit(
                        self.data, "slow.xlsx", "KZT", business_id=business.pk, channel_id=None,
                        user=user,
                    ))  # fmt: skip
                self.stop_event.wait(self.every)
        finally:
            connection.close()

    def __enter__(self) -> Uploaders:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        from assistant.knowledge import price_upload

        self.stop_event.set()
        self.thread.join(timeout=60)
        for token in self.tokens[-len(self.businesses) :]:
            price_upload.discard(token)  # stops the parses still running


def phase(
    name: str, chats: list[Any], graph: Any, args: argparse.Namespace, uploaders: Any = None
) -> dict[str, Any]:
    samples: list[float] = []
    with uploaders if uploaders is not None else contextlib.nullcontext():
        if uploaders is not None:
            time.sleep(args.upload_every * 2)  # the bulk pool busy before the clock starts
        for n, chat in enumerate(chats):
            samples.append(one_turn(chat, graph, args.delay, n))
    print(f"[fair_workers] {name}: p50 {common.pct_ms(samples, 50)} ms", flush=True)
    return {
        "turns": len(samples),
        "p50_ms": common.pct_ms(samples, 50),
        "p95_ms": common.pct_ms(samples, 95),
        "max_ms": common.ms(max(samples)) if samples else None,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    common.setup_django()
    if not args.no_migrate:
        common.migrate()
    from django.contrib.auth import get_user_model

    from assistant.knowledge import price_upload
    from inbox.conversations.models import Business, Job
    from tests.emulators.graph_api import GraphApiEmulator
    from tests.emulators.openai_server import OpenAIEmulator

    business = fixtures.business_with_prices("Benchmark furniture", args.items)
    channel = fixtures.cloud_channel(business, PHONE_NUMBER_ID, debounce_seconds=args.delay)
    nonce = f"{int(time.time() * 1000) % 10**9:09d}"
    uploading = [Business.objects.create(name=f"Bench uploader {nonce}-{n}")
                 for n in range(args.uploaders)]  # fmt: skip
    users = [get_user_model().objects.create_user(f"bench-uploader-{nonce}-{n}")
             for n in range(args.uploaders)]  # fmt: skip
    data = slow_xlsx(args.rows, args.cells)
    phases = ["floor", "uploads"] + ([] if args.no_shared else ["shared_pool"])
    chats = {
        name: [
            fixtures.chat_with_history(channel, f"77{i}{nonce}{n:03d}", args.history)
            for n in range(args.turns + args.warmup)
        ]
        for i, name in enumerate(phases)
    }
    results: dict[str, Any] = {}
    with GraphApiEmulator(app_secret="bench") as graph, OpenAIEmulator() as llm:
        graph.register_number(PHONE_NUMBER_ID, TOKEN)
        env = common.subprocess_env(
            WHATSAPP_GRAPH_URL=graph.graph_url,
            LLM_BASE_URL=llm.base_url,
            LLM_MODEL="assistant",
            LOG_LEVEL="WARNING",
        )
        since = time.time() - 1
        procs = [worker("assistant", "assistant", 2, env, nonce),
                 worker("bulk", "bulk", 1, env, nonce)]  # fmt: skip
        with common.running(procs):
            wait_workers(procs, since)
            for n, chat in enumerate(chats["floor"][: args.warmup]):
                one_turn(chat, graph, args.delay, n)
            results["floor"] = phase("floor", chats["floor"][args.warmup :], graph, args)
            load = Uploaders(uploading, users, data, args.upload_every)
            results["uploads"] = phase("uploads", chats["uploads"][args.warmup :], graph, args,
                                       load)  # fmt: skip
            uploads_split = len(load.tokens)
        if not args.no_shared:
            since = time.time() - 1
            shared = [worker("shared", "assistant,bulk", 2, env, nonce)]
            with common.running(shared):
                wait_workers(shared, since)
                for n, chat in enumerate(chats["shared_pool"][: args.warmup]):
                    one_turn(chat, graph, args.delay, n)
                load = Uploaders(uploading, users, data, args.upload_every)
                results["shared_pool"] = phase("shared_pool", chats["shared_pool"][args.warmup :],
                                               graph, args, load)  # fmt: skip
    jobs = Job.objects.filter(business__in=uploading, kind=Job.Kind.PRICE_IMPORT)
    floor = results["floor"]
    for name in phases[1:]:
        section = results[name]
        section["p50_ratio_to_floor"] = _ratio(section["p50_ms"], floor["p50_ms"])
        section["p95_ratio_to_floor"] = _ratio(section["p95_ms"], floor["p95_ms"])
    return {
        **results,
        "uploaders": args.uploaders,
        "upload_every_s": args.upload_every,
        "upload_bytes": len(data),
        "upload_cells": args.rows * args.cells,
        "uploads_submitted_split": uploads_split,
        # Jobs kept per business are the last few (progress.KEEP_PER_KIND): a sample.
        "upload_jobs_sampled": jobs.count(),
        "upload_jobs_replaced": jobs.filter(last_error=price_upload.REPLACED).count(),
        "p50_ratio_to_floor": results["uploads"]["p50_ratio_to_floor"],
        "p95_ratio_to_floor": results["uploads"]["p95_ratio_to_floor"],
    }


def _ratio(value: float | None, floor: float | None) -> float | None:
    return round(value / floor, 2) if value is not None and floor else None


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--turns", type=int, default=20, help="measured turns of B per phase")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--delay", type=float, default=0.2, help="B's debounce delay per turn")
    p.add_argument("--uploaders", type=int, default=2, help="businesses uploading at once")
    p.add_argument("--upload-every", type=float, default=1.5, help="seconds between uploads")
    p.add_argument("--rows", type=int, default=2000, help="rows of the slow spreadsheet")
    p.add_argument("--cells", type=int, default=500, help="cells per row of it")
    p.add_argument("--items", type=int, default=300, help="B's price list items")
    p.add_argument("--history", type=int, default=6, help="earlier messages per chat")
    p.add_argument("--no-shared", action="store_true", help="skip the shared-pool phase")
    p.add_argument("--no-migrate", action="store_true")
    p.add_argument("--out", type=Path, default=None)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result = run(args)
    if args.out:
        common.write_json(args.out, result)
    keys = ("floor", "uploads", "shared_pool", "upload_jobs_replaced")
    print(json.dumps({k: result[k] for k in keys if k in result}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
