"""Capacity arithmetic for serving the assistant's model with vLLM.

Plain functions: weight memory, KV-cache bytes per token, the KV budget left at a given
--gpu-memory-utilization, how many tokens and full-context conversations fit, and how many
requests are in flight at once (Little's law). `plan()` puts them together for one deployment
and says what to change when it cannot carry the load. The load test (bench/llm_sweep.py) is
what confirms or corrects these estimates; `python manage.py llm_plan` prints them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Literal

from assistant.capacity.model_specs import GpuSpec, ModelSpec

GIB = 1024**3
KIB = 1024

WeightPrecision = Literal["bf16", "fp8", "int4"]
KvPrecision = Literal["bf16", "fp8"]

# Bytes per parameter of the quantised layers. 4-bit is above 0.5 because AWQ/GPTQ store a
# scale (and zero point) per group of 128 weights.
WEIGHT_BYTES: dict[str, float] = {"bf16": 2.0, "fp8": 1.0, "int4": 0.55}
KV_BYTES: dict[str, int] = {"bf16": 2, "fp8": 1}

# What vLLM keeps outside weights and KV cache on each GPU: CUDA context, cuBLAS/NCCL
# workspaces and captured CUDA graphs (fixed part), plus the activation peak of one chunked
# prefill step, which grows with the hidden size (about 20 bytes per token per hidden unit).
FIXED_OVERHEAD_GIB = 1.5
ACTIVATION_BYTES_PER_TOKEN_HIDDEN = 20
CHUNKED_PREFILL_TOKENS = 8192
BLOCK_TOKENS = 16  # vLLM allocates the KV cache in blocks of 16 tokens

# What one assistant request needs: rules and a 300-item price list (~6-8k tokens depending on
# the tokenizer; bench/llm_sweep.py reports the measured prompt_tokens) + recent history (~2k) +
# the reply (512). The planner's and start.sh's default --max-model-len.
ASSISTANT_CONTEXT_TOKENS = 12288
ITL_TARGET_MS = 70.0
MAX_NUM_SEQS_CAP = 256  # vLLM's own default ceiling


@dataclass(frozen=True)
class Load:
    """Conversation traffic: users who read and type between replies."""

    users: int
    think_min_s: float
    think_max_s: float
    reply_s: float


@dataclass(frozen=True)
class PlanInput:
    model: ModelSpec
    gpu: GpuSpec
    weights: WeightPrecision
    kv: KvPrecision
    context: int
    load: Load
    replicas: int = 1
    utilization: float = 0.90
    tensor_parallel: int = 1
    itl_target_ms: float = ITL_TARGET_MS
    # Tokens at the start of every request of one business (rules + price list) that the prefix
    # cache stores once per business instead of once per conversation. 0: no sharing counted.
    shared_prefix: int = 0
    businesses: int = 1


@dataclass
class Plan:
    inp: PlanInput
    weight_gib: float  # per GPU
    overhead_gib: float  # per GPU
    usable_gib: float  # per GPU: memory x utilization
    kv_budget_gib: float  # per GPU, may be negative: the weights do not fit
    kv_bytes_per_token: int  # whole model (all GPUs of one replica)
    kv_tokens: int  # per replica
    full_context_seqs: int  # per replica, nothing shared
    conversations: int  # per replica, with the shared prefix stored once per business
    in_flight_peak: float  # all replicas, at the shortest think time
    in_flight_low: float  # all replicas, at the longest think time
    requests_per_s: float  # arrivals at the shortest think time
    decode_step_ms: float | None  # bandwidth lower bound at peak in-flight per replica
    max_num_seqs: int
    fits: bool
    meets_load: bool
    warnings: list[str] = field(default_factory=list)
    suggestions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def in_flight_per_replica(self) -> float:
        return self.in_flight_peak / self.inp.replicas


def kv_bytes_per_token(model: ModelSpec, kv: KvPrecision) -> int:
    """2 (key and value) x layers x KV heads x head dim x bytes per element."""
    return 2 * model.layers * model.kv_heads * model.head_dim * KV_BYTES[kv]


def weight_bytes(model: ModelSpec, weights: WeightPrecision) -> float:
    """Weight memory of the whole model; embeddings and output head stay 16-bit when quantised.

    A checkpoint that is already quantised on disk weighs what its safetensors files weigh.
    """
    if model.checkpoint_bytes is not None:
        return float(model.checkpoint_bytes)
    if weights == "bf16":
        return model.params * WEIGHT_BYTES["bf16"]
    embeddings = min(model.embedding_params, model.params)
    return (model.params - embeddings) * WEIGHT_BYTES[weights] + embeddings * WEIGHT_BYTES["bf16"]


def overhead_bytes(model: ModelSpec, tensor_parallel: int = 1) -> float:
    """Per-GPU memory vLLM needs besides weights and KV cache (see the constants above)."""
    activations = CHUNKED_PREFILL_TOKENS * model.hidden_size * ACTIVATION_BYTES_PER_TOKEN_HIDDEN
    return FIXED_OVERHEAD_GIB * GIB + activations / tensor_parallel


def in_flight_requests(users: int, think_s: float, reply_s: float) -> float:
    """Little's law: arrivals per second x time each request spends being generated."""
    return users * reply_s / (think_s + reply_s)


