"""Concurrency sweep of an OpenAI-compatible model server with the assistant's prompt shape.

    .venv/bin/python bench/llm_sweep.py --base-url http://gpu-host:8000/v1 --model assistant \
        [--concurrency 1,8,16,32,48,64] [--requests-per-level N] [--out var/sweep.json]

At each concurrency level it streams `requests-per-level` chat completions (the assistant's
shared rules + price-list prefix, varied history, a final customer turn), measures time to first
token and inter-token latency, reads vLLM's /metrics before, during and after the level, and
reports the largest concurrency that meets the targets: the value for --max-num-seqs.
`--export-dataset FILE.jsonl` writes the same workload for `vllm bench serve` and prints the
command instead of running the sweep.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bench.llm_workload import Workload, bench_serve_command, export_dataset

DEFAULT_LEVELS = [1, 8, 16, 32, 48, 64]
METRICS_POLL_SECONDS = 0.5

# vLLM metric names (V1), with the V0 names older servers export.
WAITING = ("vllm:num_requests_waiting",)
RUNNING = ("vllm:num_requests_running",)
KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
PREFIX_HITS = ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")
PREFIX_QUERIES = ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total")
TTFT_SUM = ("vllm:time_to_first_token_seconds_sum",)
TTFT_COUNT = ("vllm:time_to_first_token_seconds_count",)


@dataclass
class Sample:
    """One request as the client saw it."""

    ok: bool
    error: str = ""
    ttft_s: float = 0.0
    latency_s: float = 0.0
    gaps_s: list[float] = field(default_factory=list)  # between streamed content chunks
    output_tokens: int = 0
    prompt_tokens: int | None = None


@dataclass(frozen=True)
class Targets:
    ttft_p95_ms: float = 1000.0
    itl_p95_ms: float = 70.0


def percentile(values: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0-100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 2)


async def stream_one(
    client: httpx.AsyncClient, url: str, body: dict[str, Any], headers: dict[str, str]
) -> Sample:
    """Send one streaming chat completion and time its chunks."""
    start = time.perf_counter()
    first: float | None = None
    last = start
    gaps: list[float] = []
    chunks = 0
    usage: dict[str, Any] = {}
    try:
        async with client.stream("POST", url, json=body, headers=headers) as response:
            if response.status_code != 200:
                detail = (await response.aread())[:200].decode("utf-8", "replace")
                return Sample(ok=False, error=f"http {response.status_code}: {detail}")
            async for line in response.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                event = json.loads(data)
                if event.get("usage"):
                    usage = event["usage"]
                for choice in event.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if not (delta.get("content") or delta.get("reasoning_content")):
                        continue
                    now = time.perf_counter()
                    if first is None:
                        first = now
                    else:
                        gaps.append(now - last)
                    last = now
                    chunks += 1
    except (httpx.HTTPError, json.JSONDecodeError) as exc:
        return Sample(ok=False, error=f"{type(exc).__name__}: {exc}"[:200])
    end = time.perf_counter()
    if first is None:
        return Sample(ok=False, error="stream ended without content")
    return Sample(
        ok=True,
        ttft_s=first - start,
        latency_s=end - start,
        gaps_s=gaps,
        output_tokens=int(usage.get("completion_tokens") or chunks),
        prompt_tokens=usage.get("prompt_tokens"),
    )


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text format -> {sample name: value summed over labels}."""
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            values[sample.name] = values.get(sample.name, 0.0) + float(sample.value)
    return values


def _pick(metrics: dict[str, float], names: tuple[str, ...]) -> float | None:
    for name in names:
        if name in metrics:
            return metrics[name]
    return None


