#!/usr/bin/env bash
# Starts `vllm serve` for the assistant. Every setting comes from the environment (see
# vllm.env.example); the defaults follow docs/vllm.md's sizing rules and detect the GPU.
# VLLM_DRY_RUN=1 prints the exact command instead of running it.
set -euo pipefail

die() { echo "start.sh: $*" >&2; exit 2; }
note() { echo "start.sh: $*" >&2; }

model=${VLLM_MODEL:-}
[[ -n "$model" ]] || die "set VLLM_MODEL to a local checkpoint folder (or .gguf file) or a hub id"
served_name=${VLLM_SERVED_MODEL_NAME:-assistant}  # what LLM_MODEL names on the inbox side
host=${VLLM_HOST:-127.0.0.1}
port=${VLLM_PORT:-8000}
weights=${VLLM_WEIGHTS:-auto}        # auto | bf16 | fp8 | int4
kv_dtype=${VLLM_KV_CACHE_DTYPE:-}    # empty: chosen from the GPU below
# What one assistant request needs (rules + price list + history + reply), not the model's
# 32k-128k maximum: a long max makes vLLM reserve for, and accept, runaway requests.
# `python manage.py llm_plan` prints the value for your prompts.
max_model_len=${VLLM_MAX_MODEL_LEN:-12288}
max_num_seqs=${VLLM_MAX_NUM_SEQS:-}
# 10% stays free for the CUDA context, fragmentation and anything else on the card.
gpu_util=${VLLM_GPU_MEMORY_UTILIZATION:-0.90}
tp=${VLLM_TENSOR_PARALLEL_SIZE:-1}
vllm_bin=${VLLM_BIN:-vllm}

case "$weights" in auto|bf16|fp8|int4) ;; *) die "VLLM_WEIGHTS must be auto, bf16, fp8 or int4";; esac

# --- the GPU: compute capability decides FP8 (Ada 8.9, Hopper 9.0, newer) vs Ampere (8.x) ---
cap=${VLLM_GPU_COMPUTE_CAP:-}
if [[ -z "$cap" ]] && command -v nvidia-smi >/dev/null 2>&1; then
  cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' \r' || true)
fi
gpu_class=unknown
if [[ "$cap" =~ ^([0-9]+)\.([0-9])$ ]]; then
  cc=$(( BASH_REMATCH[1] * 10 + BASH_REMATCH[2] ))
  if (( cc >= 89 )); then gpu_class=fp8; elif (( cc >= 80 )); then gpu_class=ampere; else gpu_class=older; fi
else
  cap=""
fi

# --- the checkpoint: is it already quantised? (vLLM then reads the scheme from it) ---
checkpoint_quant=""
local_model=0
if [[ -e "$model" ]]; then
  local_model=1
  if [[ "$model" == *.gguf ]]; then
    checkpoint_quant=gguf
  elif [[ -f "$model/config.json" ]]; then
    checkpoint_quant=$(grep -o '"quant_method"[[:space:]]*:[[:space:]]*"[^"]*"' "$model/config.json" \
      | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/' || true)
  fi
fi

quant_args=()
if [[ "$weights" == auto ]]; then
  if [[ -n "$checkpoint_quant" ]]; then weights=checkpoint
  elif [[ "$gpu_class" == fp8 ]]; then weights=fp8      # near-lossless, native on Ada/Hopper
  elif [[ "$gpu_class" == ampere ]]; then weights=int4  # no FP8 cores: AWQ/GPTQ with Marlin
  else weights=checkpoint; fi                           # unknown card: serve what is on disk
fi
case "$weights" in
  fp8)
    if [[ -z "$checkpoint_quant" ]]; then
      quant_args=(--quantization fp8)  # online FP8 from a 16-bit checkpoint
    elif [[ "$checkpoint_quant" != fp8 && "$checkpoint_quant" != compressed-tensors ]]; then
      die "VLLM_WEIGHTS=fp8 but $model is already quantised ($checkpoint_quant)"
    fi
    ;;
  int4)
    # vLLM cannot make INT4 on the fly: it needs an AWQ/GPTQ (or compressed-tensors W4A16)
    # checkpoint, whose scheme it detects and runs with Marlin kernels.
    if (( local_model )) && [[ -z "$checkpoint_quant" ]]; then
      die "INT4 (the rule on Ampere) needs an AWQ/GPTQ checkpoint; $model is not quantised. Point VLLM_MODEL at one, or set VLLM_WEIGHTS=bf16 or fp8"
    fi
    (( local_model )) || note "INT4: $model must be an AWQ/GPTQ checkpoint (vLLM detects the scheme)"
    ;;
  bf16|checkpoint) ;;
