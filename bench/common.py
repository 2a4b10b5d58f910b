"""What every benchmark shares: Django setup, the servers under test as real processes, process
CPU time, percentiles, machine info and the load generator (wrk, or a labelled Python fallback).

Benchmarks run against the services in the environment (`DATABASE_URL`, `REDIS_URL`): they write
rows into that database and keys into that Redis database, and delete the Redis keys they made.
Never point them at production.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LOG_DIR = ROOT / "var" / "bench-logs"
if str(ROOT) not in sys.path:  # run as a script: make the repository importable
    sys.path.insert(0, str(ROOT))

from bench.llm_sweep import percentile  # noqa: E402

__all__ = ["percentile"]


def setup_django() -> None:
    """Settings from the environment, as the servers get them. TESTING only relaxes the
    development secrets (no SECRET_KEY needed); nothing in the hot paths reads it."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inbox.site.settings")
    os.environ.setdefault("TESTING", "1")
    os.environ.setdefault("LOG_LEVEL", "WARNING")  # this process's own logs; servers get theirs
    import django

    django.setup()


def migrate() -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ms(seconds: float | None, digits: int = 2) -> float | None:
    return None if seconds is None else round(seconds * 1000, digits)


def pct_ms(values_s: list[float], q: float) -> float | None:
    return ms(percentile(values_s, q))


def wait_until(
    predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def subprocess_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **extra}
    env.setdefault("TESTING", "1")
    env.setdefault("DJANGO_SETTINGS_MODULE", "inbox.site.settings")
    return env


# --- processes --------------------------------------------------------------------------------


@dataclass
class Proc:
    """A process of ours started for a benchmark, in its own process group."""

    name: str
    popen: subprocess.Popen[bytes]
    log_path: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def cpu_seconds(self) -> float:
        """User + system CPU of the process and all its children (uvicorn workers, Celery
        prefork children)."""
        import psutil

        try:
            root = psutil.Process(self.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0.0
        total = 0.0
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                times = proc.cpu_times()
                total += times.user + times.system
        return total

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 20) -> None:
        if self.popen.poll() is not None:
            return
        try:
            os.killpg(self.popen.pid, signal.SIGTERM)
            self.popen.wait(timeout=timeout)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()


def start(name: str, argv: list[str], env: dict[str, str]) -> Proc:
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log_path = LOG_DIR / f"{name}.log"
    log = open(log_path, "ab")  # noqa: SIM115 - owned by the process
    popen = subprocess.Popen(
        argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    return Proc(name, popen, log_path)


def wait_listening(proc: Proc, port: int, timeout: float = 60) -> None:
    def listening() -> bool:
        if not proc.alive():
            raise RuntimeError(f"{proc.name} exited: see {proc.log_path}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            return False

    wait_until(listening, timeout, f"{proc.name} on port {port}", 0.1)


SERVERS = ("uvicorn", "daphne")


def start_server(
    server: str, app: str, env: dict[str, str], *, workers: int = 1, name: str = ""
) -> tuple[Proc, str]:
    """`app` ("module:attr") under uvicorn (uvloop + httptools, no access log) or daphne, on
    a free loopback port. Returns the process and its base URL."""
    port = free_port()
    if server == "uvicorn":
        argv = [
            sys.executable,
            "-m",
            "uvicorn",
            app,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--no-access-log",
            "--log-level",
            "warning",
            "--lifespan",
            "off",
        ]
        if workers > 1:
            argv += ["--workers", str(workers)]
    elif server == "daphne":
        if workers != 1:
            raise ValueError("daphne runs one process; start several behind a balancer instead")
        argv = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "-v", "0", app]
    else:
        raise ValueError(f"unknown server {server!r}")
    proc = start(name or f"{server}-{app.replace(':', '-')}", argv, env)
    wait_listening(proc, port)
    return proc, f"http://127.0.0.1:{port}"


@contextlib.contextmanager
def running(procs: list[Proc]) -> Iterator[list[Proc]]:
    try:
        yield procs
    finally:
        for proc in reversed(procs):
            proc.stop()


# --- load generation --------------------------------------------------------------------------


@dataclass
class LoadResult:
    generator: str  # "wrk" | "python-asyncio (fallback: wrk not installed)"
    requests: int
    duration_s: float
    errors: dict[str, int]
    latency_ms: dict[str, float | None]
    statuses: dict[str, int] = field(default_factory=dict)

    @property
    def rps(self) -> float:
        return self.requests / self.duration_s if self.duration_s else 0.0

    @property
    def failed(self) -> int:
        return sum(self.errors.values())


WRK_SCRIPT = ROOT / "bench" / "wrk_webhooks.lua"
PYTHON_GENERATOR = "python-asyncio (fallback: wrk not installed)"


def wrk_available() -> bool:
    return shutil.which("wrk") is not None


def generate_load(
    base_url: str,
    corpus: Path,
    *,
    duration_s: float,
    connections: int,
    threads: int = 1,
    delay_ms: int = 0,
    path: str = "/webhooks/whatsapp/",
) -> LoadResult:
    """POST the corpus (see bench/wrk_webhooks.lua) at `base_url + path` for `duration_s`."""
    if wrk_available():
        return _wrk(base_url, corpus, duration_s, connections, threads, delay_ms, path)
    return asyncio.run(_python_load(base_url, corpus, duration_s, connections, delay_ms, path))


def _wrk(
    base_url: str,
    corpus: Path,
    duration_s: float,
    connections: int,
    threads: int,
    delay_ms: int,
    path: str,
) -> LoadResult:
    threads = max(1, min(threads, connections))
    argv = [
        "wrk",
        "-t",
        str(threads),
        "-c",
        str(connections),
        "-d",
        f"{max(1, round(duration_s))}s",
        "--timeout",
        "10s",
        "-s",
        str(WRK_SCRIPT),
        base_url,
        "--",
        str(corpus),
        str(threads),
        path,
    ]
    env = {**os.environ, "WRK_DELAY_MS": str(delay_ms)}
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=duration_s + 60)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith('{"requests"')), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"wrk failed ({proc.returncode}): {proc.stdout[-2000:]}{proc.stderr}")
    data = json.loads(line)
    lat = data["latency_us"]
    return LoadResult(
        generator="wrk",
        requests=int(data["requests"]),
        duration_s=data["duration_us"] / 1e6,
        errors={k: int(v) for k, v in data["errors"].items()},
        latency_ms={k: round(float(v) / 1000, 3) for k, v in lat.items()},
    )


