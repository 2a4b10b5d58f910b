"""End-to-end turn overhead: from the debounce firing to the transport's send call, minus the
model's own time.

    .venv/bin/python bench/turn_overhead.py [--turns 60] [--out FILE] [--profile FILE]

A real Celery worker (prefork, one child) runs `assistant.run_turn` and, on a thread, the
debounce scheduler that dispatches due timers to it (inbox/conversations/debounce/scheduler.py);
the model is the OpenAI-compatible emulator answering instantly over HTTP, the transport is the
Cloud API through the Graph API emulator over HTTP. For each turn the benchmark stores one
customer message in a chat with history, calls `debounce.schedule(chat, delay)` and records
when the timer is due (the firing). The Graph emulator stamps the send call when it arrives.
The model's own time (the emulator's request handling, from its /metrics e2e sum) is
subtracted. One turn at a time, so the figure is the pipeline's overhead, not queueing. The
dispatch part (due → Turn row) is also split: the scheduler claiming the timer, publishing the
task, the worker picking it up (claim and release watched in the Redis sorted set, to about a
millisecond).

Where the time goes: the same turns run in-process (`assistant.turn.take_turn`) under
pyinstrument; the profile is written to `--profile` and its top frames go into the JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common, fixtures

PHONE_NUMBER_ID = "190000000000002"
TOKEN = "bench-token"
# Questions the model answers: a purchase ("I want 2 of …") goes to a person whatever the
# model says (`assistant.decision.model_reading`), and this measures answered turns.
TEXTS = [
    "How much is the Office chair Ergo 1, black?",
    "Do you deliver to Astana?",
    "How much for 2 of the Desk Nova 3?",
    "Is the Sofa Loft 7 in stock?",
]


def emulator_model_seconds(llm: Any) -> float:
    """Total time the emulator spent answering chat completions (its e2e histogram sum)."""
    for line in llm.metrics_text().splitlines():
        if line.startswith("vllm:e2e_request_latency_seconds_sum"):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def one_turn(
    chat: Any, graph: Any, llm: Any, delay: float, n: int, timeout: float = 30
) -> dict[str, float]:
    from inbox.conversations import debounce
    from inbox.conversations.models import Turn

    fixtures.customer_message(chat, TEXTS[n % len(TEXTS)])
    model_before = emulator_model_seconds(llm)
    sent_before = len(graph.sent_to(chat.customer_key))
    scheduled = time.time()
    debounce.schedule(chat.pk, delay=delay)
    fire = scheduled + delay
    claimed, released = watch_dispatch(chat.pk, fire, timeout)
    common.wait_until(
        lambda: len(graph.sent_to(chat.customer_key)) > sent_before,
        timeout,
        f"the reply of turn {n}",
        0.002,
    )
    sent_at = graph.sent_to(chat.customer_key)[-1].at
    model_s = emulator_model_seconds(llm) - model_before
    turn = common.wait_until(
        lambda: Turn.objects.filter(chat=chat).exclude(outcome=Turn.Outcome.RUNNING).first(),
        timeout,
        "the turn row",
        0.005,
    )
    started = turn.started_at.timestamp()
    return {
        "overhead_s": sent_at - fire - model_s,
        "dispatch_s": started - fire,  # timer due → the task has collected and created the Turn
        "scheduler_s": claimed - fire,  # timer due → a scheduler claimed it
        "publish_s": released - claimed,  # claimed → its task published, the lease released
        "pickup_s": started - released,  # published → a worker ran it and created the Turn
        "in_turn_s": sent_at - started - model_s,
        "model_s": model_s,
        "outcome": turn.outcome,
    }


def watch_dispatch(chat_id: int, fire: float, timeout: float) -> tuple[float, float]:
    """When a scheduler claimed the chat's timer (its score moved to a lease) and when it
    released it (the task published), watched in Redis from just before the timer is due."""
    from inbox.conversations import debounce
    from inbox.platform.redis import get_redis

    client = get_redis()
    member = str(chat_id)
    due = client.zscore(debounce.DUE_KEY, member)
    time.sleep(max(0.0, fire - time.time() - 0.01))
    claimed = None
    deadline = time.time() + timeout
    while time.time() < deadline:
        score = client.zscore(debounce.DUE_KEY, member)
        now = time.time()
        if claimed is None and score != due:
            claimed = now
        if score is None:
            return claimed or now, now
        time.sleep(0.0005)
    raise TimeoutError(f"no scheduler dispatched chat {chat_id}")


def profile_in_process(chats: list[Any], profile_path: Path | None) -> dict[str, Any]:
    """The turn's code path in this process under pyinstrument (same functions the task runs)."""
    from pyinstrument import Profiler

    from assistant.turn import take_turn

    for n, chat in enumerate(chats):
        fixtures.customer_message(chat, TEXTS[n % len(TEXTS)])
    take_turn(chats[0].pk)  # warm: price list, client, templates are per-process caches
    profiler = Profiler(interval=0.0005)
    started = time.perf_counter()
    profiler.start()
    for chat in chats[1:]:
        take_turn(chat.pk)
    profiler.stop()
    wall = time.perf_counter() - started
    text = profiler.output_text(unicode=True, color=False, show_all=False)
    if profile_path:
        profile_path.parent.mkdir(parents=True, exist_ok=True)
        profile_path.write_text(text)
    session = profiler.last_session
    assert session is not None
    root = session.root_frame()
    top = top_frames(root, wall) if root is not None else []
    return {
        "turns": len(chats) - 1,
        "ms_per_turn": round(wall / (len(chats) - 1) * 1000, 2),
        "top": top,
        "file": str(profile_path) if profile_path else None,
    }


