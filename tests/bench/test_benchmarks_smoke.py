"""One smoke run of each benchmark in bench/ at tiny sizes, so none of them can rot.

Real processes against the test database and Redis, as `make bench` runs them; only the sizes
differ. These assert that each benchmark measures what it claims (every event accounted for,
one turn per burst, nothing lost), never how fast anything is: speed belongs to `make bench`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from bench import run_all

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(240)]


def bench(name: str, env: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / f"{name}.json"
    _full, smoke = run_all.BENCHMARKS[name]
    argv = [sys.executable, f"bench/{name}.py", "--out", str(out), "--no-migrate", *smoke]
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=220)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.read_text())
    return result


def test_ingest_counts_every_webhook_against_the_floor(subprocess_env, tmp_path) -> None:
    result = bench("ingest", subprocess_env, tmp_path)

    uvicorn = result["servers"]["uvicorn"]
    for label in ("floor", "product"):
        for variant in ("unique", "duplicates"):
            run = uvicorn[label][variant]
            assert run["requests"] > 0
            assert sum(run["errors"].values()) == 0
            assert run["cpu_us_per_webhook"] > 0
            # Every answered request was either queued once or dropped as a duplicate.
            assert run["events_queued"] + run["duplicates_dropped"] == run["requests"]
    assert uvicorn["product"]["duplicates"]["duplicates_dropped"] > 0
    assert uvicorn["ratio_to_floor"]["unique"]["rps"] > 0
    rate = result["rate_run"]
    assert rate["drained"] is True
    # Each unique event sent at the fixed rate became exactly one stored message.
    assert rate["messages_stored"] == rate["events_queued"] > 0
    assert rate["consumer_lag_ms"]["samples"] > 0
    assert set(result["summary"]) >= {
        "rps",
        "floor_rps",
        "ratio_to_floor",
        "p99_ms",
        "cpu_us_per_webhook",
        "consumer_lag_p99_ms",
    }


@pytest.mark.parametrize("drain", [True, False])
@pytest.mark.parametrize("kind", ["product", "floor"])
def test_consumer_instructions_counts_only_the_drain(kind, drain, subprocess_env) -> None:
    """bench/consumer_instructions.py subtracts a run that fills its events from one that also
    drains them: its child must leave every event stored, or every event still queued."""
    if kind == "floor" and connection.vendor != "postgresql":
        pytest.skip("the bare consumer writes to PostgreSQL only")
    from bench.ingest import FLOOR_CONSUMER_STREAM
    from inbox.conversations import ingest
    from inbox.platform.redis import get_redis

    argv = [sys.executable, "bench/consumer_instructions.py", "--child", kind, "--chats", "3",
            "--events", "30"] + ([] if drain else ["--no-drain"])  # fmt: skip
    proc = subprocess.run(
        argv, cwd=ROOT, env=subprocess_env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    stream = ingest.STREAM if kind == "product" else FLOOR_CONSUMER_STREAM
    assert get_redis().xlen(stream) == (0 if drain else 30)


def test_turn_overhead_measures_answered_turns_and_profiles_them(subprocess_env, tmp_path) -> None:
    result = bench("turn_overhead", subprocess_env, tmp_path)

    assert result["outcomes"] == {"answered": result["turns"]}
    assert result["p95_ms"] is not None
    assert result["profile"]["top"]  # where the time goes, by our own frames


def test_fanout_delivers_every_message_to_every_socket(subprocess_env, tmp_path) -> None:
    result = bench("fanout", subprocess_env, tmp_path)

    assert result["lost"] == 0
    for level in result["levels"]:
        assert level["connected"] == level["clients"]
        assert level["delivered"] == level["expected_deliveries"] > 0
        assert level["p99_ms"] is not None
        # daphne for the sockets, the webhook server for the webhooks, as deployed
        assert set(level["cpu_s"]) == {"server", "webhooks", "consumer", "sender", "clients"}
        assert level["webhooks_not_200"] == 0
        assert level["to_stored_p50_ms"] is not None


def test_burst_of_messages_per_chat_is_one_turn_and_one_model_call(
    subprocess_env, tmp_path
) -> None:
    result = bench("burst", subprocess_env, tmp_path)

    assert result["turns"] == result["chats"] == 3
    assert result["model_calls"] == 3
    assert result["replies_sent"] == 3
    assert result["ok"] is True


def test_fair_workers_times_b_s_turns_alone_and_while_others_upload(
    subprocess_env, tmp_path
) -> None:
    result = bench("fair_workers", subprocess_env, tmp_path)

    assert result["floor"]["turns"] == result["uploads"]["turns"] == 3
    assert result["uploads"]["p50_ms"] is not None
    assert result["p50_ratio_to_floor"] is not None
    assert result["uploads_submitted_split"] >= 1
    assert result["upload_jobs_sampled"] >= 1


def test_prefix_stability_is_measured_on_the_requests_sent(subprocess_env, tmp_path) -> None:
    result = bench("prefix", subprocess_env, tmp_path)

    (run,) = result["runs"]
    assert run["requests"] >= 3
    assert run["price_list_in_system_message"] is True
    assert 0.5 < result["shared_token_share"] <= 1.0
    assert run["cache_salts"]  # the product's client sends the business's cache_salt


def test_llm_load_applies_littles_law_and_drives_the_endpoint(subprocess_env, tmp_path) -> None:
    result = bench("llm_load", subprocess_env, tmp_path)

    small, large = result["levels"]
    assert small["users"] == 10
    assert large["users"] == 100
    # Ten times the customers, about ten times the requests in flight.
    assert large["concurrency"] > small["concurrency"] * 5
    assert large["ok"] > 0
    assert large["errors"] == 0
    assert large["ttft_ms"]["p95"] is not None
    assert set(result["concurrency_for_users"]) == {"10", "100"}


def test_run_all_writes_the_headline_keys_and_the_docs_table(tmp_path) -> None:
    sections = {
        "ingest": {"summary": {"server": "uvicorn", "rps": 10.0, "floor_rps": 20.0,
                               "ratio_to_floor": 0.5, "p50_ms": 1.0, "p99_ms": 2.0,
                               "cpu_us_per_webhook": 300.0, "floor_cpu_us_per_webhook": 100.0,
                               "duplicates_dropped": 3}},
        "turn_overhead": {"p50_ms": 10.0, "p95_ms": 20.0, "dispatch_ms": {"p50": 1.0},
                          "in_turn_ms": {"p50": 9.0}},
        "fanout": {"mode": "layer", "lost": 0, "p99_ms": {"10_steady": 5.0, "10_bursty": 7.0},
                   "levels": [
                       {"clients": 10, "pattern": "steady", "p50_ms": 1.0, "p99_ms": 5.0,
                        "delivered_per_s": 9.0, "lost": 0},
                       {"clients": 10, "pattern": "bursty", "p50_ms": 1.0, "p99_ms": 7.0,
                        "delivered_per_s": 9.0, "lost": 0}]},
        "burst": {"chats": 2, "turns": 2, "model_calls": 2, "replies_sent": 2, "ok": True,
                  "messages_per_burst": 3},
        "prefix": {"shared_token_share": 0.9, "block_share": 0.89, "setting": "default", "runs": []},
        "llm_load": {"concurrency_for_users": {"100": 3.0}, "server": "emulator", "levels": []},
    }  # fmt: skip
    report = {"started_at": "now", "machine": {"cpu_count": 2}, **run_all.headline(sections),
              "sections": sections}  # fmt: skip

    assert report["ingest"]["ratio_to_floor"] == 0.5
    assert report["turn_overhead"]["p95_ms"] == 20.0
    assert report["fanout"]["p99_ms"] == {"10": 7.0}
    assert report["fanout"]["lost"] == 0
    assert report["burst"]["turns"] == 2
    assert report["prefix"]["shared_token_share"] == 0.9
    assert report["llm_load"]["concurrency_for_users"] == {"100": 3.0}
    page = tmp_path / "performance.md"
    page.write_text(
        "# Performance\n\nhand-written\n\n<!-- bench:begin -->\nold\n<!-- bench:end -->\n\nafter\n"
    )
    run_all.update_docs(page, run_all.markdown(report))
    text = page.read_text()
    assert "hand-written" in text
    assert "after" in text
    assert "old" not in text
    assert "p95 < 50 ms" in text


def test_reports_bench_renders_the_page_over_its_seed(subprocess_env, tmp_path) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("reports_bench seeds with generate_series: PostgreSQL only (CI)")
    result = bench("reports_bench", subprocess_env, tmp_path)
    assert result["chats"] == 200
    assert result["messages"] == 200 * 20
    for page in result["pages"].values():
        assert page["median_ms"] > 0
        assert page["conversations"] > 0
