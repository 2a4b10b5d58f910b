"""Writes a GPU check's results into docs/performance.md, between its markers.

    python bench/perf_report.py --sweep var/gpu-check/sweep.json --eval-log var/gpu-check/eval.log \
        --eval-status 0 --info "gpu=NVIDIA H200" --info "vllm=0.x" --out docs/performance.md

Only the text between the markers is replaced, so the rest of the page stays hand-written and a
rerun replaces the previous run instead of adding to it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

BEGIN = "<!-- gpu-check:begin -->"
END = "<!-- gpu-check:end -->"
EVAL_TAIL_LINES = 40


def _num(value: Any, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def sweep_table(report: dict[str, Any]) -> list[str]:
    lines = [
        "| concurrency | ok / sent | TTFT p50 / p95 ms | ITL p50 / p95 ms | output tok/s | req/s "
        "| waiting max | KV use max | prefix hit | targets |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | :---: |",
    ]
    for level in report["levels"]:
        server = level.get("server") or {}
        kv = server.get("kv_cache_usage_max")
        hit = server.get("prefix_cache_hit_rate")
        lines.append(
            f"| {level['concurrency']} | {level['ok']} / {level['requests']} "
            f"| {_num(level['ttft_ms']['p50'])} / {_num(level['ttft_ms']['p95'])} "
            f"| {_num(level['itl_ms']['p50'])} / {_num(level['itl_ms']['p95'])} "
            f"| {_num(level['output_tokens_per_s'])} | {_num(level['requests_per_s'], 2)} "
            f"| {_num(server.get('num_requests_waiting_max'), 0)} "
            f"| {'–' if kv is None else f'{kv:.0%}'} | {'–' if hit is None else f'{hit:.0%}'} "
            f"| {'pass' if level['meets_targets'] else 'fail'} |"
        )
    return lines


def render_section(
    report: dict[str, Any] | None,
    info: dict[str, str],
    eval_status: str,
    eval_log: str,
    log_tail: str = "",
) -> str:
    """The markdown between the markers for one GPU check run."""
    out = [BEGIN, "", "## Latest GPU check", ""]
    out += [f"- {key}: {value}" for key, value in info.items()]
    out.append("")
    if report is None:
        out += ["The sweep did not run (see the result above).", ""]
        if log_tail.strip():
            lines = log_tail.strip().splitlines()[-EVAL_TAIL_LINES:]
            out += ["Server log, last lines:", "", "```", *lines, "```", ""]
    else:
        targets = report["targets"]
        workload = report["workload"]
        prompts = [lv["prompt_tokens_mean"] for lv in report["levels"] if lv["prompt_tokens_mean"]]
        out += [
            f"Sweep: `bench/llm_sweep.py`, {workload['price_list_items']}-item price list "
            f"({workload['prefix_chars']} characters of shared prefix"
            + (f", {prompts[0]:.0f} prompt tokens on average" if prompts else "")
            + f"), up to {workload['max_tokens']} output tokens, "
            f"`response_format` {workload['response_format']}; started {report['started_at']}.",
            "",
            *sweep_table(report),
            "",
            f"Largest concurrency with TTFT p95 ≤ {targets['ttft_p95_ms']:g} ms and ITL p95 ≤ "
            f"{targets['itl_p95_ms']:g} ms: **{report['best_concurrency'] or 'none'}** "
            f"({report['recommendation']}).",
            "",
        ]
        if not report["metrics_available"]:
            out += ["The server exposed no vLLM `/metrics`; server-side columns are empty.", ""]
    out += ["### Quality gate (`python manage.py assistant_eval`)", ""]
    if eval_status == "missing":
        out.append("Not run: this checkout has no `assistant_eval` command.")
    elif eval_status == "not-run":
        out.append("Not run: the server did not start.")
    elif eval_status == "0":
        out.append("Passed (exit status 0).")
    else:
        out.append(f"Failed or below thresholds (exit status {eval_status}).")
    tail = eval_log.strip().splitlines()[-EVAL_TAIL_LINES:]
    if tail:
        out += ["", "```", *tail, "```"]
    out += ["", END]
    return "\n".join(out)


def replace_section(document: str, section: str) -> str:
    """Swap the marked section of `document` for `section` (appended when there is none)."""
    start, end = document.find(BEGIN), document.find(END)
    if start == -1 or end == -1 or end < start:
        return document.rstrip("\n") + "\n\n" + section + "\n"
    return document[:start] + section + document[end + len(END) :]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--sweep", type=Path, help="the sweep's JSON report (absent: sweep not run)")
    p.add_argument("--eval-log", type=Path)
    p.add_argument("--eval-status", default="missing", help="exit status, or 'missing'")
    p.add_argument("--info", action="append", default=[], help="key=value lines for the header")
    p.add_argument("--log-tail", type=Path, help="server log to quote when the sweep did not run")
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    report = None
    if args.sweep and args.sweep.exists():
        report = json.loads(args.sweep.read_text())
    info = dict(item.split("=", 1) for item in args.info if "=" in item)
    eval_log = args.eval_log.read_text() if args.eval_log and args.eval_log.exists() else ""
    log_tail = args.log_tail.read_text(errors="replace") if args.log_tail else ""
    document = args.out.read_text() if args.out.exists() else "# Performance\n"
    section = render_section(report, info, args.eval_status, eval_log, log_tail)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(replace_section(document, section))
    print("wrote", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