class MetricsReader:
    """Reads the server's /metrics; remembers whether it has any vLLM metrics at all."""

    def __init__(self, client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> None:
        self.client, self.url, self.headers = client, url, headers
        self.available = False

    async def read(self) -> dict[str, float] | None:
        try:
            response = await self.client.get(self.url, headers=self.headers, timeout=5.0)
        except httpx.HTTPError:
            return None
        if response.status_code != 200:
            return None
        metrics = parse_metrics(response.text)
        if any(name.startswith("vllm:") for name in metrics):
            self.available = True
            return metrics
        return None


def server_summary(
    before: dict[str, float] | None, after: dict[str, float] | None, during: list[dict[str, float]]
) -> dict[str, Any] | None:
    """What the server saw during one level: queue and KV peaks, prefix-cache hit rate, TTFT."""
    if before is None or after is None:
        return None
    snapshots = [before, *during, after]

    def peak(names: tuple[str, ...]) -> float | None:
        seen = [v for v in (_pick(s, names) for s in snapshots) if v is not None]
        return max(seen) if seen else None

    def delta(names: tuple[str, ...]) -> float | None:
        a, b = _pick(before, names), _pick(after, names)
        return None if a is None or b is None else b - a

    hits, queries = delta(PREFIX_HITS), delta(PREFIX_QUERIES)
    ttft_sum, ttft_count = delta(TTFT_SUM), delta(TTFT_COUNT)
    return {
        "num_requests_waiting_max": peak(WAITING),
        "num_requests_running_max": peak(RUNNING),
        "kv_cache_usage_max": peak(KV_USAGE),
        "prefix_cache_hits": hits,
        "prefix_cache_queries": queries,
        "prefix_cache_hit_rate": round(hits / queries, 4) if hits is not None and queries else None,
        "server_ttft_mean_ms": _ms(ttft_sum / ttft_count) if ttft_sum and ttft_count else None,
        "samples": len(snapshots),
    }


def summarise_level(
    concurrency: int, samples: list[Sample], wall_s: float, targets: Targets
) -> dict[str, Any]:
    """Latency percentiles, throughput and errors of one level, and whether it meets targets."""
    ok = [s for s in samples if s.ok]
    ttft = [s.ttft_s for s in ok]
    gaps = [g for s in ok for g in s.gaps_s]
    tpot = [(s.latency_s - s.ttft_s) / (s.output_tokens - 1) for s in ok if s.output_tokens > 1]
    prompts = [s.prompt_tokens for s in ok if s.prompt_tokens is not None]
    errors = [s.error for s in samples if not s.ok]
    out_tokens = sum(s.output_tokens for s in ok)
    level: dict[str, Any] = {
        "concurrency": concurrency,
        "requests": len(samples),
        "ok": len(ok),
        "errors": len(errors),
        "error_samples": sorted(set(errors))[:3],
        "wall_s": round(wall_s, 3),
        "ttft_ms": {"p50": _ms(percentile(ttft, 50)), "p95": _ms(percentile(ttft, 95))},
        "itl_ms": {"p50": _ms(percentile(gaps, 50)), "p95": _ms(percentile(gaps, 95))},
        "tpot_ms": {"p50": _ms(percentile(tpot, 50)), "p95": _ms(percentile(tpot, 95))},
        "output_tokens_per_s": round(out_tokens / wall_s, 2) if wall_s > 0 else None,
        "requests_per_s": round(len(ok) / wall_s, 3) if wall_s > 0 else None,
        "output_tokens_mean": round(out_tokens / len(ok), 1) if ok else None,
        "prompt_tokens_mean": round(sum(prompts) / len(prompts), 1) if prompts else None,
    }
    level["meets_targets"] = meets_targets(level, targets)
    return level


def meets_targets(level: dict[str, Any], targets: Targets) -> bool:
    ttft, itl = level["ttft_ms"]["p95"], level["itl_ms"]["p95"]
    return (
        level["errors"] == 0
        and level["ok"] > 0
        and ttft is not None
        and ttft <= targets.ttft_p95_ms
        and (itl is None or itl <= targets.itl_p95_ms)
    )


def best_concurrency(levels: list[dict[str, Any]]) -> int | None:
    """The largest tested concurrency that met the targets (the --max-num-seqs to deploy)."""
    passing = [level["concurrency"] for level in levels if level["meets_targets"]]
    return max(passing) if passing else None


@dataclass(frozen=True)
class SweepConfig:
    base_url: str
    model: str
    concurrency: list[int]
    requests_per_level: int | None
    targets: Targets
    workload: Workload
    api_key: str = ""
    warmup: int = 1
    request_timeout_s: float = 120.0

    @property
    def server_root(self) -> str:
        root = self.base_url.rstrip("/")
        return root[: -len("/v1")] if root.endswith("/v1") else root

    def requests_for(self, concurrency: int) -> int:
        return self.requests_per_level or max(2 * concurrency, 8)


async def run_level(
    client: httpx.AsyncClient,
    cfg: SweepConfig,
    metrics: MetricsReader,
    concurrency: int,
    first_index: int,
) -> dict[str, Any]:
    url = cfg.base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}
    total = cfg.requests_for(concurrency)
    queue = iter(range(first_index, first_index + total))
    samples: list[Sample] = []
    during: list[dict[str, float]] = []

    async def worker() -> None:
        for index in queue:  # workers share one iterator: each index is sent once
            body = cfg.workload.request_body(index, cfg.model)
            samples.append(await stream_one(client, url, body, headers))

    async def poll() -> None:
        while True:
            await asyncio.sleep(METRICS_POLL_SECONDS)
            snapshot = await metrics.read()
            if snapshot is not None:
                during.append(snapshot)

    before = await metrics.read()
    poller = asyncio.create_task(poll())
    start = time.perf_counter()
    try:
        await asyncio.gather(*(worker() for _ in range(min(concurrency, total))))
    finally:
        wall = time.perf_counter() - start
        poller.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poller
    after = await metrics.read()
    level = summarise_level(concurrency, samples, wall, cfg.targets)
    level["server"] = server_summary(before, after, during)
    return level