def _kv_bytes_per_token_per_gpu(model: ModelSpec, kv: KvPrecision, tp: int) -> float:
    # Tensor parallelism splits KV heads across GPUs; with fewer heads than GPUs they replicate.
    heads_per_gpu = max(model.kv_heads / tp, 1.0)
    return 2 * model.layers * heads_per_gpu * model.head_dim * KV_BYTES[kv]


@dataclass(frozen=True)
class _Capacity:
    weight_gib: float
    overhead_gib: float
    usable_gib: float
    kv_budget_gib: float
    kv_tokens: int
    full_context_seqs: int
    conversations: int


def _capacity(inp: PlanInput) -> _Capacity:
    tp = inp.tensor_parallel
    weight = weight_bytes(inp.model, inp.weights) / tp
    overhead = overhead_bytes(inp.model, tp)
    usable = inp.gpu.memory_gib * GIB * inp.utilization
    budget = usable - weight - overhead
    per_token = _kv_bytes_per_token_per_gpu(inp.model, inp.kv, tp)
    blocks = math.floor(max(budget, 0.0) / (per_token * BLOCK_TOKENS))
    tokens = blocks * BLOCK_TOKENS
    full = tokens // inp.context if inp.context > 0 else 0
    # Only whole 16-token blocks of a prefix are shared.
    shared = min(inp.shared_prefix, inp.context) // BLOCK_TOKENS * BLOCK_TOKENS
    conversations = full
    if shared and full >= 1:
        conversations = max(0, (tokens - shared * inp.businesses) // (inp.context - shared))
    return _Capacity(
        weight_gib=weight / GIB,
        overhead_gib=overhead / GIB,
        usable_gib=usable / GIB,
        kv_budget_gib=budget / GIB,
        kv_tokens=tokens,
        full_context_seqs=full,
        conversations=max(conversations, full),
    )


def _round_up(value: float, step: int) -> int:
    return max(step, math.ceil(value / step) * step)


def plan(inp: PlanInput) -> Plan:
    """Size one deployment and say whether it carries the load, and if not, what would."""
    cap = _capacity(inp)
    load = inp.load
    peak = in_flight_requests(load.users, load.think_min_s, load.reply_s)
    low = in_flight_requests(load.users, load.think_max_s, load.reply_s)
    per_replica = peak / inp.replicas
    fits = cap.full_context_seqs >= 1
    decode_ms = _decode_step_ms(inp, per_replica)
    result = Plan(
        inp=inp,
        weight_gib=cap.weight_gib,
        overhead_gib=cap.overhead_gib,
        usable_gib=cap.usable_gib,
        kv_budget_gib=cap.kv_budget_gib,
        kv_bytes_per_token=kv_bytes_per_token(inp.model, inp.kv),
        kv_tokens=cap.kv_tokens,
        full_context_seqs=cap.full_context_seqs,
        conversations=cap.conversations,
        in_flight_peak=peak,
        in_flight_low=low,
        requests_per_s=load.users / (load.think_min_s + load.reply_s),
        decode_step_ms=decode_ms,
        max_num_seqs=min(MAX_NUM_SEQS_CAP, _round_up(per_replica * 1.25, 8)),
        fits=fits,
        meets_load=fits and cap.conversations >= math.ceil(per_replica),
    )
    _hardware_notes(result)
    if not fits:
        _explain_no_fit(result, cap)
    elif not result.meets_load:
        result.warnings.append(
            f"one replica holds {cap.conversations} conversations; "
            f"the peak load keeps {math.ceil(per_replica)} in flight per replica "
            "(vLLM would queue or preempt the rest)"
        )
    if not result.meets_load:
        _suggest(result)
    if decode_ms is not None and decode_ms > inp.itl_target_ms:
        result.warnings.append(
            f"decode is memory-bandwidth bound: at {math.ceil(per_replica)} in flight each "
            f"token takes at least {decode_ms:.0f} ms (target {inp.itl_target_ms:.0f} ms); "
            "add replicas or use a card with more bandwidth"
        )
    return result


def _decode_step_ms(inp: PlanInput, in_flight: float) -> float | None:
    """Lower bound of one decode step: every step reads the weights and each sequence's KV.

    Sequences are assumed half full on average. Only an estimate; the sweep measures it.
    """
    if inp.gpu.bandwidth_gbs is None:
        return None
    tp = inp.tensor_parallel
    per_token = _kv_bytes_per_token_per_gpu(inp.model, inp.kv, tp)
    read = weight_bytes(inp.model, inp.weights) / tp + in_flight * inp.context / 2 * per_token
    return read / (inp.gpu.bandwidth_gbs * 1e9) * 1000


def _hardware_notes(result: Plan) -> None:
    inp = result.inp
    gpu, model = inp.gpu, inp.model
    if inp.context > model.max_context > 0:
        result.warnings.append(
            f"--context {inp.context} is beyond the model's {model.max_context} tokens"
        )
    if model.checkpoint_quantization:
        result.notes.append(
            f"the checkpoint is already quantised ({model.checkpoint_quantization}); weight "
            "memory is its safetensors size and vLLM detects the scheme itself"
        )
    if gpu.compute_capability is None:
        return
    if inp.weights == "fp8" and not gpu.native_fp8 and not model.checkpoint_quantization:
        result.notes.append(
            f"{gpu.arch} has no FP8 tensor cores: vLLM runs FP8 weights weight-only (W8A16); "
            "the rule for this card is an INT4 AWQ/GPTQ checkpoint (--weights int4)"
        )
    if inp.kv == "fp8" and not gpu.native_fp8:
        result.notes.append(
            f"FP8 KV cache on {gpu.arch} depends on the attention backend of your vLLM build; "
            "start.sh keeps 16-bit KV there unless VLLM_KV_CACHE_DTYPE=fp8"
        )
    if gpu.compute_capability < 8.0 and inp.weights == "bf16":
        result.notes.append(f"{gpu.arch} has no bfloat16: vLLM serves 16-bit weights as fp16")
    if inp.utilization > 0.95:
        result.warnings.append(
            "--utilization above 0.95 leaves no room for fragmentation or another process"
        )


def _explain_no_fit(result: Plan, cap: _Capacity) -> None:
    inp = result.inp
    need = cap.weight_gib + cap.overhead_gib
    if need > cap.usable_gib:
        result.warnings.append(
            f"does not fit: weights ({cap.weight_gib:.1f} GiB) plus overhead "
            f"({cap.overhead_gib:.1f} GiB) exceed the {cap.usable_gib:.1f} GiB that "
            f"--gpu-memory-utilization {inp.utilization:.2f} allows on {inp.gpu.name}"
            + (f" x{inp.tensor_parallel}" if inp.tensor_parallel > 1 else "")
        )
    else:
        result.warnings.append(
            f"does not fit: the KV cache holds {cap.kv_tokens} tokens, less than one "
            f"{inp.context}-token conversation (vLLM refuses to start)"
        )


def _suggest(result: Plan) -> None:
    """Name the changes that would help, each checked with the same arithmetic.

    A change is listed only when it holds more full-context conversations than the plan does.
    """
    inp = result.inp
    need = math.ceil(result.in_flight_per_replica)
    have = result.conversations

    def seqs(**changes: object) -> int:
        return _capacity(replace(inp, **changes)).conversations  # type: ignore[arg-type]

    candidates: list[tuple[str, int]] = []
    if inp.kv == "bf16":
        candidates.append(("FP8 KV cache (--kv fp8)", seqs(kv="fp8")))
    if not inp.model.checkpoint_quantization:
        if inp.weights == "bf16":
            candidates.append(("FP8 weights (--weights fp8)", seqs(weights="fp8")))
            if inp.kv == "bf16":
                candidates.append(
                    (
                        "FP8 weights and FP8 KV (--weights fp8 --kv fp8)",
                        seqs(weights="fp8", kv="fp8"),
                    )
                )
        if inp.weights != "int4":
            candidates.append(
                (
                    "INT4 AWQ/GPTQ weights (--weights int4; pass the quality gate first)",
                    seqs(weights="int4"),
                )
            )
    for text, count in candidates:
        if count > have:
            enough = "enough" if count >= need else f"need {need}"
            result.suggestions.append(f"{text}: {count} conversations per replica ({enough})")
    tokens = result.kv_tokens
    if tokens > 0 and need > 0:
        context = (tokens // need) // 1024 * 1024
        if 2048 <= context < inp.context:
            result.suggestions.append(
                f"a shorter context (--context {context}) if the assistant's prompts fit in it"
            )
    if have >= 1:
        replicas = math.ceil(result.in_flight_peak / have)
        result.suggestions.append(
            f"{replicas} replicas (--replicas {replicas}) at this precision and context"
        )
    elif inp.tensor_parallel == 1:
        for tp in (2, 4, 8):
            if seqs(tensor_parallel=tp) >= 1:
                result.suggestions.append(
                    f"tensor parallelism over {tp} GPUs (--tensor-parallel {tp}): "
                    f"{seqs(tensor_parallel=tp)} conversations per replica"
                )
                break
    result.suggestions.append("a GPU with more memory (--gpu)")


def vllm_flags(result: Plan) -> list[str]:
    """The `vllm serve` flags this plan recommends (deploy/vllm/start.sh sets the same)."""
    inp = result.inp
    flags: list[str] = []
    if inp.model.checkpoint_quantization:
        pass  # vLLM reads the scheme from the checkpoint
    elif inp.weights == "fp8":
        flags += ["--quantization", "fp8"]
    flags += ["--kv-cache-dtype", "fp8" if inp.kv == "fp8" else "auto"]
    flags += ["--max-model-len", str(inp.context), "--max-num-seqs", str(result.max_num_seqs)]
    flags += ["--gpu-memory-utilization", f"{inp.utilization:.2f}"]
    flags += ["--enable-prefix-caching", "--enable-chunked-prefill"]
    if inp.tensor_parallel > 1:
        flags += ["--tensor-parallel-size", str(inp.tensor_parallel)]
    return flags


def start_env(result: Plan) -> list[str]:
    """The same recommendation as deploy/vllm/vllm.env lines."""
    inp = result.inp
    lines = [
        f"VLLM_WEIGHTS={inp.weights}",
        f"VLLM_KV_CACHE_DTYPE={'fp8' if inp.kv == 'fp8' else 'auto'}",
        f"VLLM_MAX_MODEL_LEN={inp.context}",
        f"VLLM_MAX_NUM_SEQS={result.max_num_seqs}",
        f"VLLM_GPU_MEMORY_UTILIZATION={inp.utilization:.2f}",
    ]
    if inp.tensor_parallel > 1:
        lines.append(f"VLLM_TENSOR_PARALLEL_SIZE={inp.tensor_parallel}")
    return lines


def format_plan(result: Plan) -> list[str]:
    """The planner's report, one line per item, for people reading a terminal."""
    inp = result.inp
    m, g, load = inp.model, inp.gpu, inp.load
    tp = inp.tensor_parallel
    cc = f", compute capability {g.compute_capability}" if g.compute_capability else ""
    gpus = f"{tp} x {g.name}" if tp > 1 else g.name
    kv_kib = result.kv_bytes_per_token / KIB
    lines = [
        f"model      {m.name}: {m.params / 1e9:.2f}B params, {m.layers} layers, "
        f"{m.kv_heads} KV heads x {m.head_dim} head dim",
        f"gpu        {gpus}: {g.memory_gib:.1f} GiB each ({g.arch}{cc})",
        f"weights    {inp.weights}: {result.weight_gib:.1f} GiB per GPU",
        f"kv/token   {kv_kib:g} KiB ({inp.kv}) = 2 x {m.layers} layers x {m.kv_heads} KV heads "
        f"x {m.head_dim} x {KV_BYTES[inp.kv]} B",
        f"budget     {g.memory_gib:.1f} GiB x {inp.utilization:.2f} = {result.usable_gib:.1f} GiB"
        f" - weights {result.weight_gib:.1f} - overhead {result.overhead_gib:.1f}"
        f" = KV {max(result.kv_budget_gib, 0.0):.1f} GiB per GPU",
        f"kv cache   {result.kv_tokens:,} tokens per replica = {result.full_context_seqs} "
        f"conversations at the full {inp.context}-token context",
    ]
    if inp.shared_prefix:
        lines.append(
            f"shared     {result.conversations} conversations when each of {inp.businesses} "
            f"business(es) keeps its {inp.shared_prefix}-token prefix once in the prefix cache"
        )
    lines += [
        f"load       {load.users} users, think {load.think_min_s:g}-{load.think_max_s:g} s, "
        f"reply {load.reply_s:g} s: {result.requests_per_s:.1f} requests/s at peak",
        f"in flight  {result.in_flight_low:.1f}-{result.in_flight_peak:.1f} requests "
        f"(Little's law: users x reply / (think + reply)); "
        f"{result.in_flight_per_replica:.1f} per replica on {inp.replicas}",
    ]
    if result.decode_step_ms is not None:
        lines.append(
            f"decode     >= {result.decode_step_ms:.0f} ms per token at peak "
            f"(bandwidth {g.bandwidth_gbs:g} GB/s; an estimate, the sweep measures it)"
        )
    verdict = "carries the peak load" if result.meets_load else "does NOT carry the peak load"
    lines.append(f"verdict    {verdict}")
    lines += [f"warning    {w}" for w in result.warnings]
    lines += [f"change     {s}" for s in result.suggestions]
    lines += [f"note       {n}" for n in result.notes]
    lines.append("vllm serve <model> " + " ".join(vllm_flags(result)))
    lines.append("start.sh   " + " ".join(start_env(result)))
    lines.append(
        "assumes    overhead = 1.5 GiB (CUDA context, workspaces, CUDA graphs) + one "
        f"{CHUNKED_PREFILL_TOKENS}-token prefill chunk of activations; every in-flight request "
        "counted at full context unless --shared-prefix is given;"
        " --max-num-seqs is a starting point: set it from bench/llm_sweep.py"
    )
    return lines
