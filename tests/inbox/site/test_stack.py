"""`make run`'s supervisor: the whole system comes up on a fresh folder and stops on Ctrl-C."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import psutil
import pytest

from inbox.site.embedded_redis import free_port
from tests.processes import ROOT, wait_for


@pytest.mark.timeout(180)
def test_run_serves_health_and_admin_login_then_ctrl_c_stops_every_process(tmp_path: Path) -> None:
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "REDIS_URL", "TESTING", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(VAR_DIR=str(tmp_path), PORT=str(port), DJANGO_SUPERUSER_PASSWORD="run-test-pw-1")
    log_path = tmp_path / "run.log"
    with open(log_path, "wb") as log:
        stack = subprocess.Popen(
            [sys.executable, "-m", "inbox.site.stack"], cwd=ROOT, env=env, stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:

        def healthy() -> bool:
            assert stack.poll() is None, log_path.read_text()
            try:
                return httpx.get(f"{base}/healthz", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        wait_for(healthy, timeout=120, interval=0.5, message="/healthz to answer 200")
        children = psutil.Process(stack.pid).children(recursive=True)
        names = " ".join(" ".join(child.cmdline()) for child in children)
        assert "inbox.site.web_server" in names  # daphne with the masked access log
        assert "celery" in names
        assert " worker" in names
        assert " beat" in names
        assert "redis-server" in names
        assert "ingest_worker" in names

        # Daphne's access log is written past Python's logging: it must mask by itself.
        httpx.get(f"{base}/inbox/?q=77010000001", timeout=5)
        httpx.get(f"{base}/webhooks/whatsapp/?hub.mode=subscribe&hub.verify_token=tok-5551234")
        wait_for(lambda: "hub.verify_token=***" in log_path.read_text(), timeout=10,
                 interval=0.2, message="the access log line")  # fmt: skip
        assert "77010000001" not in log_path.read_text()
        assert "tok-5551234" not in log_path.read_text()

        with httpx.Client(base_url=base, follow_redirects=True) as client:
            page = client.get("/admin/login/")
            token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
            assert token
            answer = client.post(
                "/admin/login/?next=/admin/",
                data={
                    "csrfmiddlewaretoken": token.group(1),
                    "username": "admin",
                    "password": "run-test-pw-1",
                },
                headers={"Referer": f"{base}/admin/login/"},
            )
            assert answer.status_code == 200
            assert "Site administration" in answer.text
            assert "Demo Furniture" in client.get("/admin/inbox/business/").text

        stack.send_signal(signal.SIGINT)
        assert stack.wait(timeout=60) == 0
        still_running = [
            child
            for child in children
            if child.is_running() and child.status() != psutil.STATUS_ZOMBIE
        ]
        assert still_running == [], [child.cmdline() for child in still_running]
        assert "all processes stopped" in log_path.read_text()
    finally:
        if stack.poll() is None:
            stack.kill()
