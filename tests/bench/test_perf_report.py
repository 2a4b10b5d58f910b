"""gpu_check.sh's last step: the results written into docs/performance.md between markers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.llm_sweep import Sample, Targets, best_concurrency, summarise_level
from bench.perf_report import BEGIN, END, render_section, replace_section

ROOT = Path(__file__).resolve().parents[2]


def sweep_report(tmp_path: Path) -> Path:
    """A sweep report as bench/llm_sweep.py writes it (levels summarised by its own code)."""
    targets = Targets()
    levels = []
    for concurrency, ttft_ms in ((1, 80.0), (8, 300.0), (16, 1400.0)):
        samples = [
            Sample(ok=True, ttft_s=ttft_ms / 1000, latency_s=1.0, gaps_s=[0.02] * 20,
                   output_tokens=21, prompt_tokens=6100)
            for _ in range(concurrency)
        ]  # fmt: skip
        level = summarise_level(concurrency, samples, 2.0, targets)
        level["server"] = {"num_requests_waiting_max": 0.0, "kv_cache_usage_max": 0.25,
                           "prefix_cache_hit_rate": 0.93}  # fmt: skip
        levels.append(level)
    report = {
        "base_url": "http://127.0.0.1:8011/v1", "model": "assistant",
        "started_at": "2026-11-29T10:00:00+00:00", "finished_at": "2026-11-29T10:02:00+00:00",
        "targets": {"ttft_p95_ms": 1000.0, "itl_p95_ms": 70.0},
        "workload": {"businesses": 1, "price_list_items": 300, "prefix_chars": 20848,
                     "max_tokens": 256, "response_format": "json_schema", "cache_salt": False,
                     "warmup_requests": 1},
        "metrics_available": True, "levels": levels,
        "best_concurrency": best_concurrency(levels), "recommendation": "VLLM_MAX_NUM_SEQS=8",
    }  # fmt: skip
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(report))
    return path


def test_results_replace_only_the_marked_section(tmp_path: Path) -> None:
    docs = tmp_path / "performance.md"
    docs.write_text(f"# Performance\n\nHand-written intro.\n\n{BEGIN}\nold run\n{END}\n\nFooter.\n")
    eval_log = tmp_path / "eval.log"
    eval_log.write_text("escalation accuracy 0.97 (baseline 0.98)\ninvented prices 0.0%\n")
    argv = [sys.executable, "bench/perf_report.py", "--sweep", str(sweep_report(tmp_path)),
            "--eval-log", str(eval_log), "--eval-status", "0", "--info", "gpu=NVIDIA H200",
            "--info", "model=/srv/models/qwen", "--out", str(docs)]  # fmt: skip
    subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
    text = docs.read_text()
    assert text.startswith("# Performance\n\nHand-written intro.\n\n" + BEGIN)
    assert text.endswith(END + "\n\nFooter.\n")
    assert "old run" not in text
    assert "- gpu: NVIDIA H200" in text
    assert "| 1 | 1 / 1 | 80.0 / 80.0 | 20.0 / 20.0 |" in text
    assert "| 25% | 93% | pass |" in text
    assert "| 16 | 16 / 16 | 1400.0 / 1400.0 |" in text
    assert "| fail |" in text
    assert "ITL p95 ≤ 70 ms: **8**" in text
    assert "6100 prompt tokens on average" in text
    assert "Passed (exit status 0)." in text
    assert "invented prices 0.0%" in text

    subprocess.run(argv, cwd=ROOT, check=True, capture_output=True)
    assert docs.read_text() == text  # a rerun replaces, never appends


def test_a_page_without_markers_gets_the_section_appended() -> None:
    section = render_section(None, {"result": "vLLM exited"}, "not-run", "", "CUDA out of memory")
    page = replace_section("# Performance\n\nNotes.\n", section)
    assert page.startswith("# Performance\n\nNotes.\n\n" + BEGIN)
    assert "The sweep did not run" in page
    assert "CUDA out of memory" in page
    assert "Not run: the server did not start." in page


def test_missing_quality_gate_is_reported_as_not_run() -> None:
    section = render_section(None, {}, "missing", "")
    assert "Not run: this checkout has no `assistant_eval` command." in section
    failed = render_section(None, {}, "1", "escalation accuracy regressed by 6 points")
    assert "exit status 1" in failed
    assert "regressed by 6 points" in failed


def test_repository_page_has_the_markers() -> None:
    text = (ROOT / "docs" / "performance.md").read_text()
    assert text.index(BEGIN) < text.index(END)