async def sweep(cfg: SweepConfig, log: Any = print) -> dict[str, Any]:
    """Drive every level in turn and build the JSON report."""
    limits = httpx.Limits(max_connections=max(cfg.concurrency) + 2, max_keepalive_connections=None)
    timeout = httpx.Timeout(cfg.request_timeout_s, connect=10.0)
    headers = {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}
    started = datetime.now(UTC).isoformat(timespec="seconds")
    levels: list[dict[str, Any]] = []
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:
        metrics = MetricsReader(client, cfg.server_root + "/metrics", headers)
        url = cfg.base_url.rstrip("/") + "/chat/completions"
        for index in range(cfg.warmup):  # fills the prefix cache the way a live server has it
            await stream_one(client, url, cfg.workload.request_body(index, cfg.model), headers)
        next_index = cfg.warmup
        for concurrency in cfg.concurrency:
            level = await run_level(client, cfg, metrics, concurrency, next_index)
            next_index += level["requests"]
            levels.append(level)
            log(format_level(level))
    best = best_concurrency(levels)
    return {
        "base_url": cfg.base_url,
        "model": cfg.model,
        "started_at": started,
        "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "targets": {"ttft_p95_ms": cfg.targets.ttft_p95_ms, "itl_p95_ms": cfg.targets.itl_p95_ms},
        "workload": {
            "businesses": cfg.workload.businesses,
            "price_list_items": cfg.workload.price_list_items,
            "prefix_chars": len(cfg.workload.system_prompt(0)),
            "max_tokens": cfg.workload.max_tokens,
            "response_format": cfg.workload.response_format,
            "cache_salt": cfg.workload.cache_salt,
            "warmup_requests": cfg.warmup,
        },
        "metrics_available": metrics.available,
        "levels": levels,
        "best_concurrency": best,
        "recommendation": (
            f"VLLM_MAX_NUM_SEQS={best}"
            if best
            else "no level met the targets: fewer sequences per replica, more replicas, or a "
            "smaller or more quantised model (python manage.py llm_plan)"
        ),
    }