def read_corpus(corpus: Path) -> list[tuple[str, bytes]]:
    rows = []
    for line in corpus.read_bytes().splitlines():
        signature, _, body = line.partition(b"\t")
        rows.append((signature.decode(), body))
    return rows


async def _python_load(
    base_url: str, corpus: Path, duration_s: float, connections: int, delay_ms: int, path: str
) -> LoadResult:
    """A keep-alive HTTP/1.1 client on asyncio streams: same corpus, same pacing rule as the wrk
    script. Slower than wrk (its own CPU competes with the server on a small machine), so its
    figures are labelled with the generator's name."""
    host, port = base_url.removeprefix("http://").split(":")
    rows = read_corpus(corpus)
    raw = [
        (
            f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
            f"X-Hub-Signature-256: {sig}\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        + body
        for sig, body in rows
    ]
    latencies: list[float] = []
    statuses: dict[str, int] = {}
    errors = {"connect": 0, "read": 0, "write": 0, "status": 0, "timeout": 0}
    deadline = time.perf_counter() + duration_s
    counter = iter(range(10**12))

    async def connection() -> None:
        try:
            reader, writer = await asyncio.open_connection(host, int(port))
        except OSError:
            errors["connect"] += 1
            return
        try:
            while time.perf_counter() < deadline:
                request = raw[next(counter) % len(raw)]
                started = time.perf_counter()
                writer.write(request)
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                length = 0
                for header in head.split(b"\r\n")[1:]:
                    name, _, value = header.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                if length:
                    await reader.readexactly(length)
                latencies.append(time.perf_counter() - started)
                status = head.split(b" ", 2)[1].decode()
                statuses[status] = statuses.get(status, 0) + 1
                if not status.startswith("2"):
                    errors["status"] += 1
                if delay_ms:
                    await asyncio.sleep(delay_ms / 1000)
        except (TimeoutError, asyncio.IncompleteReadError, OSError):
            errors["read"] += 1
        finally:
            writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(connections)))
    wall = time.perf_counter() - started
    return LoadResult(
        generator=PYTHON_GENERATOR,
        requests=len(latencies),
        duration_s=wall,
        errors=errors,
        latency_ms={
            "mean": ms(sum(latencies) / len(latencies), 3) if latencies else None,
            "p50": ms(percentile(latencies, 50), 3),
            "p90": ms(percentile(latencies, 90), 3),
            "p99": ms(percentile(latencies, 99), 3),
            "max": ms(max(latencies), 3) if latencies else None,
        },
        statuses=statuses,
    )


# --- machine info -----------------------------------------------------------------------------


def _version(module: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(module)
    except PackageNotFoundError:
        return None


def machine_info() -> dict[str, Any]:
    """Where the figures come from: they mean little without the machine and versions."""
    import psutil

    cpu_model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    info: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu_model": cpu_model,
        "cpu_count": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "load_avg_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
        "packages": {
            name: _version(name)
            for name in (
                "django",
                "channels",
                "channels-redis",
                "daphne",
                "uvicorn",
                "uvloop",
                "httptools",
                "redis",
                "celery",
                "psycopg",
            )
        },
        "load_generator": _wrk_version() if wrk_available() else PYTHON_GENERATOR,
    }
    with contextlib.suppress(Exception):
        from inbox.platform.redis import get_redis

        info["redis_server"] = get_redis().info("server").get("redis_version")
    with contextlib.suppress(Exception):
        from django.db import connection

        info["database"] = connection.vendor
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SHOW server_version")
                info["database"] = f"postgresql {cursor.fetchone()[0]}"
    with contextlib.suppress(Exception):
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=5,
        )
        info["git_commit"] = commit.stdout.strip()
    return info


def _wrk_version() -> str:
    proc = subprocess.run(["wrk", "--version"], capture_output=True, text=True)
    first = (proc.stdout or proc.stderr).splitlines()
    return first[0].split("Copyright")[0].strip() if first else "wrk"


def delete_keys(pattern: str) -> int:
    """UNLINK every key matching `pattern` in the benchmark's Redis database."""
    from inbox.platform.redis import get_redis

    client = get_redis()
    removed = 0
    batch: list[bytes] = []
    for key in client.scan_iter(match=pattern, count=1000):
        batch.append(key)
        if len(batch) >= 1000:
            removed += int(client.unlink(*batch))
            batch.clear()
    if batch:
        removed += int(client.unlink(*batch))
    return removed


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n")
