"""The sweep against the OpenAI-compatible emulator over real HTTP, at tiny sizes."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.emulators.openai_server import OpenAIEmulator, Step

ROOT = Path(__file__).resolve().parents[2]
LEVEL_KEYS = {
    "concurrency", "requests", "ok", "errors", "error_samples", "wall_s", "ttft_ms", "itl_ms",
    "tpot_ms", "output_tokens_per_s", "requests_per_s", "output_tokens_mean",
    "prompt_tokens_mean", "meets_targets", "server",
}  # fmt: skip


@pytest.fixture
def emu() -> Iterator[OpenAIEmulator]:
    with OpenAIEmulator(api_key="sweep-key", max_num_seqs=2) as server:
        yield server


def run_sweep(emu: OpenAIEmulator, tmp_path: Path, *extra: str) -> dict[str, Any]:
    out = tmp_path / "sweep.json"
    argv = [sys.executable, "bench/llm_sweep.py", "--base-url", emu.base_url, "--model",
            "assistant", "--api-key", "sweep-key", "--concurrency", "1,2",
            "--requests-per-level", "3", "--out", str(out), *extra]  # fmt: skip
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report: dict[str, Any] = json.loads(out.read_text())
    return report


def test_sweep_reports_latency_throughput_and_server_metrics(
    emu: OpenAIEmulator, tmp_path: Path
) -> None:
    report = run_sweep(emu, tmp_path)
    assert {"base_url", "model", "targets", "workload", "metrics_available", "levels",
            "best_concurrency", "recommendation"} <= report.keys()  # fmt: skip
    assert [lv["concurrency"] for lv in report["levels"]] == [1, 2]
    for level in report["levels"]:
        assert level.keys() == LEVEL_KEYS
        assert level["ok"] == 3
        assert level["errors"] == 0
        assert level["ttft_ms"]["p95"] is not None
        assert level["itl_ms"]["p50"] is not None
        assert level["output_tokens_per_s"] > 0
        assert level["prompt_tokens_mean"] > 4000  # the ~300-item price list is in every prompt
        server = level["server"]
        assert server["samples"] >= 2  # /metrics read before and after the level
        # Every request repeats the business's prefix: most prompt tokens come from the cache.
        assert server["prefix_cache_hit_rate"] > 0.8
        assert server["num_requests_running_max"] is not None
        assert server["kv_cache_usage_max"] is not None
    assert report["metrics_available"] is True
    assert report["best_concurrency"] == 2
    assert report["recommendation"] == "VLLM_MAX_NUM_SEQS=2"
    # What the server saw: the assistant's request shape, with the Decision schema honoured.
    chats = emu.chat_requests
    assert len(chats) == 1 + 3 + 3  # warm-up + two levels
    assert all(r.stream and r.response_format["type"] == "json_schema" for r in chats)  # type: ignore[index]
    assert len({r.messages[0]["content"] for r in chats}) == 1
    assert not emu.script_errors


def test_cache_salt_keeps_businesses_apart(emu: OpenAIEmulator, tmp_path: Path) -> None:
    report = run_sweep(emu, tmp_path, "--businesses", "2", "--cache-salt")
    salts = {r.cache_salt for r in emu.chat_requests}
    assert salts == {"business-0", "business-1"}
    # Business 1's prefix is only cached after its first request, so the first level hits less.
    first, second = (lv["server"]["prefix_cache_hit_rate"] for lv in report["levels"])
    assert first < second


def test_slow_server_meets_no_target(emu: OpenAIEmulator, tmp_path: Path) -> None:
    emu.responder = lambda request: Step(delay=0.05, token_delay=0.002)
    report = run_sweep(emu, tmp_path, "--ttft-p95-ms", "20")
    assert all(lv["ttft_ms"]["p50"] >= 50 for lv in report["levels"])
    assert not any(lv["meets_targets"] for lv in report["levels"])
    assert report["best_concurrency"] is None
    assert report["recommendation"].startswith("no level met the targets")


def test_wrong_api_key_is_reported_as_errors(emu: OpenAIEmulator, tmp_path: Path) -> None:
    out = tmp_path / "sweep.json"
    argv = [sys.executable, "bench/llm_sweep.py", "--base-url", emu.base_url, "--model",
            "assistant", "--api-key", "wrong", "--concurrency", "1", "--requests-per-level", "2",
            "--out", str(out)]  # fmt: skip
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1  # nothing answered
    level = json.loads(out.read_text())["levels"][0]
    assert level["errors"] == 2
    assert level["error_samples"][0].startswith("http 401")