def format_level(level: dict[str, Any]) -> str:
    def num(value: Any) -> str:
        return "-" if value is None else f"{value:g}"

    server = level.get("server") or {}
    hit = server.get("prefix_cache_hit_rate")
    return (
        f"c={level['concurrency']:>3}  ok {level['ok']}/{level['requests']}  "
        f"ttft p50/p95 {num(level['ttft_ms']['p50'])}/{num(level['ttft_ms']['p95'])} ms  "
        f"itl p50/p95 {num(level['itl_ms']['p50'])}/{num(level['itl_ms']['p95'])} ms  "
        f"{num(level['output_tokens_per_s'])} tok/s  {num(level['requests_per_s'])} req/s  "
        f"waiting max {num(server.get('num_requests_waiting_max'))}  "
        f"kv max {num(server.get('kv_cache_usage_max'))}  "
        f"prefix hit {num(hit)}  {'PASS' if level['meets_targets'] else 'fail'}"
    )


def _levels(value: str) -> list[int]:
    try:
        levels = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError:
        raise argparse.ArgumentTypeError("expected integers like 1,8,16") from None
    if not levels or levels[0] < 1:
        raise argparse.ArgumentTypeError("concurrency levels must be at least 1")
    return levels


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--base-url", required=True, help="OpenAI-compatible base URL, e.g. …:8000/v1")
    p.add_argument("--model", required=True, help="the served model name (LLM_MODEL)")
    p.add_argument("--api-key", default="", help="bearer token (default: $LLM_API_KEY)")
    p.add_argument("--concurrency", type=_levels, default=DEFAULT_LEVELS)
    p.add_argument("--requests-per-level", type=int, default=None, help="default: 2 x level, >= 8")
    p.add_argument("--ttft-p95-ms", type=float, default=1000.0)
    p.add_argument("--itl-p95-ms", type=float, default=70.0)
    p.add_argument("--out", type=Path, default=None, help="write the JSON report here")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--price-list-items", type=int, default=300)
    p.add_argument("--businesses", type=int, default=1, help="tenants, each with its own prefix")
    p.add_argument(
        "--response-format", choices=["json_schema", "json_object", "none"], default="json_schema"
    )
    p.add_argument("--cache-salt", action="store_true", help="send cache_salt per business")
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--request-timeout", type=float, default=120.0)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument(
        "--export-dataset",
        type=Path,
        default=None,
        help="write the workload as JSONL for `vllm bench serve` and print the command",
    )
    p.add_argument("--tokenizer", default="/path/to/checkpoint", help="for the printed command")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    workload = Workload(
        businesses=args.businesses,
        price_list_items=args.price_list_items,
        max_tokens=args.max_tokens,
        seed=args.seed,
        response_format=args.response_format,
        cache_salt=args.cache_salt,
    )
    cfg = SweepConfig(
        base_url=args.base_url,
        model=args.model,
        concurrency=args.concurrency,
        requests_per_level=args.requests_per_level,
        targets=Targets(args.ttft_p95_ms, args.itl_p95_ms),
        workload=workload,
        api_key=args.api_key or os.environ.get("LLM_API_KEY", ""),
        warmup=args.warmup,
        request_timeout_s=args.request_timeout,
    )
    if args.export_dataset:
        count = max(cfg.requests_for(c) for c in cfg.concurrency)
        export_dataset(workload, args.export_dataset, count)
        print(f"wrote {count} requests to {args.export_dataset}; replay them with:\n")
        print(
            bench_serve_command(
                server_root=cfg.server_root,
                model=cfg.model,
                tokenizer=args.tokenizer,
                dataset=args.export_dataset,
                output_len=workload.max_tokens,
                concurrency=cfg.concurrency,
                requests_per_level=cfg.requests_per_level,
            )
        )
        return 0
    report = asyncio.run(sweep(cfg))
    if not report["metrics_available"]:
        print("no vLLM /metrics at", cfg.server_root + "/metrics", "(server-side figures omitted)")
    print("best concurrency:", report["best_concurrency"], "->", report["recommendation"])
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
        print("report:", args.out)
    # Exit non-zero only when the server answered nothing at all (wrong URL, key or model).
    return 0 if any(level["ok"] for level in report["levels"]) else 1


if __name__ == "__main__":
    sys.exit(main())