def top_frames(root: Any, wall: float, limit: int = 12) -> list[dict[str, Any]]:
    """The heaviest frames of our own code (self time of library frames rolled up into the
    nearest frame of inbox/, assistant/ or integrations/)."""
    totals: dict[str, float] = {}

    def ours(frame: Any) -> bool:
        path = frame.file_path or ""
        return any(f"/{pkg}/" in path for pkg in ("inbox", "assistant", "integrations")) and (
            "/site-packages/" not in path
        )

    def walk(frame: Any, owner: str) -> None:
        name = f"{frame.function} ({Path(frame.file_path or '?').parent.name}/"
        name += f"{Path(frame.file_path or '?').name}:{frame.line_no})"
        if ours(frame):
            owner = name
        children = frame.children
        child_time = sum(c.time for c in children)
        totals[owner] = totals.get(owner, 0.0) + max(0.0, frame.time - child_time)
        for child in children:
            walk(child, owner)

    walk(root, "(bench)")
    ranked = sorted(totals.items(), key=lambda kv: kv[1], reverse=True)[:limit]
    return [{"frame": k, "ms_per_turn_share": round(v / wall * 100, 1)} for k, v in ranked]


def run(args: argparse.Namespace) -> dict[str, Any]:
    common.setup_django()
    if not args.no_migrate:
        common.migrate()
    from django.conf import settings

    from tests.emulators.graph_api import GraphApiEmulator
    from tests.emulators.openai_server import OpenAIEmulator

    business = fixtures.business_with_prices("Benchmark furniture", args.items)
    channel = fixtures.cloud_channel(business, PHONE_NUMBER_ID, debounce_seconds=args.delay)
    nonce = f"{int(time.time() * 1000) % 10**9:09d}"
    with GraphApiEmulator(app_secret="bench") as graph, OpenAIEmulator() as llm:
        graph.register_number(PHONE_NUMBER_ID, TOKEN)
        env = common.subprocess_env(
            WHATSAPP_GRAPH_URL=graph.graph_url,
            LLM_BASE_URL=llm.base_url,
            LLM_MODEL="assistant",
            LOG_LEVEL="WARNING",
        )
        worker = common.start(
            "turn-worker",
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
                "1",
                "--loglevel",
                "WARNING",
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                f"bench-turn-{nonce}@%h",
            ],
            env,
        )
        samples: list[dict[str, float]] = []
        try:
            chats = [
                fixtures.chat_with_history(channel, f"7702{nonce}{n:03d}", args.history)
                for n in range(args.turns + args.warmup)
            ]
            for n, chat in enumerate(chats):
                sample = one_turn(chat, graph, llm, args.delay, n)
                if n >= args.warmup:
                    samples.append(sample)
        finally:
            worker.stop()
        settings.WHATSAPP_GRAPH_URL = graph.graph_url
        settings.LLM_BASE_URL = llm.base_url
        settings.LLM_MODEL = "assistant"
        profile_chats = [
            fixtures.chat_with_history(channel, f"7703{nonce}{n:03d}", args.history)
            for n in range(args.profile_turns + 1)
        ]
        profile = profile_in_process(profile_chats, args.profile)

    def stats(key: str) -> dict[str, float | None]:
        values = [s[key] for s in samples]
        return {
            "p50": common.pct_ms(values, 50),
            "p95": common.pct_ms(values, 95),
            "max": common.ms(max(values)) if values else None,
        }

    outcomes: dict[str, int] = {}
    for s in samples:
        outcomes[str(s["outcome"])] = outcomes.get(str(s["outcome"]), 0) + 1
    return {
        "turns": len(samples),
        "price_list_items": args.items,
        "history_messages": args.history,
        "debounce_delay_s": args.delay,
        "p50_ms": stats("overhead_s")["p50"],
        "p95_ms": stats("overhead_s")["p95"],
        "overhead_ms": stats("overhead_s"),
        "dispatch_ms": stats("dispatch_s"),
        # The parts of dispatch: the scheduler's wake-up after the due time, its publish, and
        # the worker taking the task until the Turn row exists.
        "scheduler_ms": stats("scheduler_s"),
        "publish_ms": stats("publish_s"),
        "pickup_ms": stats("pickup_s"),
        "in_turn_ms": stats("in_turn_s"),
        "model_ms": stats("model_s"),
        "outcomes": outcomes,
        "profile": profile,
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--turns", type=int, default=60)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--delay", type=float, default=0.2, help="debounce delay used per turn")
    p.add_argument("--items", type=int, default=300, help="price list items")
    p.add_argument("--history", type=int, default=6, help="earlier messages per chat")
    p.add_argument("--profile-turns", type=int, default=20)
    p.add_argument("--profile", type=Path, default=None, help="write the pyinstrument text here")
    p.add_argument("--no-migrate", action="store_true")
    p.add_argument("--out", type=Path, default=None)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result = run(args)
    if args.out:
        common.write_json(args.out, result)
    print(json.dumps({k: result[k] for k in ("turns", "p50_ms", "p95_ms", "outcomes")}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
