"""One live stack and one Chromium for every browser test.

Starting daphne, the ingest consumer, a Celery worker and a browser costs seconds each; the
browser tests share them. Each test still gets an empty database (transactional tests flush it),
an empty Redis (tests/conftest.py) and a reset WhatsApp emulator, so no test sees another's
chats. A test that needs processes with other settings starts its own with `processes`."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import OperationalError, connection
from django.test import TransactionTestCase

from inbox.conversations.models import Channel, Membership
from tests import factories
from tests.browser import support
from tests.emulators.graph_api import GraphApiEmulator
from tests.processes import ProcessGroup, wait_for

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Without a Chromium (make system-deps installs Debian's) the browser tests say so and skip."""
    if support.chromium_path() is not None:
        return
    skip = pytest.mark.skip(
        reason=f"Chromium not found at {support.CHROMIUM} (apt-get install chromium)"
    )
    here = str(support.ROOT / "tests" / "browser")
    for item in items:
        if str(item.path).startswith(here):
            item.add_marker(skip)


@pytest.fixture(scope="package", autouse=True)
def _flush_outlasts_the_stack() -> Iterator[None]:
    """The flush after each test TRUNCATEs every table while the shared stack may still be
    finishing the test's last action (a push rendered, a read marker saved). PostgreSQL can
    then pick the TRUNCATE as a deadlock victim, and the next test would start on the last
    one's rows; the flush waits for the stack's queries and tries again instead."""
    original = TransactionTestCase._fixture_teardown

    def teardown(self: TransactionTestCase) -> None:
        for attempt in range(1, FLUSH_ATTEMPTS + 1):
            try:
                original(self)
                return
            except OperationalError as exc:
                if "deadlock" not in str(exc) or attempt == FLUSH_ATTEMPTS:
                    raise
                wait_for(_others_quiet, timeout=10, interval=0.05, message="the stack's queries")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransactionTestCase, "_fixture_teardown", teardown)
        yield


FLUSH_ATTEMPTS = 3


def _others_quiet() -> bool:
    """No other session on the test database is running a query or holding a transaction."""
    if connection.vendor != "postgresql":
        return True
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND state <> 'idle'"
        )
        (busy,) = cursor.fetchone()
    return busy == 0


@pytest.fixture(scope="package")
def _session_graph() -> Iterator[GraphApiEmulator]:
    with GraphApiEmulator() as emulator:
        yield emulator


@pytest.fixture
def graph(_session_graph: GraphApiEmulator, settings: Any) -> GraphApiEmulator:
    """The WhatsApp Cloud API emulator the stack talks to, with this test's number registered
    and nothing sent yet."""
    _session_graph.reset()
    _session_graph.register_number(support.PHONE_NUMBER_ID, support.GRAPH_TOKEN)
    settings.WHATSAPP_GRAPH_URL = _session_graph.graph_url
    return _session_graph


@pytest.fixture(scope="package")
def stack(subprocess_env: dict[str, str], _session_graph: GraphApiEmulator) -> Iterator[str]:
    """The base URL of a running stack: daphne, the ingest consumer and a Celery worker on
    every queue, with WhatsApp played by the emulator."""
    env = {
        **subprocess_env,
        "WHATSAPP_GRAPH_URL": _session_graph.graph_url,
        "WHATSAPP_APP_SECRET": _session_graph.app_secret,
        # Every test makes its channel anew under the same number: no route kept between tests.
        "WHATSAPP_ROUTE_CACHE_SECONDS": "0",
        "WHATSAPP_ROUTE_STALE_SECONDS": "0",
    }
    group = ProcessGroup(env)
    try:
        base = group.start_daphne("browser-web")
        group.start("browser-ingest", [sys.executable, "manage.py", "ingest_worker"])
        group.start_celery_worker("browser-worker", concurrency=1)
        _session_graph.webhook_url = f"{base}/webhooks/whatsapp/"
        yield base
    finally:
        group.stop_all()


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    """One Chromium for the browser tests. Playwright's sync API keeps an event loop in the
    test's thread while it runs, so Django's guard against sync ORM calls inside a loop is
    lifted until it closes: the tests' own ORM calls (and the database flush after each test)
    are plain synchronous code in between."""
    with pytest.MonkeyPatch.context() as patch, sync_api.sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        launched = playwright.chromium.launch(
            executable_path=support.chromium_path(),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--autoplay-policy=no-user-gesture-required"],
        )  # fmt: skip
        yield launched
        launched.close()


@pytest.fixture(autouse=True)
def _browser_test_defaults() -> None:
    """Every test starts with no CSP refusal recorded and Playwright's patient expect()."""
    support.csp_violations.clear()
    sync_api.expect.set_options(timeout=20_000)


@pytest.fixture
def people() -> dict[str, Any]:
    """A business with one Cloud API number, an admin (anna) and a manager (boris)."""
    business = factories.business("Oak & Co")
    channel = factories.channel(
        business, kind=Channel.Kind.CLOUD_API, name="Main number",
        phone_number_id=support.PHONE_NUMBER_ID, access_token=support.GRAPH_TOKEN,
        # No turn runs during the test: the handoff is driven by the test itself.
        debounce_seconds=3600,
    )  # fmt: skip
    users = {}
    for username, first, role in [
        ("anna", "Anna", Membership.Role.ADMIN),
        ("boris", "Boris", Membership.Role.MANAGER),
    ]:
        user = get_user_model().objects.create_user(
            username=username, password=support.PASSWORD, first_name=first, last_name="Manager"
        )
        Membership.objects.create(user=user, business=business, role=role)
        users[username] = user
    return {"business": business, "channel": channel, **users}
