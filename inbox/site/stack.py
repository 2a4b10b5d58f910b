"""`make run`: the whole system on one machine, stopped together by Ctrl-C.

Starts (in this order) an embedded Redis when REDIS_URL is unset, migrations, the static files,
the demo data, then daphne (HTTP + websockets), the ingest consumer, one Celery worker (on the
assistant queue among others, so it also runs the debounce scheduler thread), one Celery worker
on the `bulk` queue alone (price-list parsing, replays) and Celery beat.
Each child gets SIGTERM when this process stops, and dies with it if this process is killed.

DEBUG is off unless the environment says DEBUG=1 (`DEBUG=1 make run` for development): the
pages, error pages and headers are those of production. The secrets are generated once into
VAR_DIR (inbox/site/local_secrets.py), where `python manage.py …` finds them too. The site is
served over plain http on 127.0.0.1, so the HTTPS-only settings (redirect, secure cookies) are
off for these processes unless the environment sets them (a TLS proxy in front).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from inbox.site.embedded_redis import die_with_parent, free_port, start_redis, stop
from inbox.site.local_llm import LocalModelUnavailable, start_local_llm
from inbox.site.local_secrets import ensure_local_secrets

BASE_DIR = Path(__file__).resolve().parents[2]
VAR_DIR = Path(os.environ.get("VAR_DIR", BASE_DIR / "var"))


# Settings that assume HTTPS; `make run` serves plain http on 127.0.0.1 (on with DEBUG off
# otherwise, inbox/site/settings.py).
HTTP_ONLY = ("SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE")


@dataclass
class Service:
    name: str
    argv: list[str]


def services(python: str, port: int) -> list[Service]:
    manage = [python, str(BASE_DIR / "manage.py")]
    return [
        Service("web", [python, "-m", "inbox.site.web_server", "-b", "127.0.0.1", "-p", str(port),
                        "inbox.site.asgi:application"]),
        Service("ingest", [*manage, "ingest_worker"]),
        Service("worker", [python, "-m", "celery", "-A", "inbox", "worker", "--loglevel", "INFO",
                           "-Q", "default,assistant,speech,integrations", "--concurrency", "2",
                           "--hostname", "worker@%h"]),
        # Admins' bulk jobs (price-list parsing, replays) on a pool of their own: a tenant's
        # spreadsheet never holds up another tenant's bot.
        Service("worker-bulk", [python, "-m", "celery", "-A", "inbox", "worker", "--loglevel",
                                "INFO", "-Q", "bulk", "--concurrency", "1",
                                "--hostname", "bulk@%h"]),
        Service("beat", [python, "-m", "celery", "-A", "inbox", "beat", "--loglevel", "INFO",
                         "--schedule", str(VAR_DIR / "celerybeat-schedule")]),
    ]  # fmt: skip


def run() -> int:
    python = sys.executable
    port = int(os.environ.get("PORT", "8000"))
    env = dict(os.environ)
    env.setdefault("PYTHONUNBUFFERED", "1")
    env.setdefault("LOG_FORMAT", "plain")  # a terminal, not a log shipper
    # Invitations and alert mails show on this terminal instead of needing an SMTP server.
    env.setdefault("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
    for name in HTTP_ONLY:
        env.setdefault(name, "0")
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    ensure_local_secrets(VAR_DIR)
    # Every process writes its metrics here; /metrics adds them up. Stale files would be
    # counted as live processes, so the folder starts empty.
    metrics_dir = Path(env.setdefault("PROMETHEUS_MULTIPROC_DIR", str(VAR_DIR / "prometheus")))
    shutil.rmtree(metrics_dir, ignore_errors=True)
    metrics_dir.mkdir(parents=True)

    redis_server = None
    if not env.get("REDIS_URL"):
        redis_port = int(env.get("REDIS_PORT", "0")) or free_port()
        redis_server = start_redis(redis_port, VAR_DIR / "redis", persistent=True)
        env["REDIS_URL"] = f"redis://127.0.0.1:{redis_port}/0"
        print(f"[run] embedded Redis on 127.0.0.1:{redis_port} (data in {VAR_DIR / 'redis'})")

    children: list[tuple[Service, subprocess.Popen[bytes]]] = []
    local_llm = None
    try:
        if env.get("INBOX_LLM") == "local" and not env.get("LLM_BASE_URL"):
            # `make run LLM=local`: a real model on this CPU (llama_cpp.server, a GGUF shipped
            # in a pip package or LLM_GGUF), instead of the catalogue assistant.

            try:
                local_llm = start_local_llm(log_file=VAR_DIR / "llama-server.log")
            except LocalModelUnavailable as exc:
                print(f"[run] {exc}")
                return 1
            env.update(local_llm.env())
            print(f"[run] local model at {local_llm.base_url}")
        manage = [python, str(BASE_DIR / "manage.py")]
        subprocess.run([*manage, "migrate", "--noinput"], env=env, check=True)
        if env.get("DEBUG", "").strip().lower() not in {"1", "true", "yes", "on"}:
            # WhiteNoise serves VAR_DIR/staticfiles when DEBUG is off.
            subprocess.run([*manage, "collectstatic", "--noinput", "-v", "0"], env=env, check=True)
        subprocess.run([*manage, "seed_demo"], env=env, check=True)
        for service in services(python, port):
            process = subprocess.Popen(
                service.argv, env=env, cwd=BASE_DIR, start_new_session=True,
                preexec_fn=die_with_parent,
            )  # fmt: skip
            children.append((service, process))
            print(f"[run] started {service.name} (pid {process.pid})")
        print(f"[run] inbox on http://127.0.0.1:{port}/inbox/  (Ctrl-C stops everything)")
        while True:
            for service, process in children:
                if process.poll() is not None:
                    print(f"[run] {service.name} exited with {process.returncode}; stopping")
                    return 1
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("\n[run] stopping")
        return 0
    except subprocess.CalledProcessError as exc:
        print(f"[run] {' '.join(map(str, exc.cmd))} failed with {exc.returncode}")
        return 1
    finally:
        for _service, process in reversed(children):
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + 15
        for _service, process in reversed(children):
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if local_llm is not None:
            local_llm.stop()
        if redis_server is not None:
            stop(redis_server)
        print("[run] all processes stopped")


def _stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    # Started in the background by a script, SIGINT arrives ignored; Ctrl-C / kill -INT must
    # still stop everything.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(run())
