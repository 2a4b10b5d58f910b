"""`make run`'s supervisor: the whole system comes up on a fresh folder and stops on Ctrl-C,
safe to expose: DEBUG off, the site's own error pages, the security headers, static files
served, and `python manage.py …` by hand using the same generated secrets."""

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
        if key
        not in {"DATABASE_URL", "REDIS_URL", "TESTING", "DJANGO_SETTINGS_MODULE", "DEBUG",
                "SECRET_KEY", "FIELD_ENCRYPTION_KEY"}
    }  # fmt: skip
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
        assert "-Q bulk" in names  # admins' bulk jobs on a pool of their own
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

        # DEBUG is off: an anonymous visitor gets the site's own 404, not the URL list.
        missing = httpx.get(f"{base}/no/such/page/", timeout=5)
        assert missing.status_code == 404
        assert "Page not found" in missing.text
        assert "URLconf" not in missing.text
        assert "urlpatterns" not in missing.text
        # Plain http on 127.0.0.1: no redirect to https; the headers and static files are there.
        login = httpx.get(f"{base}/accounts/login/", timeout=5)
        assert login.status_code == 200
        assert "script-src 'self'" in login.headers["Content-Security-Policy"]
        assert login.headers["X-Content-Type-Options"] == "nosniff"
        assert login.headers["X-Frame-Options"] == "DENY"
        assert httpx.get(f"{base}/static/inbox/app.css", timeout=5).status_code == 200
        assert httpx.get(f"{base}/static/vendor/htmx.min.js", timeout=5).status_code == 200

        # A README command by hand, with no secret in the environment: it finds the stack's
        # generated ones in VAR_DIR, and what it writes is what the running stack reads.
        made = subprocess.run(
            [sys.executable, "manage.py", "create_api_token", "admin", "--name", "by hand"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        token = made.stdout.strip().splitlines()[-1].strip()
        chats = httpx.get(f"{base}/api/v1/chats", timeout=10,
                          headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        assert chats.status_code == 200, chats.text

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
            # The demo shop's admin works in Russian (assistant/demo.py), Django's admin too.
            assert "Администрирование сайта" in answer.text
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
