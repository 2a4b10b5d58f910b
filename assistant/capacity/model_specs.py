"""What the capacity planner knows about models and GPUs.

Built-in tables for the models and cards a business is likely to rent, plus reading a local
Hugging Face checkpoint (config.json, and the safetensors headers beside it when present) so a
model that is not in the table can still be planned exactly.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class ModelSpec:
    """The architecture numbers that decide weight and KV-cache memory."""

    name: str
    params: float  # parameter count (not billions)
    layers: int
    kv_heads: int
    head_dim: int
    hidden_size: int
    vocab_size: int
    tied_embeddings: bool
    max_context: int
    # Set when the checkpoint on disk is already quantised (AWQ, GPTQ, FP8 compressed-tensors):
    # the scheme and the bytes its safetensors files take, which then are the weight memory.
    checkpoint_quantization: str | None = None
    checkpoint_bytes: int | None = None

    @property
    def embedding_params(self) -> float:
        """Input embeddings plus the output head; quantisers usually keep these in 16-bit."""
        return float(self.vocab_size * self.hidden_size * (1 if self.tied_embeddings else 2))


@dataclass(frozen=True)
class GpuSpec:
    name: str
    # Total memory as the driver reports it (nvidia-smi memory.total), in GiB: vLLM's
    # --gpu-memory-utilization is a fraction of this figure, not of the marketing "GB".
    memory_gib: float
    # CUDA compute capability: 8.0/8.6 Ampere, 8.9 Ada, 9.0 Hopper, 10.0 Blackwell. None: unknown.
    compute_capability: float | None
    arch: str
    bandwidth_gbs: float | None  # HBM/GDDR bandwidth, GB/s; decode speed is bound by it

    @property
    def native_fp8(self) -> bool:
        """FP8 tensor cores exist from Ada (8.9) on; older cards run FP8 weight-only at best."""
        return self.compute_capability is not None and self.compute_capability >= 8.9


def _m(
    name: str,
    params_b: float,
    layers: int,
    kv_heads: int,
    head_dim: int,
    hidden: int,
    vocab: int,
    tied: bool,
    ctx: int,
) -> ModelSpec:
    return ModelSpec(name, params_b * 1e9, layers, kv_heads, head_dim, hidden, vocab, tied, ctx)


# Numbers from each model's config.json on its model card.
MODELS: dict[str, ModelSpec] = {
    m.name: m
    for m in [
        _m("llama-2-7b", 6.74, 32, 32, 128, 4096, 32000, False, 4096),
        _m("llama-2-13b", 13.02, 40, 40, 128, 5120, 32000, False, 4096),
        _m("llama-3-8b", 8.03, 32, 8, 128, 4096, 128256, False, 8192),
        _m("llama-3-70b", 70.55, 80, 8, 128, 8192, 128256, False, 8192),
        _m("llama-3.1-8b", 8.03, 32, 8, 128, 4096, 128256, False, 131072),
        _m("llama-3.1-70b", 70.55, 80, 8, 128, 8192, 128256, False, 131072),
        _m("llama-3.2-1b", 1.24, 16, 8, 64, 2048, 128256, True, 131072),
        _m("llama-3.2-3b", 3.21, 28, 8, 128, 3072, 128256, True, 131072),
        _m("llama-3.3-70b", 70.55, 80, 8, 128, 8192, 128256, False, 131072),
        _m("qwen2.5-0.5b", 0.494, 24, 2, 64, 896, 151936, True, 32768),
        _m("qwen2.5-1.5b", 1.54, 28, 2, 128, 1536, 151936, True, 32768),
        _m("qwen2.5-3b", 3.09, 36, 2, 128, 2048, 151936, True, 32768),
        _m("qwen2.5-7b", 7.62, 28, 4, 128, 3584, 152064, False, 32768),
        _m("qwen2.5-14b", 14.77, 48, 8, 128, 5120, 152064, False, 32768),
        _m("qwen2.5-32b", 32.76, 64, 8, 128, 5120, 152064, False, 32768),
        _m("qwen2.5-72b", 72.71, 80, 8, 128, 8192, 152064, False, 32768),
        _m("mistral-7b", 7.25, 32, 8, 128, 4096, 32768, False, 32768),
        _m("mistral-nemo-12b", 12.25, 40, 8, 128, 5120, 131072, False, 131072),
        _m("gemma-2-2b", 2.61, 26, 4, 256, 2304, 256000, True, 8192),
        _m("gemma-2-9b", 9.24, 42, 8, 256, 3584, 256000, True, 8192),
        _m("gemma-2-27b", 27.23, 46, 16, 128, 4608, 256000, True, 8192),
        _m("phi-3-mini", 3.82, 32, 32, 96, 3072, 32064, False, 131072),
        _m("phi-3-medium", 13.96, 40, 10, 128, 5120, 32064, False, 131072),
        _m("smollm2-135m", 0.135, 30, 3, 64, 576, 49152, True, 8192),
        _m("smollm2-360m", 0.362, 32, 5, 64, 960, 49152, True, 8192),
    ]
}

_MODEL_ALIASES = {
    "llama-3.1-8b": ["llama3.1-8b", "llama-31-8b"],
    "llama-3-8b": ["llama3-8b"],
    "llama-3-70b": ["llama3-70b"],
    "llama-3.1-70b": ["llama3.1-70b"],
    "mistral-7b": ["mistral-7b-v0.1", "mistral-7b-v0.2", "mistral-7b-v0.3"],
    "mistral-nemo-12b": ["mistral-nemo", "mistral-nemo-instruct-2407", "mistral-nemo-2407"],
    "phi-3-mini": ["phi-3-mini-4k", "phi-3-mini-128k", "phi-3.5-mini"],
    "phi-3-medium": ["phi-3-medium-4k", "phi-3-medium-128k"],
}

GPUS: dict[str, GpuSpec] = {
    g.name: g
    for g in [
        GpuSpec("t4", 15.0, 7.5, "Turing", 320),
        GpuSpec("a10", 22.5, 8.6, "Ampere", 600),
        GpuSpec("rtx-3090", 24.0, 8.6, "Ampere", 936),
        GpuSpec("rtx-a6000", 48.0, 8.6, "Ampere", 768),
        GpuSpec("a40", 48.0, 8.6, "Ampere", 696),
        GpuSpec("a100-40", 40.0, 8.0, "Ampere", 1555),
        GpuSpec("a100-80", 80.0, 8.0, "Ampere", 2039),
        GpuSpec("l4", 22.5, 8.9, "Ada", 300),
        GpuSpec("rtx-4090", 24.0, 8.9, "Ada", 1008),
        GpuSpec("l40s", 45.0, 8.9, "Ada", 864),
        GpuSpec("rtx-6000-ada", 48.0, 8.9, "Ada", 960),
        GpuSpec("h100-80", 79.6, 9.0, "Hopper", 3350),
        GpuSpec("h200", 140.4, 9.0, "Hopper", 4800),
        GpuSpec("b200", 179.0, 10.0, "Blackwell", 8000),
    ]
}

_GPU_ALIASES = {
    "a10": ["a10g", "a10-24"],
    "rtx-3090": ["3090"],
    "rtx-4090": ["4090"],
    "rtx-a6000": ["a6000"],
    "a100-40": ["a100-40gb", "a100-sxm4-40gb", "a100-pcie-40gb"],
    "a100-80": ["a100", "a100-80gb", "a100-sxm4-80gb", "a100-pcie-80gb"],
    "h100-80": ["h100", "h100-80gb", "h100-sxm", "h100-pcie", "h100-80gb-hbm3"],
    "h200": ["h200-141", "h200-141gb", "h200-sxm"],
    "l40s": ["l40s-48", "l40"],
    "l4": ["l4-24"],
}


class UnknownHardware(ValueError):
    """A model or GPU name the planner has no numbers for."""


# Suffixes that name a variant of the same architecture (chat tune, quantised export).
_VARIANT = re.compile(
    r"-(instruct|chat|it|hf|base|fp8|fp8-dynamic|awq|gptq|int4|int8|w4a16|w8a8|w8a16|"
    r"quantized(\.[a-z0-9]+)?|gguf|\d{4}|v\d+(\.\d+)*)$"
)


def _normalise(name: str) -> str:
    key = name.strip().lower().rsplit("/", 1)[-1].replace("_", "-").replace(" ", "-")
    key = re.sub(r"^meta-", "", key)
    previous = None
    while previous != key:
        previous = key
        key = _VARIANT.sub("", key)
    return key


def _lookup(table: dict[str, T], aliases: dict[str, list[str]], key: str) -> T | None:
    if key in table:
        return table[key]
    for canonical, names in aliases.items():
        if key in names:
            return table[canonical]
    return None


def find_model(name: str) -> ModelSpec:
    """A built-in model by a hub-style name ("Qwen/Qwen2.5-7B-Instruct", "llama-3.1-8b")."""
    spec = _lookup(MODELS, _MODEL_ALIASES, _normalise(name))
    if spec is None:
        raise UnknownHardware(
            f"unknown model {name!r}; known: {', '.join(sorted(MODELS))}, "
            "or pass the path of the checkpoint's config.json"
        )
    return spec


def find_gpu(name: str) -> GpuSpec:
    """A built-in GPU by name ("H100", "l40s"), or a bare size in GiB ("24") of unknown type."""
    try:
        gib = float(name.lower().removesuffix("gib").removesuffix("gb"))
    except ValueError:
        pass
    else:
        if gib <= 0:
            raise UnknownHardware("GPU memory must be positive")
        return GpuSpec(f"{gib:g} GiB GPU", gib, None, "unknown", None)
    key = re.sub(r"^(nvidia-)?(geforce-|tesla-)?", "", name.strip().lower().replace(" ", "-"))
    spec = _lookup(GPUS, _GPU_ALIASES, key.removesuffix("-pcie").removesuffix("-sxm"))
    if spec is None:
        raise UnknownHardware(
            f"unknown GPU {name!r}; known: {', '.join(sorted(GPUS))}, or a size in GiB"
        )
    return spec


def model_from_config(path: Path) -> ModelSpec:
    """A ModelSpec from a local Hugging Face checkpoint's config.json.

    The parameter count comes from the safetensors headers beside it when present (exact for an
    unquantised checkpoint), otherwise from the architecture. A quantised checkpoint's weight
    memory is the size of its safetensors files.
    """
    config_path = path / "config.json" if path.is_dir() else path
    raw: dict[str, Any] = json.loads(config_path.read_text())
    config: dict[str, Any] = raw.get("text_config", raw)  # multimodal wrappers nest the LM
    layers = int(config["num_hidden_layers"])
    heads = int(config["num_attention_heads"])
    hidden = int(config["hidden_size"])
    head_dim = int(config.get("head_dim") or hidden // heads)
    kv_heads = int(config.get("num_key_value_heads") or heads)
    vocab = int(config["vocab_size"])
    tied = bool(config.get("tie_word_embeddings", raw.get("tie_word_embeddings", False)))
    ctx = int(config.get("max_position_embeddings") or 0)
    quant = raw.get("quantization_config") or config.get("quantization_config")
    quant_method = str(quant.get("quant_method", "quantized")) if quant else None

    files = sorted(config_path.parent.glob("*.safetensors"))
    size = sum(f.stat().st_size for f in files) or None
    header_params = sum(_safetensors_params(f) for f in files)
    if header_params and not quant_method:
        params = float(header_params)
    else:
        params = _params_from_architecture(config, layers, heads, kv_heads, head_dim, hidden)
        params += vocab * hidden * (1 if tied else 2)
    name = str(raw.get("_name_or_path") or config_path.parent.name or "local model")
    return ModelSpec(
        name=name,
        params=params,
        layers=layers,
        kv_heads=kv_heads,
        head_dim=head_dim,
        hidden_size=hidden,
        vocab_size=vocab,
        tied_embeddings=tied,
        max_context=ctx,
        checkpoint_quantization=quant_method,
        checkpoint_bytes=size if quant_method else None,
    )


def _params_from_architecture(
    config: dict[str, Any], layers: int, heads: int, kv_heads: int, head_dim: int, hidden: int
) -> float:
    """Attention projections plus a gated MLP per layer (Llama/Qwen/Mistral/Gemma shape)."""
    intermediate = int(config.get("intermediate_size") or 4 * hidden)
    attention = hidden * head_dim * (2 * heads + 2 * kv_heads)
    mlp = 3 * hidden * intermediate
    return float(layers * (attention + mlp))


def _safetensors_params(path: Path) -> int:
    """Parameters stored in one safetensors file, read from its JSON header only."""
    with path.open("rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        if length > 100_000_000:
            raise ValueError(f"{path.name}: not a safetensors file")
        header: dict[str, Any] = json.loads(f.read(length))
    total = 0
    for key, tensor in header.items():
        if key == "__metadata__":
            continue
        count = 1
        for dim in tensor["shape"]:
            count *= int(dim)
        total += count
    return total
