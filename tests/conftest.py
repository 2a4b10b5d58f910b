"""Shared fixtures: the real database, the real Redis, real worker processes.

Nothing of ours is mocked. Outside systems are emulated over real HTTP in tests/emulators/.
"""

from __future__ import annotations

import os

os.environ.setdefault("TESTING", "1")

from collections.abc import Iterator

import pytest

from inbox.platform.redis import get_redis
from inbox.site import locale_build
from tests.processes import ProcessGroup, database_url_for_subprocesses

# The Russian and Kazakh pages read compiled catalogues (.mo, build output): a test run started
# without `make test` builds the stale ones too.
locale_build.compile_all()


@pytest.fixture(autouse=True)
def _clean_redis() -> Iterator[None]:
    """Each test starts with an empty Redis database (dedup keys, debounce, breaker state)."""
    get_redis().flushdb()
    return


@pytest.fixture(autouse=True)
def _fresh_team_names() -> None:
    """A business id may come back in a later test: no display name is remembered across."""
    from inbox.conversations import names
    from inbox.web import local_language

    names.forget_all()
    local_language.forget_all()


@pytest.fixture
def redis_client():  # type: ignore[no-untyped-def]
    return get_redis()


@pytest.fixture(scope="session")
def subprocess_env(django_db_setup: None, django_db_blocker) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """Environment for processes that must use the test database and the test Redis."""
    with django_db_blocker.unblock():
        url = database_url_for_subprocesses()
    return {**os.environ, "DATABASE_URL": url, "TESTING": "1", "PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="module")
def celery_worker(subprocess_env: dict[str, str]) -> Iterator[ProcessGroup]:
    """A real Celery worker process on every queue (not eager mode), for one test module: each
    module's worker runs with that module's settings."""
    group = ProcessGroup(subprocess_env)
    group.start_celery_worker("worker-1")
    yield group
    group.stop_all()


@pytest.fixture
def processes(subprocess_env: dict[str, str]) -> Iterator[ProcessGroup]:
    """Processes a single test starts (and may kill); all are stopped at the end of the test."""
    group = ProcessGroup(subprocess_env)
    yield group
    group.stop_all()
