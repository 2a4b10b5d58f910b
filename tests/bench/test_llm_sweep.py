"""The sweep's workload, measurements and report, without a server (see test_sweep_emulator)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.schema import Decision
from bench import llm_sweep
from bench.llm_sweep import (
    Sample,
    Targets,
    best_concurrency,
    parse_metrics,
    percentile,
    server_summary,
    summarise_level,
)
from bench.llm_workload import Workload, bench_serve_command, export_dataset

VLLM_METRICS = """\
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{{engine="0",model_name="assistant"}} {waiting}
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{{engine="0",model_name="assistant"}} {running}
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{{engine="0",model_name="assistant"}} {kv}
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{{engine="0",model_name="assistant"}} {queries}
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{{engine="0",model_name="assistant"}} {hits}
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{{engine="0",le="+Inf",model_name="assistant"}} {count}
vllm:time_to_first_token_seconds_count{{engine="0",model_name="assistant"}} {count}
vllm:time_to_first_token_seconds_sum{{engine="0",model_name="assistant"}} {ttft_sum}
"""


def metrics_text(**values: float) -> str:
    defaults = {"waiting": 0, "running": 0, "kv": 0.0, "queries": 0, "hits": 0, "count": 0,
                "ttft_sum": 0.0}  # fmt: skip
    return VLLM_METRICS.format(**{**defaults, **values})


def test_every_request_of_a_business_shares_the_token_exact_prefix() -> None:
    workload = Workload()
    prefix = workload.messages(0)[0]
    assert prefix["role"] == "system"
    assert prefix["content"].count(" KZT | ") == 300  # the generated price list
    requests = [workload.messages(i) for i in range(20)]
    assert all(r[0] == prefix for r in requests)
    assert all(r[-1]["role"] == "user" for r in requests)
    tails = {json.dumps(r[1:]) for r in requests}
    assert len(tails) > 15  # histories and final turns vary
    assert len({len(r) for r in requests}) > 1  # so does the history length
    assert workload.messages(7) == Workload().messages(7)  # deterministic across runs


def test_businesses_have_their_own_prefix_and_cache_salt() -> None:
    workload = Workload(businesses=2, cache_salt=True)
    a, b = workload.request_body(0, "assistant"), workload.request_body(1, "assistant")
    assert a["messages"][0] != b["messages"][0]
    assert workload.request_body(2, "assistant")["messages"][0] == a["messages"][0]
    assert a["cache_salt"] != b["cache_salt"]
    assert "cache_salt" not in Workload().request_body(0, "assistant")


def test_request_body_asks_for_the_decision_schema_and_streams_usage() -> None:
    body = Workload(max_tokens=200).request_body(3, "assistant")
    assert body["model"] == "assistant"
    assert body["max_tokens"] == 200
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema == Decision.model_json_schema()
    assert "response_format" not in Workload(response_format="none").request_body(3, "a")


def test_percentiles_interpolate_like_numpy() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 95) == pytest.approx(95.05)
    assert percentile([], 95) is None
    assert percentile([3.0], 95) == 3.0


def test_metrics_are_summed_over_engines_and_diffed_per_level() -> None:
    two_engines = metrics_text(waiting=2) + metrics_text(waiting=3).replace(
        'engine="0"', 'engine="1"'
    )
    assert parse_metrics(two_engines)["vllm:num_requests_waiting"] == 5
    before = parse_metrics(metrics_text(queries=1000, hits=100, count=10, ttft_sum=1.0))
    during = [parse_metrics(metrics_text(waiting=7, running=32, kv=0.61))]
    after = parse_metrics(metrics_text(queries=21000, hits=18100, count=30, ttft_sum=9.0))
    server = server_summary(before, after, during)
    assert server is not None
    assert server["prefix_cache_hit_rate"] == pytest.approx(0.9)  # 18000 / 20000
    assert server["num_requests_waiting_max"] == 7
    assert server["kv_cache_usage_max"] == pytest.approx(0.61)
    assert server["server_ttft_mean_ms"] == pytest.approx(400.0)  # 8 s / 20 requests
    assert server_summary(None, after, []) is None


def test_older_vllm_metric_names_are_read_too() -> None:
    old = "# TYPE vllm:gpu_cache_usage_perc gauge\nvllm:gpu_cache_usage_perc 0.5\n"
    server = server_summary(parse_metrics(old), parse_metrics(old), [])
    assert server is not None
    assert server["kv_cache_usage_max"] == 0.5


def _samples(ttft_ms: float, gap_ms: float, n: int, errors: int = 0) -> list[Sample]:
    ok = [
        Sample(ok=True, ttft_s=ttft_ms / 1000, latency_s=(ttft_ms + 9 * gap_ms) / 1000,
               gaps_s=[gap_ms / 1000] * 9, output_tokens=10, prompt_tokens=6000)
        for _ in range(n)
    ]  # fmt: skip
    return ok + [Sample(ok=False, error="http 503: overloaded")] * errors


def test_level_summary_and_the_largest_concurrency_meeting_targets() -> None:
    targets = Targets(ttft_p95_ms=1000, itl_p95_ms=70)
    levels = [
        summarise_level(1, _samples(120, 20, 8), 2.0, targets),
        summarise_level(16, _samples(600, 45, 32), 4.0, targets),
        summarise_level(32, _samples(900, 80, 64), 8.0, targets),  # ITL too slow
        summarise_level(48, _samples(400, 30, 96, errors=1), 8.0, targets),  # an error
    ]
    first = levels[0]
    assert first["ttft_ms"] == {"p50": 120.0, "p95": 120.0}
    assert first["itl_ms"]["p95"] == 20.0
    assert first["output_tokens_per_s"] == 40.0  # 8 x 10 tokens / 2 s
    assert first["requests_per_s"] == 4.0
    assert first["prompt_tokens_mean"] == 6000
    assert [lv["meets_targets"] for lv in levels] == [True, True, False, False]
    assert levels[3]["error_samples"] == ["http 503: overloaded"]
    assert best_concurrency(levels) == 16
    assert best_concurrency(levels[2:]) is None


def test_exported_dataset_replays_the_same_workload(tmp_path: Path) -> None:
    workload = Workload(price_list_items=50)
    path = tmp_path / "sweep.jsonl"
    export_dataset(workload, path, 12)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) == 12
    assert all(r["output_tokens"] == 256 for r in rows)
    prefix = workload.system_prompt(0)
    assert all(r["prompt"].startswith(prefix) for r in rows)
    assert rows[3]["prompt"].endswith(workload.messages(3)[-1]["content"])
    command = bench_serve_command(
        server_root="http://gpu:8000", model="assistant", tokenizer="/srv/models/qwen",
        dataset=path, output_len=256, concurrency=[1, 8], requests_per_level=12,
    )  # fmt: skip
    for part in ("for c in 1 8; do", "vllm bench serve", "--dataset-name custom",
                 f"--dataset-path {path}", "--skip-chat-template", '--max-concurrency "$c"',
                 "--backend openai-chat", "--tokenizer /srv/models/qwen"):  # fmt: skip
        assert part in command


def test_cli_export_prints_the_bench_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "d.jsonl"
    code = llm_sweep.main(["--base-url", "http://gpu:8000/v1", "--model", "assistant",
                           "--concurrency", "1,4", "--export-dataset", str(path)])  # fmt: skip
    assert code == 0
    assert len(path.read_text().splitlines()) == 8  # 2 x 4 requests, at least 8
    out = capsys.readouterr().out
    assert "--base-url http://gpu:8000 " in out  # the server root, without /v1
    assert "for c in 1 4; do" in out
