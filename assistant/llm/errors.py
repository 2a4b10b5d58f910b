"""What goes wrong talking to a model server, by what the client does about it.

Public (the callers' to catch): `ModelUnavailable` (no endpoint produced an answer: down,
timing out, breaker open or no admission slot; a `Transient` failure of the platform's),
`ModelMisconfigured` (every endpoint refused the request as configured: a `ModelUnavailable`
for the callers that catch that, `Permanent` by nature, so no retry rule repeats it) and
`ModelOutputError` (the model answered, but not with a valid Decision even after one repair).

Inside the client (`classify` maps an HTTP error to one): `TransientModelError` is retried on
another replica (timeouts, connection errors, 408/409/429/5xx, a stream that broke);
`MisconfiguredRequest` trips the replica's breaker open with its cause (401/403/404/422/400);
`ContextOverflow` is a 400 saying the prompt does not fit, answered with a compact prompt.
"""

from __future__ import annotations

import re
from typing import Any

from inbox.platform import http
from inbox.platform.http import Permanent, Transient

# What vLLM, llama-cpp-python and llama.cpp's own server say when prompt + max_tokens do not fit.
CONTEXT_OVERFLOW = re.compile(
    r"maximum context length|context_length_exceeded|exceeds? the available context size|"
    r"exceed_context_size_error|exceed context window|longer than the maximum model length",
    re.IGNORECASE,
)


class ModelUnavailable(Transient):
    """No endpoint produced an answer (down, timing out, breaker open or no admission slot)."""


class ModelMisconfigured(ModelUnavailable, Permanent):
    """Every endpoint refused the request as misconfigured (key, model, context, schema)."""

    def __init__(self, causes: list[str]) -> None:
        super().__init__("; ".join(causes))
        self.causes = causes


class ModelOutputError(Exception):
    """The model answered, but not with a valid Decision, even after one repair."""

    def __init__(self, endpoint: str, error: str, raw: str) -> None:
        super().__init__(f"{endpoint}: {error}")
        self.endpoint = endpoint
        self.raw = raw


class TransientModelError(Transient):
    """Worth retrying elsewhere: timeout, connection, 408/409/429/5xx (`retry_after` from a
    Retry-After header)."""


class MisconfiguredRequest(Permanent):
    """The server refuses this request as configured (401/403/404/422, a 400): the cause."""


class ContextOverflow(MisconfiguredRequest):
    """A 400 saying the prompt does not fit the model's context."""


class PromptOverflowed(Exception):
    """Internal: the prompt was over the context; the caller may try a compact one."""


class EndpointFailed(Exception):
    """Internal: this endpoint gave no answer; the chain moves to the next."""

    def __init__(self, message: str, misconfigured: bool = False) -> None:
        super().__init__(message)
        self.misconfigured = misconfigured


def classify(status: int, body: str, headers: Any = None) -> Exception:
    """The client's exception for an HTTP error from the model server (see the module doc)."""
    text = " ".join(body.split())[:300]
    if status in (408, 409, 429) or status >= 500:
        if CONTEXT_OVERFLOW.search(body):  # older llama.cpp answered overflows with 500
            return ContextOverflow(f"HTTP {status}: prompt over the model's context: {text}")
        return TransientModelError(f"HTTP {status}", retry_after=http.retry_after(headers))
    if status in (401, 403):
        return MisconfiguredRequest(f"HTTP {status}: the model server refused the API key ({text})")
    if status == 404:
        return MisconfiguredRequest(f"HTTP 404: unknown model or wrong LLM_BASE_URL path ({text})")
    if CONTEXT_OVERFLOW.search(body):
        return ContextOverflow(f"HTTP {status}: prompt over the model's context: {text}")
    if status == 422:
        return MisconfiguredRequest(f"HTTP 422: the server refused the request's schema ({text})")
    return MisconfiguredRequest(f"HTTP {status}: the server refused the request ({text})")
