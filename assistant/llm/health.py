"""The model server's state as the inbox sees it: for /readyz and the alerts."""

from __future__ import annotations

from django.conf import settings

from assistant.llm.client import LLMClient
from assistant.llm.resilience import OPEN, replica_label


def breaker_states() -> dict[str, str]:
    """replica label → closed | half_open | open, for every configured replica."""
    if not settings.LLM_BASE_URL:
        return {}
    client = LLMClient.from_settings()
    # The client keys each breaker by the replica's base URL (RedisGuard hashes it itself).
    return {
        replica_label(url): client.guard.state(url)
        for endpoint in client.endpoints
        for url in endpoint.base_urls
    }


def misconfigured_replicas() -> dict[str, str]:
    """replica label → the cause, for every replica whose breaker a configuration error
    (401/403/404/422/400 from the server) tripped open and no success has closed since."""
    if not settings.LLM_BASE_URL:
        return {}
    client = LLMClient.from_settings()
    causes = {
        replica_label(url): client.guard.cause(url)
        for endpoint in client.endpoints
        for url in endpoint.base_urls
    }
    return {label: cause for label, cause in causes.items() if cause}


def llm_status() -> str:
    """A one-line status; raises when no replica can take a request (every breaker open)."""
    states = breaker_states()
    if not states:
        return "catalogue assistant (no LLM_BASE_URL)"
    if all(state == OPEN for state in states.values()):
        causes = misconfigured_replicas()
        detail = "; ".join(f"{label}: {cause}" for label, cause in causes.items())
        raise RuntimeError(
            "circuit breaker open on every replica: " + (detail or ", ".join(states))
        )
    return ", ".join(f"{label} {state}" for label, state in states.items())
