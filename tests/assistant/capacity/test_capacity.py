"""The capacity planner's arithmetic, checked against figures worked out by hand."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from assistant.capacity.model_specs import UnknownHardware, find_gpu, find_model, model_from_config
from assistant.capacity.plan import (
    GIB,
    KIB,
    Load,
    PlanInput,
    in_flight_requests,
    kv_bytes_per_token,
    plan,
    vllm_flags,
    weight_bytes,
)

SUPPORT_LOAD = Load(users=500, think_min_s=20, think_max_s=60, reply_s=4)


def _plan(model: str, gpu: str, weights: str = "fp8", kv: str = "fp8", **kw: object):  # type: ignore[no-untyped-def]
    defaults: dict[str, object] = {"context": 12288, "load": SUPPORT_LOAD}
    defaults.update(kw)
    return plan(
        PlanInput(model=find_model(model), gpu=find_gpu(gpu), weights=weights, kv=kv, **defaults)  # type: ignore[arg-type]
    )


def test_kv_bytes_per_token_of_well_known_models() -> None:
    # 2 x layers x KV heads x head dim x 2 bytes
    assert kv_bytes_per_token(find_model("llama-3-8b"), "bf16") == 2 * 32 * 8 * 128 * 2 == 128 * KIB
    assert kv_bytes_per_token(find_model("llama-3-70b"), "bf16") == 320 * KIB
    assert kv_bytes_per_token(find_model("meta-llama/Llama-2-7b-chat-hf"), "bf16") == 512 * KIB


def test_fp8_kv_cache_halves_bytes_per_token_and_doubles_tokens() -> None:
    model = find_model("meta-llama/Llama-3.1-8B-Instruct")
    assert kv_bytes_per_token(model, "fp8") == 64 * KIB
    bf16 = _plan("llama-3.1-8b", "l40s", kv="bf16")
    fp8 = _plan("llama-3.1-8b", "l40s", kv="fp8")
    assert fp8.kv_tokens == pytest.approx(2 * bf16.kv_tokens, abs=16)


def test_kv_budget_of_llama_31_8b_fp8_on_l40s() -> None:
    # weights: 8.03e9 params, of which 2 x 128256 x 4096 = 1,050,673,152 embedding/head params
    #   stay 16-bit: 8.03e9 - 1,050,673,152 + 2 x 1,050,673,152 = 9,080,673,152 B
    # overhead: 1.5 GiB + 8192 tokens x 4096 hidden x 20 B = 2,281,701,376 B
    # usable: 45.0 GiB x 0.90 = 43,486,543,872 B -> KV budget 32,124,169,344 B
    # 64 KiB per token in blocks of 16: floor(32,124,169,344 / 1,048,576) = 30,635 blocks
    result = _plan("llama-3.1-8b", "l40s")
    assert weight_bytes(find_model("llama-3.1-8b"), "fp8") == pytest.approx(9_080_673_152)
    assert result.kv_budget_gib * GIB == pytest.approx(32_124_169_344)
    assert result.kv_tokens == 30_635 * 16 == 490_160
    assert result.full_context_seqs == 490_160 // 12288 == 39


def test_littles_law_for_500_support_users() -> None:
    # 500 users x 4 s / (20 s + 4 s) at the busy end, / (60 s + 4 s) at the quiet end
    assert in_flight_requests(500, 20, 4) == pytest.approx(83.33, abs=0.01)
    assert in_flight_requests(500, 60, 4) == pytest.approx(31.25)
    result = _plan("qwen2.5-7b", "h100")
    assert result.in_flight_peak == pytest.approx(83.33, abs=0.01)
    assert result.in_flight_low == pytest.approx(31.25)
    assert result.requests_per_s == pytest.approx(500 / 24)


def test_70b_bf16_does_not_fit_one_80gb_card_and_says_what_would() -> None:
    result = _plan("llama-3-70b", "h100", weights="bf16", kv="bf16", load=Load(200, 20, 60, 5))
    assert not result.fits
    assert not result.meets_load
    assert result.weight_gib == pytest.approx(70.55e9 * 2 / GIB)
    assert any(w.startswith("does not fit: weights (131.4 GiB)") for w in result.warnings)
    assert any("--weights int4" in s for s in result.suggestions)
    assert any("--tensor-parallel 2" in s for s in result.suggestions)


def test_70b_bf16_fits_two_80gb_cards_with_tensor_parallelism() -> None:
    result = _plan("llama-3-70b", "h100", weights="bf16", kv="bf16", tensor_parallel=2)
    assert result.fits
    assert result.weight_gib == pytest.approx(70.55e9 / GIB)  # half per GPU
    assert "--tensor-parallel-size" in vllm_flags(result)


def test_overloaded_plan_warns_and_names_replicas_quantisation_and_context() -> None:
    # The seed's example: Llama 3.1 8B in BF16 on one 24 GB card for 200 support users.
    result = _plan("llama-3.1-8b", "l4", weights="bf16", kv="bf16", load=Load(200, 30, 60, 5))
    assert result.fits
    assert not result.meets_load
    assert any("in flight per replica" in w for w in result.warnings)
    assert any("bandwidth" in w for w in result.warnings)  # 300 GB/s L4
    text = " ".join(result.suggestions)
    assert "--kv fp8" in text
    assert "--weights fp8" in text
    assert "--weights int4" in text
    assert "--replicas" in text


def test_more_replicas_carry_the_same_load() -> None:
    one = _plan("llama-3.1-70b", "h200", load=Load(200, 20, 60, 6))
    assert not one.meets_load
    replicas = int(next(s for s in one.suggestions if "replicas" in s).split()[0])
    more = _plan("llama-3.1-70b", "h200", load=Load(200, 20, 60, 6), replicas=replicas)
    assert more.meets_load
    assert not more.warnings


def test_shared_prefix_is_stored_once_per_business() -> None:
    alone = _plan("qwen2.5-7b", "l40s")
    shared = _plan("qwen2.5-7b", "l40s", shared_prefix=7000, businesses=5)
    # (tokens - 5 x 6992 shared) / (12288 - 6992): 6992 = 7000 rounded down to 16-token blocks
    assert shared.conversations == (shared.kv_tokens - 5 * 6992) // (12288 - 6992)
    assert shared.conversations > 2 * alone.full_context_seqs


def test_flags_follow_the_sizing_rules() -> None:
    flags = vllm_flags(_plan("qwen2.5-7b", "l40s"))
    assert flags[:2] == ["--quantization", "fp8"]
    for flag in ("--enable-prefix-caching", "--enable-chunked-prefill"):
        assert flag in flags
    assert flags[flags.index("--kv-cache-dtype") + 1] == "fp8"
    assert flags[flags.index("--max-model-len") + 1] == "12288"
    assert flags[flags.index("--gpu-memory-utilization") + 1] == "0.90"
    assert "--enforce-eager" not in flags


def test_fp8_on_ampere_points_to_int4() -> None:
    result = _plan("qwen2.5-7b", "a10")
    assert any("--weights int4" in n for n in result.notes)
    assert any("FP8 KV cache on Ampere" in n for n in result.notes)


def test_names_resolve_to_built_in_models_and_gpus() -> None:
    assert find_model("Qwen/Qwen2.5-7B-Instruct").name == "qwen2.5-7b"
    assert find_model("RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8").name == "llama-3.1-8b"
    assert find_model("mistralai/Mistral-7B-Instruct-v0.3").name == "mistral-7b"
    assert find_model("google/gemma-2-9b-it").head_dim == 256
    assert find_gpu("NVIDIA H100 80GB HBM3").compute_capability == 9.0
    assert find_gpu("NVIDIA GeForce RTX 4090").arch == "Ada"
    assert find_gpu("NVIDIA A10G").compute_capability == 8.6
    custom = find_gpu("24")
    assert custom.memory_gib == 24
    assert custom.compute_capability is None
    with pytest.raises(UnknownHardware):
        find_model("gpt-5")
    with pytest.raises(UnknownHardware):
        find_gpu("voodoo-3")


def _write_safetensors(path: Path, tensors: dict[str, list[int]]) -> None:
    """A real safetensors file: 8-byte header length, JSON header, then the tensor bytes."""
    header: dict[str, object] = {}
    offset = 0
    for name, shape in tensors.items():
        size = 2
        for dim in shape:
            size *= dim
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + b"\0" * offset)


def test_local_config_json_with_safetensors_gives_exact_params(tmp_path: Path) -> None:
    config = {
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "hidden_size": 64,
        "intermediate_size": 128,
        "vocab_size": 100,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": True,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    _write_safetensors(tmp_path / "model.safetensors", {"embed": [100, 64], "w": [64, 128]})
    spec = model_from_config(tmp_path / "config.json")
    assert spec.params == 100 * 64 + 64 * 128
    assert spec.head_dim == 16
    assert spec.kv_heads == 2
    assert spec.max_context == 4096
    # 2 x 2 layers x 2 KV heads x 16 x 2 bytes
    assert kv_bytes_per_token(spec, "bf16") == 256


def test_quantised_local_checkpoint_weighs_its_files(tmp_path: Path) -> None:
    config = {
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "vocab_size": 152064,
        "quantization_config": {"quant_method": "awq", "bits": 4},
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    _write_safetensors(tmp_path / "model.safetensors", {"qweight": [1000, 1000]})
    spec = model_from_config(tmp_path)
    assert spec.checkpoint_quantization == "awq"
    size = (tmp_path / "model.safetensors").stat().st_size
    assert weight_bytes(spec, "int4") == size
    # Without safetensors params the architecture gives the count (Qwen2.5-7B: ~7.6B).
    assert spec.params == pytest.approx(7.6e9, rel=0.02)
