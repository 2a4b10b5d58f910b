"""Starting and stopping real processes of ours (Celery workers, daphne, the ingest consumer, the
debounce scheduler) for tests, and polling for the effects of asynchronous work without sleeping
blindly."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from django.db import connection

from inbox.site.embedded_redis import free_port

ROOT = Path(__file__).resolve().parent.parent
# Every queue of inbox.site.celery (tests/deploy/test_topology.py keeps the deploy files to it).
ALL_QUEUES = "default,assistant,speech,integrations,bulk"
LOG_DIR = ROOT / "var" / "test-logs"
T = TypeVar("T")


def wait_for(
    predicate: Callable[[], T], timeout: float = 20.0, interval: float = 0.05, message: str = ""
) -> T:
    """Poll until `predicate()` returns something truthy; fail the test after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {message or predicate}")
        time.sleep(interval)


def database_url_for_subprocesses() -> str:
    """A DATABASE_URL naming the test database pytest-django created."""
    s = connection.settings_dict
    if s["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{s['NAME']}"
    auth = quote(s["USER"] or "")
    if s.get("PASSWORD"):
        auth += ":" + quote(s["PASSWORD"])
    host = s["HOST"] or "127.0.0.1"
    port = s["PORT"] or "5432"
    return f"postgres://{auth}@{host}:{port}/{s['NAME']}"


class ProcessGroup:
    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        LOG_DIR.mkdir(parents=True, exist_ok=True)

    def start(
        self, name: str, argv: list[str], env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        log = open(LOG_DIR / f"{name}.log", "ab")  # noqa: SIM115 - owned by the process
        proc = subprocess.Popen(
            argv, cwd=ROOT, env={**self.env, **(env or {})}, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        self.procs[name] = proc
        return proc

    def start_celery_worker(
        self,
        name: str,
        env: dict[str, str] | None = None,
        concurrency: int = 2,
        queues: str = ALL_QUEUES,
    ) -> subprocess.Popen[bytes]:
        """A worker on `queues` (by default every queue, so one worker runs everything)."""
        proc = self.start(
            name,
            [sys.executable, "-m", "celery", "-A", "inbox", "worker", "--loglevel", "INFO",
             "-Q", queues, "--concurrency", str(concurrency),
             "--hostname", f"{name}@%h", "--without-gossip", "--without-mingle"],
            env,
        )  # fmt: skip
        self.wait_celery_ready(name)
        return proc

    def wait_celery_ready(self, name: str, timeout: float = 60) -> None:
        log = LOG_DIR / f"{name}.log"
        start = log.stat().st_size if log.exists() else 0

        def ready() -> bool:
            proc = self.procs[name]
            if proc.poll() is not None:
                raise AssertionError(f"{name} exited: see {log}")
            with open(log, "rb") as f:
                f.seek(start)
                return b"ready." in f.read()

        wait_for(ready, timeout, 0.1, f"celery worker {name} to be ready")

    def start_debounce_scheduler(
        self, name: str, env: dict[str, str] | None = None, lease_seconds: float = 2.0
    ) -> subprocess.Popen[bytes]:
        """`manage.py debounce_scheduler`, returned once it listens for new timers."""
        from inbox.conversations import debounce
        from inbox.platform.redis import get_redis

        def listeners() -> int:
            return int(dict(get_redis().pubsub_numsub(debounce.WAKE_CHANNEL))[
                debounce.WAKE_CHANNEL.encode()
            ])  # fmt: skip

        before = listeners()
        proc = self.start(
            name,
            [sys.executable, "manage.py", "debounce_scheduler", "--lease-seconds",
             str(lease_seconds)],
            env,
        )  # fmt: skip

        def ready() -> bool:
            if proc.poll() is not None:
                raise AssertionError(f"{name} exited: see {LOG_DIR / (name + '.log')}")
            return listeners() > before

        wait_for(ready, 60, 0.1, f"debounce scheduler {name} to be ready")
        return proc

    def start_daphne(self, name: str = "web", port: int | None = None) -> str:
        """daphne serving the whole app (pages, API, websockets, webhooks); its base URL."""
        port = port or free_port()
        argv = [sys.executable, "-m", "inbox.site.web_server", "-b", "127.0.0.1", "-p", str(port),
                "inbox.site.asgi:application"]  # fmt: skip
        return self._start_listening(name, argv, port, "daphne")

    def start_webhook_server(self, name: str = "webhooks", port: int | None = None) -> str:
        """The webhook server (uvicorn, the webhook routes only); its base URL."""
        port = port or free_port()
        argv = [sys.executable, "-m", "inbox.site.webhook_server", "-b", "127.0.0.1", "-p",
                str(port)]  # fmt: skip
        return self._start_listening(name, argv, port, "the webhook server")

    def _start_listening(self, name: str, argv: list[str], port: int, what: str) -> str:
        self.start(name, argv)
        import socket

        def listening() -> bool:
            if self.procs[name].poll() is not None:
                raise AssertionError(f"{name} exited: see {LOG_DIR / (name + '.log')}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                return True
            except OSError:
                return False

        wait_for(listening, 30, 0.1, f"{what} on port {port}")
        return f"http://127.0.0.1:{port}"

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[name]
        if proc.poll() is None:
            os.killpg(proc.pid, sig)
            proc.wait(timeout=30)

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def stop_all(self) -> None:
        for name in list(self.procs):
            self.stop(name)


def ingest_drained() -> bool:
    """Everything the webhooks queued has been accepted by the ingest consumer."""
    from inbox.conversations import ingest
    from inbox.platform.redis import get_redis

    client = get_redis()
    if client.xlen(ingest.STREAM):
        return False
    try:
        return int(client.xpending(ingest.STREAM, ingest.GROUP)["pending"]) == 0
    except Exception:
        return True
