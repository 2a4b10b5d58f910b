"""Load shape for the model server: how many concurrent requests N connected customers make.

    .venv/bin/python bench/llm_load.py [--users 100,1000,5000] [--base-url URL] [--out FILE]

A customer reads the reply and types the next message: think time uniform in
[--think-min, --think-max] seconds (20-60 s). Then the channel's debounce waits (--debounce), then
one model request of service time W. So each customer makes one request per
T + debounce + W seconds, and by Little's law N customers keep

    L = N * W / (T_mean + debounce + W)

requests in flight on average. W depends on L (a busier server is slower), so the benchmark
finds the fixed point: measure W at concurrency 1, compute L, drive the endpoint at ceil(L)
(bench/llm_sweep.py's streaming client and the assistant's prompt shape from
bench/llm_workload.py), measure W again, until ceil(L) stops changing (at most 4 rounds). It
reports L and the TTFT and inter-token latency p50/p95 at that concurrency.

Without --base-url (or LLM_BASE_URL) it starts the OpenAI-compatible emulator with simulated
timing (--emulate-ttft, --emulate-itl): the figures then describe the emulator, which only proves
the generator works; on a GPU host point it at the real vLLM.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench import common
from bench.llm_sweep import MetricsReader, SweepConfig, Targets, run_level, stream_one
from bench.llm_workload import Workload


def littles_law(users: int, service_s: float, think_mean_s: float, debounce_s: float) -> float:
    """Average requests in flight for `users` customers (one request per cycle each)."""
    return users * service_s / (think_mean_s + debounce_s + service_s)


async def drive(cfg: SweepConfig, users: list[int], think_mean: float, debounce: float,
                rounds: int = 4) -> list[dict[str, Any]]:  # fmt: skip
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    timeout = httpx.Timeout(cfg.request_timeout_s, connect=10.0)
    headers = {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}
    url = cfg.base_url.rstrip("/") + "/chat/completions"
    out = []
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        metrics = MetricsReader(client, cfg.server_root + "/metrics", headers)
        index = 0
        for _ in range(max(1, cfg.warmup)):
            await stream_one(client, url, cfg.workload.request_body(index, cfg.model), headers)
            index += 1
        single = await run_level(client, cfg, metrics, 1, index)
        index += single["requests"]
        base_w = _service_s(single)
        for n in users:
            service = base_w
            concurrency = 0
            level: dict[str, Any] = single
            history = []
            for _ in range(rounds):
                estimate = littles_law(n, service, think_mean, debounce)
                wanted = max(1, math.ceil(estimate))
                if wanted == concurrency:
                    break
                concurrency = wanted
                level = await run_level(client, cfg, metrics, concurrency, index)
                index += level["requests"]
                service = _service_s(level) or service
                history.append({"concurrency": concurrency, "service_s": round(service, 3)})
            estimate = littles_law(n, service, think_mean, debounce)
            row = {
                "users": n,
                "concurrency": round(estimate, 2),
                "driven_at": concurrency,
                "service_s": round(service, 3),
                "requests_per_s": round(n / (think_mean + debounce + service), 2),
                "ttft_ms": level["ttft_ms"],
                "itl_ms": level["itl_ms"],
                "errors": level["errors"],
                "ok": level["ok"],
                "meets_targets": level["meets_targets"],
                "iterations": history,
            }
            print(
                f"  {n:>6} users  L = {row['concurrency']:>7}  driven at {concurrency:>4}  "
                f"W {row['service_s']} s  TTFT p50/p95 {row['ttft_ms']['p50']}/"
                f"{row['ttft_ms']['p95']} ms  ITL p50/p95 {row['itl_ms']['p50']}/"
                f"{row['itl_ms']['p95']} ms  errors {row['errors']}",
                flush=True,
            )
            out.append(row)
    return out


def _service_s(level: dict[str, Any]) -> float:
    """Mean time from sending a request to its last token, from the level's figures."""
    if not level["ok"] or not level["wall_s"]:
        return 0.0
    return float(level["wall_s"]) * level["concurrency"] / level["requests"]


def run(args: argparse.Namespace) -> dict[str, Any]:
    base_url = args.base_url or os.environ.get("LLM_BASE_URL", "")
    server = "endpoint"
    emulator: common.Proc | None = None
    if not base_url:
        port = common.free_port()
        emulator = common.start(
            "llm-load-emulator",
            [sys.executable, "-m", "tests.emulators.openai_server", "--port", str(port),
             "--max-num-seqs", "256", "--delay", str(args.emulate_ttft),
             "--token-delay", str(args.emulate_itl)],
            common.subprocess_env(),
        )  # fmt: skip
        common.wait_listening(emulator, port)
        base_url = f"http://127.0.0.1:{port}/v1"
        server = (
            f"emulator (simulated TTFT {args.emulate_ttft * 1000:.0f} ms, "
            f"ITL {args.emulate_itl * 1000:.0f} ms)"
        )
    users = [int(u) for u in args.users.split(",") if u.strip()]
    think_mean = (args.think_min + args.think_max) / 2
    cfg = SweepConfig(
        base_url=base_url,
        model=args.model or os.environ.get("LLM_MODEL", "assistant"),
        concurrency=[1],
        requests_per_level=args.requests_per_level,
        targets=Targets(args.ttft_p95_ms, args.itl_p95_ms),
        workload=Workload(price_list_items=args.items, max_tokens=args.max_tokens),
        api_key=os.environ.get("LLM_API_KEY", ""),
    )
    try:
        rows = asyncio.run(drive(cfg, users, think_mean, args.debounce))
    finally:
        if emulator is not None:
            emulator.stop()
    return {
        "server": server,
        "base_url": base_url if emulator is None else "(emulator)",
        "think_s": [args.think_min, args.think_max],
        "debounce_s": args.debounce,
        "price_list_items": args.items,
        "concurrency_for_users": {str(r["users"]): r["concurrency"] for r in rows},
        "levels": rows,
    }


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--users", default="100,1000,5000")
    p.add_argument("--think-min", type=float, default=20.0)
    p.add_argument("--think-max", type=float, default=60.0)
    p.add_argument("--debounce", type=float, default=4.0, help="the channel's debounce seconds")
    p.add_argument("--base-url", default="", help="OpenAI-compatible /v1 URL (default: emulator)")
    p.add_argument("--model", default="")
    p.add_argument("--items", type=int, default=300, help="price list items in the prompt")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--requests-per-level", type=int, default=None, help="default 2 x level, >= 8")
    p.add_argument("--ttft-p95-ms", type=float, default=1000.0)
    p.add_argument("--itl-p95-ms", type=float, default=70.0)
    p.add_argument("--emulate-ttft", type=float, default=0.08, help="emulator: seconds")
    p.add_argument("--emulate-itl", type=float, default=0.015, help="emulator: seconds per token")
    p.add_argument("--no-migrate", action="store_true", help="accepted for run_all; no database")
    p.add_argument("--out", type=Path, default=None)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result = run(args)
    if args.out:
        common.write_json(args.out, result)
    print(json.dumps({"concurrency_for_users": result["concurrency_for_users"]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
