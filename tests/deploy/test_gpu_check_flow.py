"""gpu_check.sh end to end on a machine without a GPU.

`VLLM_BIN` points at a stand-in for the `vllm` executable that serves the OpenAI-compatible
emulator (tests/emulators/openai_server.py) on the port, model name, --max-num-seqs and
VLLM_API_KEY that start.sh passes, exactly where vLLM would. Everything else is the real script:
start.sh, the /health wait, the sweep, the quality-gate step and the docs writer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from django.core.management import get_commands

from bench.perf_report import BEGIN, END
from inbox.site.embedded_redis import free_port

ROOT = Path(__file__).resolve().parents[2]

VLLM_STAND_IN = """#!{python}
import os, signal, sys, threading
sys.path.insert(0, {root!r})
from tests.emulators.openai_server import OpenAIEmulator

args = sys.argv[1:]
if args == ["--version"]:
    print("0.0.0 (emulator)")
    sys.exit(0)
assert args[0] == "serve", args
with open(os.environ["STAND_IN_ARGV"], "w") as f:
    f.write("\\n".join(args))
def value(flag):
    return args[args.index(flag) + 1]
emu = OpenAIEmulator((value("--served-model-name"),), api_key=os.environ.get("VLLM_API_KEY"),
                     max_num_seqs=int(value("--max-num-seqs")), port=int(value("--port")))
emu.start()
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
stop.wait()
emu.stop()
"""


def test_gpu_check_serves_sweeps_and_writes_the_docs(tmp_path: Path) -> None:
    model = tmp_path / "Qwen2.5-0.5B-Instruct"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
        "hidden_size": 896, "vocab_size": 151936, "max_position_embeddings": 32768,
    }))  # fmt: skip
    stand_in = tmp_path / "vllm"
    stand_in.write_text(VLLM_STAND_IN.format(python=sys.executable, root=str(ROOT)))
    stand_in.chmod(0o755)
    docs = tmp_path / "performance.md"
    docs.write_text((ROOT / "docs" / "performance.md").read_text())
    out_dir = tmp_path / "gpu-check"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VLLM_", "GPU_CHECK_"))}
    env.update(
        VLLM_MODEL_PATH=str(model), VLLM_BIN=str(stand_in), PYTHON=sys.executable,
        GPU_CHECK_PORT=str(free_port()), GPU_CHECK_LEVELS="1,2", GPU_CHECK_REQUESTS="3",
        GPU_CHECK_OUT=str(out_dir), GPU_CHECK_DOCS=str(docs), GPU_CHECK_BUDGET_S="120",
        GPU_CHECK_STARTUP_S="30", STAND_IN_ARGV=str(tmp_path / "argv"),
    )  # fmt: skip
    proc = subprocess.run(["bash", "deploy/vllm/gpu_check.sh"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=150)  # fmt: skip
    has_eval = "assistant_eval" in get_commands()
    assert proc.returncode == (0 if has_eval else 3), proc.stdout + proc.stderr

    # start.sh launched "vllm" with the check's settings.
    argv = (tmp_path / "argv").read_text().splitlines()
    assert argv[:2] == ["serve", str(model)]
    assert argv[argv.index("--max-num-seqs") + 1] == "2"
    assert argv[argv.index("--max-model-len") + 1] == "12288"
    assert argv[argv.index("--host") + 1] == "127.0.0.1"

    # The sweep ran against it with the key and read its /metrics.
    report = json.loads((out_dir / "sweep.json").read_text())
    assert [lv["ok"] for lv in report["levels"]] == [3, 3]
    assert report["metrics_available"] is True
    assert report["best_concurrency"] == 2

    # The docs page got the results between the markers, the rest kept.
    text = docs.read_text()
    assert text.startswith("# Performance\n")
    section = text[text.index(BEGIN) : text.index(END)]
    assert "No GPU run recorded yet" not in text
    assert "- vllm: 0.0.0 (emulator)" in section
    assert f"- model: {model}" in section
    assert "| 2 | 3 / 3 |" in section
    assert "**2** (VLLM_MAX_NUM_SEQS=2)" in section
    if not has_eval:
        assert "Not run: this checkout has no `assistant_eval` command." in section

    # The server was stopped: nothing listens on the port any more.
    health = subprocess.run(
        [sys.executable, "-c", "import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)",
         f"http://127.0.0.1:{env['GPU_CHECK_PORT']}/health"],
        capture_output=True,
    )  # fmt: skip
    assert health.returncode != 0
