"""Fixtures for the assistant: the OpenAI-compatible emulator over real HTTP, real Redis."""

from __future__ import annotations

import pytest

from assistant.llm.client import Endpoint, LLMClient
from assistant.llm.resilience import RedisGuard
from inbox.platform.redis import get_redis
from tests.emulators.openai_server import OpenAIEmulator


@pytest.fixture
def emu():
    with OpenAIEmulator() as server:
        yield server


@pytest.fixture
def second_emu():
    with OpenAIEmulator() as server:
        yield server


def make_guard(**kwargs) -> RedisGuard:
    options = {
        "failures": 3,
        "cooldown_seconds": 60.0,
        "max_in_flight": 8,
        "lease_seconds": 10.0,
    }
    options.update(kwargs)
    return RedisGuard(get_redis(), **options)


def make_client(
    *urls: str,
    secondary: tuple[str, ...] = (),
    guard: RedisGuard | None = None,
    mode: str = "json_schema",
    **kwargs,
) -> LLMClient:
    endpoints = [Endpoint("primary", tuple(urls), "assistant", "key", mode)]
    if secondary:
        endpoints.append(Endpoint("secondary", secondary, "assistant", "key", mode))
    options = {
        "timeout": 5.0,
        "connect_timeout": 1.0,
        "max_retries": 1,
        "backoff": 0.01,
        "admission_wait": 0.0,
        "stream": True,
    }
    options.update(kwargs)
    return LLMClient(endpoints, guard or make_guard(), **options)
