"""Fixtures for the Bitrix24 sync: a portal emulator over real HTTP and a business wired to it.

Retry delays are configured short (settings, and env vars for worker processes) so tests that
ride out rate limits and error storms finish in seconds; the logic is the production one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from inbox.conversations.models import Business
from integrations.bitrix24.models import Bitrix24Settings
from integrations.bitrix24.setup import config
from tests import factories
from tests.emulators.bitrix24 import Bitrix24Emulator

FAST = {
    "BITRIX24_BACKOFF_BASE": 0.05,
    "BITRIX24_BACKOFF_CAP": 0.5,
    "BITRIX24_RETRY_BASE": 0.2,
    "BITRIX24_RETRY_CAP": 2.0,
    "BITRIX24_MAX_BLOCK_WAIT": 10.0,
}


def fast_env() -> dict[str, str]:
    return {name: str(value) for name, value in FAST.items()}


@pytest.fixture(autouse=True)
def _fast_retries(settings: Any) -> None:
    for name, value in FAST.items():
        setattr(settings, name, value)


@pytest.fixture
def portal() -> Iterator[Bitrix24Emulator]:
    with Bitrix24Emulator(rate=20, burst=40) as emulator:
        yield emulator


def connect(
    emulator: Bitrix24Emulator, biz: Business | None = None, **options: Any
) -> Bitrix24Settings:
    """A business whose sync talks to the emulator through its incoming webhook."""
    biz = biz or factories.business()
    options.setdefault("rate_limit", emulator.rate)
    options.setdefault("burst", emulator.burst)
    return config.configure(biz, webhook_url=emulator.webhook_url, **options)