esac

if [[ -z "$kv_dtype" ]]; then
  # FP8 KV halves the cache, doubling how many conversations fit. On Ampere it depends on the
  # attention backend of the vLLM build, so 16-bit stays the default there (set fp8 to try).
  if [[ "$gpu_class" == fp8 ]]; then kv_dtype=fp8; else kv_dtype=auto; fi
fi

# --- --max-num-seqs: the largest concurrency that met the latency targets in the sweep ---
if [[ -z "$max_num_seqs" && -n "${VLLM_SWEEP_REPORT:-}" ]]; then
  [[ -f "$VLLM_SWEEP_REPORT" ]] || die "VLLM_SWEEP_REPORT=$VLLM_SWEEP_REPORT does not exist"
  max_num_seqs=$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get("best_concurrency"); print(v or "")' "$VLLM_SWEEP_REPORT")
  [[ -n "$max_num_seqs" ]] || note "the sweep report has no concurrency that met its targets; using 32"
fi
max_num_seqs=${max_num_seqs:-32}  # a starting point until bench/llm_sweep.py has run

# --- the API key: vLLM reads VLLM_API_KEY itself, which keeps it out of `ps` ---
if [[ -z "${VLLM_API_KEY:-}" ]]; then
  case "$host" in
    127.*|localhost|::1) ;;
    *) [[ "${VLLM_ALLOW_NO_API_KEY:-0}" == 1 ]] \
         || die "refusing to listen on $host without VLLM_API_KEY (VLLM_ALLOW_NO_API_KEY=1 overrides)";;
  esac
fi

env_args=()
if (( local_model )); then
  # Weights come from disk: never try to reach a model hub (the host may have no route to one).
  env_args+=("HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}" "TRANSFORMERS_OFFLINE=${TRANSFORMERS_OFFLINE:-1}")
fi

args=(
  serve "$model"
  --served-model-name "$served_name"
  --host "$host" --port "$port"
  "${quant_args[@]}"
  --kv-cache-dtype "$kv_dtype"
  --max-model-len "$max_model_len"
  --max-num-seqs "$max_num_seqs"
  --gpu-memory-utilization "$gpu_util"
  # Every assistant request starts with the same rules and price list: cache that prefix.
  --enable-prefix-caching
  # Long prompts are prefilled in chunks so they do not stall other users' streams.
  --enable-chunked-prefill
  # CUDA graphs stay on: no --enforce-eager, which costs decode speed in production.
)
(( tp > 1 )) && args+=(--tensor-parallel-size "$tp")
[[ -n "${VLLM_MAX_NUM_BATCHED_TOKENS:-}" ]] && args+=(--max-num-batched-tokens "$VLLM_MAX_NUM_BATCHED_TOKENS")
[[ -n "${VLLM_TOKENIZER:-}" ]] && args+=(--tokenizer "$VLLM_TOKENIZER")
if [[ -n "${VLLM_EXTRA_ARGS:-}" ]]; then
  read -r -a extra <<< "$VLLM_EXTRA_ARGS"
  args+=("${extra[@]}")
fi

summary="gpu: ${cap:-unknown} ($gpu_class); weights: $weights${checkpoint_quant:+ (checkpoint: $checkpoint_quant)}; kv cache: $kv_dtype; api key: $([[ -n "${VLLM_API_KEY:-}" ]] && echo set || echo none)"
if [[ "${VLLM_DRY_RUN:-0}" == 1 ]]; then
  echo "# $summary"
  line=$(printf '%q ' "${env_args[@]}" "$vllm_bin" "${args[@]}")
  echo "${line% }"
  exit 0
fi
note "$summary"

# Our own settings are consumed; vLLM reads VLLM_* variables of its own (VLLM_PORT among them),
# so do not hand ours on. VLLM_API_KEY stays: vLLM reads it.
unset VLLM_MODEL VLLM_SERVED_MODEL_NAME VLLM_HOST VLLM_PORT VLLM_WEIGHTS VLLM_KV_CACHE_DTYPE \
  VLLM_MAX_MODEL_LEN VLLM_MAX_NUM_SEQS VLLM_SWEEP_REPORT VLLM_GPU_MEMORY_UTILIZATION \
  VLLM_TENSOR_PARALLEL_SIZE VLLM_MAX_NUM_BATCHED_TOKENS VLLM_TOKENIZER VLLM_EXTRA_ARGS \
  VLLM_GPU_COMPUTE_CAP VLLM_BIN VLLM_DRY_RUN VLLM_ALLOW_NO_API_KEY
for assignment in "${env_args[@]}"; do export "${assignment?}"; done
exec "$vllm_bin" "${args[@]}"
