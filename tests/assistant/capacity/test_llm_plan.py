"""`python manage.py llm_plan` as an operator runs it."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command


def run_plan(*args: str) -> str:
    out = StringIO()
    call_command("llm_plan", *args, stdout=out)
    return out.getvalue()


def test_plan_for_qwen_7b_fp8_on_l40s_for_300_users() -> None:
    text = run_plan(
        "--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu", "L40S", "--weights", "fp8",
        "--kv", "fp8", "--context", "12288", "--users", "300", "--think-seconds", "20-60",
        "--reply-seconds", "4",
    )  # fmt: skip
    assert "kv/token   28 KiB (fp8) = 2 x 28 layers x 4 KV heads x 128 x 1 B" in text
    assert "in flight  18.8-50.0 requests" in text  # 300 x 4 / 64 and 300 x 4 / 24
    assert "verdict    carries the peak load" in text
    assert "--quantization fp8 --kv-cache-dtype fp8 --max-model-len 12288" in text
    assert "VLLM_MAX_NUM_SEQS=64" in text  # 50 in flight x 1.25, rounded up to 8


def test_plan_warns_when_70b_bf16_cannot_load_on_one_h100() -> None:
    text = run_plan(
        "--model", "meta-llama/Meta-Llama-3-70B-Instruct", "--gpu", "h100", "--weights", "bf16",
        "--kv", "bf16", "--users", "100",
    )  # fmt: skip
    assert "kv/token   320 KiB (bf16)" in text
    assert "does NOT carry the peak load" in text
    assert "warning    does not fit" in text
    assert "change     tensor parallelism over 2 GPUs" in text


def test_plan_reads_a_local_config_json(tmp_path: Path) -> None:
    config = {
        "_name_or_path": "my-org/support-model",
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    text = run_plan("--model", str(tmp_path / "config.json"), "--gpu", "24", "--users", "20")
    assert "model      my-org/support-model: 8.03B params" in text  # Llama 3 8B's shape
    assert "kv/token   64 KiB (fp8)" in text
    assert "gpu        24 GiB GPU: 24.0 GiB each (unknown)" in text


def test_unknown_model_is_a_clear_error() -> None:
    with pytest.raises(CommandError, match="unknown model 'gpt-9'"):
        run_plan("--model", "gpt-9", "--gpu", "h100", "--users", "10")


def test_bad_numbers_are_rejected() -> None:
    with pytest.raises(CommandError, match="--shared-prefix"):
        run_plan("--model", "qwen2.5-7b", "--gpu", "h100", "--users", "10",
                 "--shared-prefix", "20000")  # fmt: skip
    with pytest.raises(CommandError, match="--replicas"):
        run_plan("--model", "qwen2.5-7b", "--gpu", "h100", "--users", "10", "--replicas", "0")
