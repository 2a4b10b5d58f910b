"""What every browser test uses: the Chromium it drives, logging a manager in, watching a page
for Content-Security-Policy refusals, screenshots, and running our code the way a worker does."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from django.db import connection

from tests.processes import ROOT

__all__ = ["ROOT"]

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"
PHONE_NUMBER_ID = "106540352242922"
GRAPH_TOKEN = "browser-token"
CUSTOMER = "77011234567"
PASSWORD = "browser-test-pw-1"
DESKTOP = {"width": 1366, "height": 860}
PHONE = {"width": 390, "height": 844}
T = TypeVar("T")

# What the browser refused under the site's Content-Security-Policy, from every page watched
# (cleared before each test by the conftest).
csp_violations: list[str] = []


def chromium_path() -> str | None:
    return CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")


def watched(page: Any) -> Any:
    """The page, with its console watched for Content-Security-Policy refusals (an inline
    script or style, an eval, a connection the policy does not allow)."""
    page.on(
        "console",
        lambda message: (
            csp_violations.append(f"{page.url}: {message.text}")
            if "Content Security Policy" in message.text
            else None
        ),
    )
    return page


def logged_in(
    browser: Any,
    base: str,
    username: str,
    *,
    viewport: dict[str, int] | None = None,
    timezone_id: str | None = None,
) -> Any:
    """A new browser context (its own cookies) with `username` logged in, on the inbox; with
    `timezone_id`, the browser's own clock is in that zone."""
    extra = {"timezone_id": timezone_id} if timezone_id else {}
    context = browser.new_context(viewport=viewport or DESKTOP, **extra)
    page = watched(context.new_page())
    page.goto(f"{base}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/inbox/")
    return page


def shot(page: Any, name: str) -> None:
    """A full-page screenshot under test-artifacts/ (gitignored; CI keeps it as an artifact)."""
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def in_thread(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run one of our functions the way a worker does: in a thread without an event loop
    (Playwright's sync API keeps one in the test's thread, and realtime pushes refuse to run
    inside a loop)."""
    results: list[T] = []

    def run() -> None:
        try:
            results.append(function(*args, **kwargs))
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert results, f"{function.__name__} failed; see the log above"
    return results[0]
