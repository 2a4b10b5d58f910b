"""`make bench`: every benchmark in turn, one JSON file, a short table, the docs table.

    .venv/bin/python bench/run_all.py [--only ingest,turn_overhead] [--smoke]
        [--out bench/results/latest.json] [--docs docs/performance.md]

Each benchmark runs as its own process (`bench/<name>.py --out …`) so one's settings and
threads cannot leak into the next; its full report goes under its name in the JSON, next to
the machine's description and the headline keys (`ingest.rps`, `turn_overhead.p95_ms`, …).
`--smoke` runs every benchmark at tiny sizes (what tests/bench/ does, minus the assertions).
The table between the `bench:begin`/`bench:end` markers of docs/performance.md is rewritten;
the rest of that page is left as written.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import common

BEGIN = "<!-- bench:begin -->"
END = "<!-- bench:end -->"

# name → (arguments for a full run, arguments for a smoke run)
BENCHMARKS: dict[str, tuple[list[str], list[str]]] = {
    "ingest": (
        ["--rate-duration", "60", "--drain-timeout", "120"],
        ["--servers", "uvicorn", "--duration", "1", "--rounds", "1", "--corpus-rps", "300",
         "--rate", "50", "--rate-duration", "2", "--rate-connections", "2",
         "--consumer-events", "200", "--consumer-chats", "1,10", "--consumer-rounds", "1",
         "--scale-consumers", "1"],
    ),
    "turn_overhead": ([], ["--turns", "2", "--warmup", "1", "--profile-turns", "2",
                           "--items", "20"]),
    "fanout": ([], ["--clients", "2", "--rate", "4", "--seconds", "1", "--bursts", "1",
                    "--burst-size", "3"]),
    "burst": ([], ["--chats", "3", "--debounce", "1", "--gap", "0.1", "--items", "20"]),
    "prefix": (["--budgets", "default,4000"],
               ["--chats", "3", "--items", "20", "--budgets", "default"]),
    "reports_bench": ([], ["--chats", "200", "--repeat", "1", "--days", "30"]),
    "fair_workers": ([], ["--turns", "3", "--warmup", "1", "--uploaders", "1", "--rows", "200",
                          "--upload-every", "0.5", "--no-shared", "--items", "20"]),
    "llm_load": ([], ["--users", "10,100", "--requests-per-level", "4", "--emulate-ttft", "0.01",
                      "--emulate-itl", "0.001", "--max-tokens", "32"]),
}  # fmt: skip


def run_one(name: str, extra: list[str], out: Path, log: Any = print) -> dict[str, Any]:
    argv = [sys.executable, str(common.ROOT / "bench" / f"{name}.py"), "--out", str(out), *extra]
    if name == "turn_overhead":
        argv += ["--profile", str(out.parent / "turn_profile.txt")]
    log(f"== {name}: {' '.join(argv[2:])}", flush=True)
    started = time.time()
    proc = subprocess.run(argv, cwd=common.ROOT, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT)  # fmt: skip
    for line in proc.stdout.splitlines()[-30:]:
        log(f"   {line}", flush=True)
    if proc.returncode != 0 or not out.exists():
        return {"error": f"exit {proc.returncode}", "output_tail": proc.stdout[-3000:]}
    result: dict[str, Any] = json.loads(out.read_text())
    result["bench_wall_s"] = round(time.time() - started, 1)
    return result


def headline(sections: dict[str, Any]) -> dict[str, Any]:
    """The keys the issue names, flat under each section (missing when a benchmark failed)."""
    out: dict[str, Any] = {}
    ingest = sections.get("ingest") or {}
    if "summary" in ingest:
        s = ingest["summary"]
        out["ingest"] = {
            "server": s["server"],
            "rps": s["rps"],
            "floor_rps": s["floor_rps"],
            "ratio_to_floor": s["ratio_to_floor"],
            "p50_ms": s["p50_ms"],
            "p99_ms": s["p99_ms"],
            "cpu_us_per_webhook": s["cpu_us_per_webhook"],
            "floor_cpu_us_per_webhook": s["floor_cpu_us_per_webhook"],
            "duplicates_dropped": s["duplicates_dropped"],
            "rate_target_rps": s.get("rate_target_rps"),
            "rate_achieved_rps": s.get("rate_achieved_rps"),
            "rate_p99_ms": s.get("rate_p99_ms"),
            "consumer_lag_p99_ms": s.get("consumer_lag_p99_ms"),
            "consumer_cpu_us_per_event": s.get("consumer_cpu_us_per_event"),
            "consumer_events_per_s_per_core": s.get("consumer_events_per_s_per_core"),
            "consumer_floor_cpu_us_per_event": s.get("consumer_floor_cpu_us_per_event"),
            "consumer_capacity_ratio_to_floor": s.get("consumer_capacity_ratio_to_floor"),
        }
    turn = sections.get("turn_overhead") or {}
    if "p95_ms" in turn:
        out["turn_overhead"] = {"p50_ms": turn["p50_ms"], "p95_ms": turn["p95_ms"]}
        for part in ("dispatch_ms", "scheduler_ms"):
            if isinstance(turn.get(part), dict):
                out["turn_overhead"][f"{part[:-3]}_p95_ms"] = turn[part].get("p95")
    fanout = sections.get("fanout") or {}
    if "levels" in fanout:
        per_clients: dict[str, float | None] = {}
        for level in fanout["levels"]:
            key = str(level["clients"])
            values = [v for v in (per_clients.get(key), level["p99_ms"]) if v is not None]
            per_clients[key] = max(values) if values else None
        out["fanout"] = {"mode": fanout["mode"], "p99_ms": per_clients, "lost": fanout["lost"],
                         "p99_ms_by_pattern": fanout["p99_ms"]}  # fmt: skip
    burst = sections.get("burst") or {}
    if "turns" in burst:
        out["burst"] = {
            k: burst[k] for k in ("chats", "turns", "model_calls", "replies_sent", "ok")
        }
    prefix = sections.get("prefix") or {}
    if "shared_token_share" in prefix:
        out["prefix"] = {k: prefix[k] for k in ("shared_token_share", "block_share", "setting")}
    reports = sections.get("reports_bench") or {}
    if "page_ms" in reports:
        out["reports_bench"] = {k: reports[k] for k in ("chats", "messages", "page_ms")}
    fair = sections.get("fair_workers") or {}
    if "floor" in fair:
        out["fair_workers"] = {
            "floor_p50_ms": fair["floor"]["p50_ms"],
            "uploads_p50_ms": fair["uploads"]["p50_ms"],
            "p50_ratio_to_floor": fair["p50_ratio_to_floor"],
            "p95_ratio_to_floor": fair["p95_ratio_to_floor"],
        }
    llm = sections.get("llm_load") or {}
    if "concurrency_for_users" in llm:
        out["llm_load"] = {"concurrency_for_users": llm["concurrency_for_users"],
                           "server": llm["server"]}  # fmt: skip
    return out


def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        text = f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3g}"
    else:
        text = str(value)
    return f"{text}{unit}"


def table_rows(report: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(what, figure, floor / ratio, target) rows for stdout and the docs."""
    rows: list[tuple[str, str, str, str]] = []
    sections = report["sections"]
    ingest = sections.get("ingest") or {}
    for server, runs in (ingest.get("servers") or {}).items():
        for variant in ("unique", "duplicates"):
            product, floor = runs["product"][variant], runs["floor"][variant]
            ratio = runs["ratio_to_floor"][variant]
            rows.append((
                f"ingest {server}, {variant} ids: req/s",
                _fmt(product["rps"]), f"floor {_fmt(floor['rps'])} · ×{_fmt(ratio['rps'])}",
                "≥ 50 % of floor" if server == "uvicorn" else "",
            ))  # fmt: skip
            rows.append((
                f"ingest {server}, {variant} ids: CPU µs/webhook",
                _fmt(product["cpu_us_per_webhook"]),
                f"floor {_fmt(floor['cpu_us_per_webhook'])} · "
                f"×{_fmt(ratio['cpu_us_per_webhook'])}",
                "≤ 400 µs" if server == "uvicorn" else "",
            ))  # fmt: skip
            rows.append((
                f"ingest {server}, {variant} ids: p50 / p99 ms",
                f"{_fmt(product['p50_ms'])} / {_fmt(product['p99_ms'])}",
                f"floor {_fmt(floor['p50_ms'])} / {_fmt(floor['p99_ms'])}", "",
            ))  # fmt: skip
            if variant == "duplicates":
                rows.append((f"ingest {server}: duplicates dropped",
                             _fmt(product["duplicates_dropped"]),
                             f"of {_fmt(product['requests'])} requests", ""))  # fmt: skip
    rate = ingest.get("rate_run")
    if rate:
        rows.append((f"ingest uvicorn @ {rate['target_rps']}/s: achieved req/s, p99 ms",
                     f"{_fmt(rate['rps'])}, {_fmt(rate['p99_ms'])}", "",
                     "p99 ≤ 25 ms"))  # fmt: skip
        lag = rate["consumer_lag_ms"]
        rows.append((
            f"consumer lag @ {rate['target_rps']}/s: p50 / p99 ms",
            f"{_fmt(lag['p50'])} / {_fmt(lag['p99'])}"
            + ("" if rate["drained"] else " (not drained)"),
            f"{_fmt(rate['consumer_cpu_us_per_event'])} µs CPU/event, "
            f"{_fmt(rate['consumer_events_per_s_capacity'])} events/s per core",
            "p99 < 1 s",
        ))  # fmt: skip
    consumer = ingest.get("consumer") or {}
    for chats, row in (consumer.get("by_chats") or {}).items():
        product, floor = row["product"], row.get("floor")
        rows.append((
            f"consumer CPU per event, {chats} active chats: µs (floor µs)",
            f"{_fmt(product['cpu_us_per_event'])}"
            + (f" ({_fmt(floor['cpu_us_per_event'])})" if floor else ""),
            f"{_fmt(product['events_per_s_per_core'])} events/s per core"
            + (f", ×{_fmt(row['ratio_to_floor']['capacity_per_core'])} of the floor"
               if floor else ""),
            "≤ 600 µs, ≥ ×0.5 of the floor",
        ))  # fmt: skip
    scale = consumer.get("scale_out")
    if scale:
        runs = scale["runs"]
        rows.append((
            f"consumer throughput, {scale['chats']} chats: events/s with "
            + " vs ".join(f"{n}" for n in runs) + " processes",
            " vs ".join(_fmt(r["events_per_s"]) for r in runs.values()),
            "wall clock, stream pre-filled", "",
        ))  # fmt: skip
    reports = sections.get("reports_bench") or {}
    for name, page in (reports.get("pages") or {}).items():
        rows.append((
            f"reports page, {name.replace('_', ' ')}: median / max ms",
            f"{_fmt(page['median_ms'])} / {_fmt(page['max_ms'])}",
            f"{_fmt(reports['chats'])} chats, {_fmt(reports['messages'])} messages",
            "< 1,000 ms",
        ))  # fmt: skip
    turn = sections.get("turn_overhead") or {}
    if "p95_ms" in turn:
        rows.append(("turn overhead (debounce fired → send call, minus model): p50 / p95 ms",
                     f"{_fmt(turn['p50_ms'])} / {_fmt(turn['p95_ms'])}",
                     f"dispatch p50 {_fmt(turn['dispatch_ms']['p50'])} ms"
                     + (f" (scheduler {_fmt(turn['scheduler_ms']['p50'])} ms)"
                        if isinstance(turn.get("scheduler_ms"), dict) else "")
                     + f", in turn p50 {_fmt(turn['in_turn_ms']['p50'])} ms",
                     "p95 < 50 ms"))  # fmt: skip
    fanout = sections.get("fanout") or {}
    for level in fanout.get("levels") or []:
        rows.append((
            f"fan-out ({fanout['mode']}) {level['clients']} clients, {level['pattern']}: "
            "p50 / p99 ms",
            f"{_fmt(level['p50_ms'])} / {_fmt(level['p99_ms'])}",
            f"{_fmt(level['delivered_per_s'])} events/s, lost {level['lost']}",
            "p99 ≤ 100 ms @ 100, lost 0" if level["clients"] == 100 else "lost 0",
        ))  # fmt: skip
    burst = sections.get("burst") or {}
    if "turns" in burst:
        rows.append((f"burst: {burst['chats']} chats × {burst['messages_per_burst']} messages",
                     f"{burst['turns']} turns, {burst['model_calls']} model calls",
                     f"{burst['replies_sent']} replies", f"{burst['chats']} turns"))  # fmt: skip
    prefix = sections.get("prefix") or {}
    for run in prefix.get("runs") or []:
        rows.append((f"prefix stability, {run['price_list_items']} items, {run['setting']}",
                     f"{run['shared_token_share']:.1%}",
                     f"~{run['prompt_tokens_mean']} tokens/prompt", "≥ 85 %"))  # fmt: skip
    llm = sections.get("llm_load") or {}
    for level in llm.get("levels") or []:
        rows.append((
            f"model load, {level['users']} users: Little's-law concurrency",
            _fmt(level["concurrency"]),
            f"TTFT p50/p95 {_fmt(level['ttft_ms']['p50'])}/{_fmt(level['ttft_ms']['p95'])} ms, "
            f"ITL p50/p95 {_fmt(level['itl_ms']['p50'])}/{_fmt(level['itl_ms']['p95'])} ms",
            llm["server"],
        ))  # fmt: skip
    fair = sections.get("fair_workers") or {}
    if "floor" in fair:
        floor = fair["floor"]
        for phase, label in (("uploads", "bulk pool"), ("shared_pool", "one shared pool")):
            if phase not in fair:
                continue
            run = fair[phase]
            rows.append((
                f"bot reply while {fair['uploaders']} businesses upload ({label}): p50 / p95 ms",
                f"{_fmt(run['p50_ms'])} / {_fmt(run['p95_ms'])}",
                f"floor {_fmt(floor['p50_ms'])} / {_fmt(floor['p95_ms'])} · "
                f"×{_fmt(run['p50_ratio_to_floor'])} / ×{_fmt(run['p95_ratio_to_floor'])}",
                "within noise of the floor" if phase == "uploads" else "",
            ))  # fmt: skip
    for name, section in sections.items():
        if "error" in section:
            rows.append((f"{name}", "FAILED", section["error"], ""))
    return rows


