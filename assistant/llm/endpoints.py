"""Where the model is served: the endpoints of the chain, and one `openai` client per replica.

The installation's chain comes from the settings (primary: LLM_BASE_URL, possibly several
replicas, comma-separated; secondary: LLM_FALLBACK_BASE_URL); a business may bring its own
endpoint (`assistant.llm.business`). Each replica gets one `openai.OpenAI` per process, whose
HTTP client is built by `inbox.platform.http` (pooled, all four timeouts set; pinned to the
egress rule when the URL is a business's). The openai library never retries: the client's
retry rule, breakers and failover do (`assistant.llm.client`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from dataclasses import dataclass, field
from typing import Any, cast

import openai
from django.conf import settings

from inbox.platform import http

STRUCTURED_MODES = ("json_schema", "json_object")


@dataclass(frozen=True)
class Endpoint:
    name: str  # "primary" | "secondary"
    base_urls: tuple[str, ...]
    model: str
    api_key: str = field(repr=False)  # never in a log line or a repr
    structured_output: str = "json_schema"
    send_cache_salt: bool = True
    # A URL a business admin typed (not the operator's): connections go through the egress
    # allow-list's pinned client (`inbox.platform.egress`).
    egress_checked: bool = False


def endpoint_key(endpoint: Endpoint) -> str:
    """A short stable id of an endpoint (URLs, model, key): its breakers' and admission slots'
    Redis prefix, so one business's broken endpoint or refused key never opens another's."""
    raw = json.dumps([endpoint.base_urls, endpoint.model, endpoint.api_key])
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def cache_salt_for(business_id: int) -> str:
    """A per-business salt for vLLM's prefix cache: stable, not guessable from the id."""
    key = settings.SECRET_KEY.encode()
    return hmac.new(key, f"inbox-cache-salt:{business_id}".encode(), hashlib.sha256).hexdigest()[
        :32
    ]


def endpoints_from_settings() -> list[Endpoint]:
    endpoints = []
    primary = [u.strip().rstrip("/") for u in settings.LLM_BASE_URL.split(",") if u.strip()]
    if primary:
        endpoints.append(
            Endpoint(
                "primary",
                tuple(primary),
                settings.LLM_MODEL,
                settings.LLM_API_KEY,
                settings.LLM_STRUCTURED_OUTPUT,
                settings.LLM_SEND_CACHE_SALT,
            )
        )
    secondary = [
        u.strip().rstrip("/") for u in settings.LLM_FALLBACK_BASE_URL.split(",") if u.strip()
    ]
    if secondary:
        endpoints.append(
            Endpoint(
                "secondary",
                tuple(secondary),
                settings.LLM_FALLBACK_MODEL,
                settings.LLM_FALLBACK_API_KEY,
                settings.LLM_FALLBACK_STRUCTURED_OUTPUT,
                settings.LLM_FALLBACK_SEND_CACHE_SALT,
            )
        )
    return endpoints


_clients: dict[tuple[int, str, str, float, float, bool], openai.OpenAI] = {}


def openai_client(
    base_url: str, api_key: str, timeout: float, connect: float, pinned: bool = False
) -> openai.OpenAI:
    """One client (connection pool) per replica per process; the pid keeps forked Celery
    children from sharing their parent's sockets. `pinned`: a business's URL, connected only
    to addresses the egress allow-list passes."""
    key = (os.getpid(), base_url, api_key, timeout, connect, pinned)
    client = _clients.get(key)
    if client is None:
        timeouts = http.timeouts(timeout, connect=connect)
        client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            max_retries=0,  # retries are ours: other replica, breaker, jitter
            # openai's own Timeout type (its httpx fork's), with the same four values.
            timeout=openai.Timeout(
                connect=timeouts.connect,
                read=timeouts.read,
                write=timeouts.write,
                pool=timeouts.pool,
            ),
            # openai takes an `httpx.Client` as well as its fork's (typed for the fork only).
            http_client=cast(Any, http.client(timeout=timeouts, pinned=pinned)),
        )
        _clients[key] = client
    return client