def markdown(report: dict[str, Any]) -> str:
    machine = report["machine"]
    lines = [
        BEGIN, "", "## Latest `make bench`", "",
        f"Run {report['started_at']} on {machine.get('cpu_count')} × "
        f"{machine.get('cpu_model') or 'CPU'}, {machine.get('memory_gib')} GiB, load average "
        f"{machine.get('load_avg_at_start')} at start; {machine.get('database')}, Redis "
        f"{machine.get('redis_server')}, load generator {machine.get('load_generator')}, commit "
        f"{machine.get('git_commit')}. Full figures: `bench/results/latest.json`.", "",
        "| what | figure | floor · ratio / detail | target |",
        "| --- | ---: | --- | --- |",
    ]  # fmt: skip
    for what, figure, detail, target in table_rows(report):
        lines.append(f"| {what} | {figure} | {detail} | {target} |")
    lines += ["", END]
    return "\n".join(lines)


def update_docs(path: Path, section: str) -> None:
    text = path.read_text() if path.exists() else "# Performance\n"
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        text = head + section + tail
    else:
        text = text.rstrip() + "\n\n" + section + "\n"
    path.write_text(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--only", default="", help="comma-separated benchmark names")
    p.add_argument("--smoke", action="store_true", help="tiny sizes: seconds per benchmark")
    p.add_argument("--out", type=Path, default=common.ROOT / "bench" / "results" / "latest.json")
    p.add_argument("--docs", type=Path, default=None, help="rewrite the table in this page")
    args = p.parse_args(argv)
    names = [n for n in args.only.split(",") if n] or list(BENCHMARKS)
    unknown = set(names) - set(BENCHMARKS)
    if unknown:
        p.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    common.setup_django()
    common.migrate()
    report: dict[str, Any] = {
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "smoke": args.smoke,
        "machine": common.machine_info(),
    }
    sections: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        for name in names:
            full, smoke = BENCHMARKS[name]
            extra = (smoke if args.smoke else full) + ["--no-migrate"]
            sections[name] = run_one(name, extra, Path(tmp) / f"{name}.json")
            if name == "turn_overhead" and (Path(tmp) / "turn_profile.txt").exists():
                profile = args.out.parent / "turn_profile.txt"
                profile.parent.mkdir(parents=True, exist_ok=True)
                profile.write_text((Path(tmp) / "turn_profile.txt").read_text())
    report["finished_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    report.update(headline(sections))
    report["sections"] = sections
    common.write_json(args.out, report)
    width = max(len(r[0]) for r in table_rows(report)) if table_rows(report) else 10
    print()
    for what, figure, detail, target in table_rows(report):
        print(f"{what:<{width}}  {figure:>22}  {detail:<60}  {target}")
    print(f"\nwrote {args.out}")
    if args.docs:
        update_docs(args.docs, markdown(report))
        print(f"updated the table in {args.docs}")
    return 0 if not any("error" in s for s in sections.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
