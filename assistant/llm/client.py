"""The LLM client: the only module that calls a model server (through `openai`).

    client = LLMClient.from_settings()
    completion = client.complete_decision(messages_for, business_id=7)

`messages_for(structured_output, compact=False)` builds the prompt for an endpoint's
structured-output mode; `compact=True` asks for the smaller, retrieval-only prompt.
The chain: endpoints in order (primary: LLM_BASE_URL, possibly several replicas; secondary:
LLM_FALLBACK_BASE_URL; endpoints.py). On an endpoint, each attempt goes to the replica with the
fewest requests in flight whose breaker lets it through and which has an admission slot (waiting
up to LLM_ADMISSION_WAIT_SECONDS for one; resilience.py); timeouts, connection errors, 429 and
5xx are retried up to LLM_MAX_RETRIES times by the platform's retry rule
(`inbox.platform.http.retry`: exponential backoff with full jitter, a 429's Retry-After honoured
up to LLM_RETRY_AFTER_MAX_SECONDS, no retry starting later than RETRY_TOTAL_SECONDS after the
first try), preferring another replica. When every attempt fails the next endpoint is tried;
after the last, `ModelUnavailable`.

Errors by class (errors.py: `classify`): 401/403 (key refused), 404 (unknown model or path),
422 and other 400s (a request the server refuses) are configuration errors, not a flaky
replica: the replica's breaker is tripped open at once with the cause, and when no endpoint is
left the turn fails with `ModelMisconfigured` (the chat is handed off with reason
`model_misconfigured` and the alert names the cause). A 400 saying the prompt is over the
model's context (vLLM's "maximum context length", llama.cpp's "exceeds the available context
size") is retried once on the same endpoint with the compact prompt (retrieved items only,
shorter history) before it counts as one.

Output is parsed and validated with pydantic (wire.py); invalid output gets one repair request
(the error is shown to the model); invalid again → `ModelOutputError`. Every request carries the
business's `cache_salt` (vLLM prefix-cache isolation: businesses never share cache entries, all
chats of one business do) unless the endpoint is configured not to send it.

The module is split by responsibility: endpoints.py (the chain, the openai clients), wire.py
(the request and response formats), errors.py (what goes wrong), this one (the chain's logic).
What callers imported from here still is.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from typing import Any

import openai
from django.conf import settings

from assistant.llm import metrics
from assistant.llm.endpoints import (
    STRUCTURED_MODES,
    Endpoint,
    cache_salt_for,
    endpoint_key,
    endpoints_from_settings,
    openai_client,
)
from assistant.llm.errors import (
    CONTEXT_OVERFLOW,
    ContextOverflow,
    EndpointFailed,
    MisconfiguredRequest,
    ModelMisconfigured,
    ModelOutputError,
    ModelUnavailable,
    PromptOverflowed,
    TransientModelError,
    classify,
)
from assistant.llm.prompt import repair_message
from assistant.llm.resilience import STATE_VALUES, Guard, Lease, Permit, RedisGuard, replica_label
from assistant.llm.wire import (
    Messages,
    MessagesFor,
    Raw,
    error_text,
    grammar_schema,
    parse_decision,
    read_streamed,
    read_whole,
    response_format,
    sse_events,
)
from assistant.schema import Decision
from inbox.platform import http
from inbox.platform.redis import get_redis

__all__ = [
    "CONTEXT_OVERFLOW",
    "RETRY_AFTER_MAX_SECONDS",
    "RETRY_TOTAL_SECONDS",
    "STRUCTURED_MODES",
    "Completion",
    "Endpoint",
    "LLMClient",
    "Messages",
    "MessagesFor",
    "ModelMisconfigured",
    "ModelOutputError",
    "ModelUnavailable",
    "cache_salt_for",
    "classify",
    "endpoint_key",
    "endpoints_from_settings",
    "grammar_schema",
    "parse_decision",
    "response_format",
    "sse_events",
]

log = logging.getLogger(__name__)

RETRY_AFTER_MAX_SECONDS = 10.0
# An endpoint's retries start within this many seconds of its first try, so the primary's and
# the secondary's both fit inside a turn's soft time limit (assistant/tasks.py: 180 s).
RETRY_TOTAL_SECONDS = 75.0


@dataclass(frozen=True)
class Completion:
    decision: Decision
    endpoint: str
    replica: str
    latency_s: float  # the whole call, repair included
    ttft_s: float | None  # first attempt's time to first token (streaming only)
    tokens_in: int
    tokens_out: int
    repaired: bool
    first_valid: bool


class LLMClient:
    def __init__(
        self,
        endpoints: list[Endpoint],
        guard: Guard,
        *,
        timeout: float = 30.0,
        connect_timeout: float = 3.0,
        max_retries: int = 2,
        backoff: float = 0.5,
        admission_wait: float = 5.0,
        stream: bool = True,
        max_tokens: int = 512,
        temperature: float = 0.2,
        retry_after_max: float = RETRY_AFTER_MAX_SECONDS,
        retry_total: float = RETRY_TOTAL_SECONDS,
    ) -> None:
        if not endpoints:
            raise ValueError("no LLM endpoint configured")
        for endpoint in endpoints:
            if endpoint.structured_output not in STRUCTURED_MODES:
                raise ValueError(f"structured output must be one of {STRUCTURED_MODES}")
        self.endpoints = endpoints
        self.guard = guard
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_retries = max(0, max_retries)
        self.backoff = backoff
        self.admission_wait = admission_wait
        self.stream = stream
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.retry_after_max = retry_after_max
        self.retry_total = retry_total

    @classmethod
    def from_settings(
        cls, guard: Guard | None = None, *, endpoint: Endpoint | None = None
    ) -> LLMClient:
        """The installation's chain (LLM_BASE_URL, then LLM_FALLBACK_BASE_URL); with `endpoint`
        (a business's own), that endpoint alone, with breakers and admission slots of its own."""
        timeout = settings.LLM_TIMEOUT_SECONDS
        prefix = f"llm:{endpoint_key(endpoint)}" if endpoint is not None else "llm"
        return cls(
            [endpoint] if endpoint is not None else endpoints_from_settings(),
            guard
            or RedisGuard(
                get_redis(),
                failures=settings.LLM_BREAKER_FAILURES,
                cooldown_seconds=settings.LLM_BREAKER_COOLDOWN_SECONDS,
                max_in_flight=settings.LLM_MAX_IN_FLIGHT,
                # A lease outlives the longest request, then frees itself if its worker died.
                lease_seconds=timeout + settings.LLM_CONNECT_TIMEOUT_SECONDS + 5,
                prefix=prefix,
            ),
            timeout=timeout,
            connect_timeout=settings.LLM_CONNECT_TIMEOUT_SECONDS,
            max_retries=settings.LLM_MAX_RETRIES,
            backoff=settings.LLM_RETRY_BACKOFF_SECONDS,
            admission_wait=settings.LLM_ADMISSION_WAIT_SECONDS,
            stream=settings.LLM_STREAM,
            max_tokens=settings.LLM_MAX_TOKENS,
            temperature=settings.LLM_TEMPERATURE,
            retry_after_max=settings.LLM_RETRY_AFTER_MAX_SECONDS,
        )

    def complete_decision(
        self, messages_for: MessagesFor, *, business_id: int, prompt_version: str = "v1"
    ) -> Completion:
        """A validated Decision from the first endpoint of the chain that gives one."""
        salt = cache_salt_for(business_id)
        failures: list[str] = []
        misconfigured: list[str] = []
        for position, endpoint in enumerate(self.endpoints):
            try:
                return self._decide_on(endpoint, messages_for, salt, prompt_version)
            except EndpointFailed as exc:
                failures.append(f"{endpoint.name}: {exc}")
                if exc.misconfigured:
                    misconfigured.append(f"{endpoint.name}: {exc}")
                to = "secondary" if position + 1 < len(self.endpoints) else "handoff"
                metrics.FALLBACKS.labels(endpoint.name, to).inc()
                log.warning(
                    "llm.endpoint_failed",
                    extra={"endpoint": endpoint.name, "error": str(exc)[:300], "next": to},
                )
        if misconfigured and len(misconfigured) == len(failures):
            raise ModelMisconfigured(misconfigured)
        raise ModelUnavailable("; ".join(failures))

    # --- one endpoint -----------------------------------------------------------------------

    def _decide_on(
        self, endpoint: Endpoint, messages_for: MessagesFor, salt: str, prompt_version: str
    ) -> Completion:
        started = time.monotonic()
        messages = messages_for(endpoint.structured_output)
        try:
            first = self._request(endpoint, messages, salt)
        except PromptOverflowed:
            # Too long for this model: once more with the compact prompt (retrieval only).
            metrics.CONTEXT_FALLBACKS.labels(endpoint.name).inc()
            log.warning("llm.context_overflow", extra={"endpoint": endpoint.name})
            messages = messages_for(endpoint.structured_output, compact=True)
            first = self._request(endpoint, messages, salt, overflow_is_final=True)
        decision, error = parse_decision(first.content)
        tokens_in, tokens_out = first.tokens_in, first.tokens_out
        final = first
        if decision is None:
            metrics.INVALID_OUTPUT.labels(endpoint.name, "first").inc()
            log.info("llm.invalid_output", extra={"endpoint": endpoint.name, "error": error})
            repair = [
                *messages,
                {"role": "assistant", "content": first.content[:4000]},
                repair_message(prompt_version, error),
            ]
            try:
                final = self._request(endpoint, repair, salt, overflow_is_final=False)
            except PromptOverflowed as exc:  # the bad answer made the repair too long to send
                metrics.INVALID_OUTPUT.labels(endpoint.name, "repair").inc()
                raise ModelOutputError(endpoint.name, error, first.content[:2000]) from exc
            tokens_in += final.tokens_in
            tokens_out += final.tokens_out
            decision, error = parse_decision(final.content)
            if decision is None:
                metrics.INVALID_OUTPUT.labels(endpoint.name, "repair").inc()
                raise ModelOutputError(endpoint.name, error, final.content[:2000])
        return Completion(
            decision=decision,
            endpoint=endpoint.name,
            replica=replica_label(final.replica),
            latency_s=time.monotonic() - started,
            ttft_s=first.ttft_s,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            repaired=final is not first,
            first_valid=final is first,
        )

    def _policy(self) -> http.Backoff:
        return http.Backoff(
            attempts=self.max_retries + 1,
            base=self.backoff,
            cap=self.backoff * 2**self.max_retries,  # the steps double; the count bounds them
            total=self.retry_total,
            retry_after_max=self.retry_after_max,
        )

    def _request(
        self, endpoint: Endpoint, messages: Messages, salt: str, overflow_is_final: bool = False
    ) -> Raw:
        """One successful response from some replica of the endpoint, or EndpointFailed
        (PromptOverflowed when the prompt is over the context and a compact one may still fit).
        A transient failure is retried on another replica when there is one (the retry rule
        waits; `_admit` prefers replicas that have not failed this request)."""
        avoid: set[str] = set()
        last = {"error": "", "failed": ""}

        def one_attempt() -> Raw:
            slot = self._admit(endpoint, avoid)
            if slot is None:
                metrics.ADMISSION_REJECTED.labels(endpoint.name).inc()
                causes = self._trip_causes(endpoint)
                if causes:
                    raise EndpointFailed("; ".join(causes), misconfigured=True)
                raise EndpointFailed(last["error"] or "every replica is open or at its limit")
            permit, lease = slot
            replica = permit.replica
            try:
                raw = self._call(endpoint, replica, messages, salt)
            except TransientModelError as exc:
                last["failed"] = replica_label(replica)
                last["error"] = f"{last['failed']}: {exc}"
                self._record(permit, ok=False)
                avoid.add(replica)
                raise
            except ContextOverflow as exc:
                # The server is healthy; this prompt is too long for it.
                self.guard.give_back(permit)
                if not overflow_is_final:
                    raise PromptOverflowed(str(exc)) from exc
                self._trip(permit, f"{replica_label(replica)}: {exc}")
                raise EndpointFailed(f"{replica_label(replica)}: {exc}", True) from exc
            except MisconfiguredRequest as exc:
                self._trip(permit, f"{replica_label(replica)}: {exc}")
                raise EndpointFailed(f"{replica_label(replica)}: {exc}", True) from exc
            finally:
                self.guard.release(lease)
            self._record(permit, ok=True)
            return raw

        def counted(retry: int, error: BaseException, delay: float) -> None:
            metrics.RETRIES.labels(endpoint.name, last["failed"]).inc()

        try:
            return http.retry(
                one_attempt, self._policy(), on=TransientModelError, before_retry=counted
            )
        except TransientModelError as exc:
            raise EndpointFailed(last["error"]) from exc

    def _trip_causes(self, endpoint: Endpoint) -> list[str]:
        """Why the endpoint's replicas were tripped open, when every one of them was."""
        causes = [self.guard.cause(url) for url in endpoint.base_urls]
        return causes if causes and all(causes) else []

    def _trip(self, permit: Permit, cause: str) -> None:
        state = self.guard.trip(permit, cause)
        metrics.BREAKER_STATE.labels(replica_label(permit.replica)).set(STATE_VALUES.get(state, 0))
        metrics.MISCONFIGURED.labels(replica_label(permit.replica)).inc()
        log.error(
            "llm.misconfigured",
            extra={"replica": replica_label(permit.replica), "cause": cause[:300]},
        )

    def _admit(self, endpoint: Endpoint, avoid: set[str]) -> tuple[Permit, Lease] | None:
        """The least-loaded replica whose breaker allows a call and that has a free slot."""
        deadline = time.monotonic() + self.admission_wait
        while True:
            loads = []
            for url in endpoint.base_urls:
                count = self.guard.in_flight(url)
                metrics.IN_FLIGHT.labels(replica_label(url)).set(count)
                loads.append((url in avoid, count, random.random(), url))
            any_full = False
            for _avoided, _count, _tie, url in sorted(loads):
                permit = self.guard.allow(url)
                metrics.BREAKER_STATE.labels(replica_label(url)).set(
                    STATE_VALUES.get(self.guard.state(url), 0)
                )
                if permit is None:
                    continue
                lease = self.guard.acquire(url)
                if lease is not None:
                    return permit, lease
                self.guard.give_back(permit)
                any_full = True
            if not any_full or time.monotonic() >= deadline:
                return None
            time.sleep(random.uniform(0.02, 0.08))

    def _record(self, permit: Permit, ok: bool) -> None:
        state = self.guard.succeeded(permit) if ok else self.guard.failed(permit)
        metrics.BREAKER_STATE.labels(replica_label(permit.replica)).set(STATE_VALUES.get(state, 0))
        if not ok and state == "open":
            log.warning("llm.breaker_open", extra={"replica": replica_label(permit.replica)})

    def _call(self, endpoint: Endpoint, replica: str, messages: Messages, salt: str) -> Raw:
        client = openai_client(
            replica, endpoint.api_key, self.timeout, self.connect_timeout, endpoint.egress_checked
        )
        label = replica_label(replica)
        extra_body: dict[str, Any] = {"cache_salt": salt} if endpoint.send_cache_salt else {}
        kwargs: dict[str, Any] = {
            "model": endpoint.model,
            "messages": messages,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "response_format": response_format(endpoint.structured_output),
            "extra_body": extra_body or None,
        }
        started = time.monotonic()
        outcome = "error"
        try:
            if self.stream:
                raw = read_streamed(client, kwargs, replica, started, self.timeout)
            else:
                raw = read_whole(client, kwargs, replica, started)
            outcome = "ok"
        except openai.APIStatusError as exc:
            outcome = f"http_{exc.status_code}"
            raise classify(exc.status_code, error_text(exc), exc.response.headers) from exc
        except openai.APITimeoutError as exc:
            outcome = "timeout"
            raise TransientModelError("timeout") from exc
        except openai.APIError as exc:
            outcome = "connection"
            raise TransientModelError(type(exc).__name__) from exc
        except Exception as exc:
            # httpx errors raised while reading a stream (read timeout, dropped connection).
            if type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2"):
                outcome = "connection"
                raise TransientModelError(type(exc).__name__) from exc
            raise
        finally:
            metrics.REQUEST_SECONDS.labels(endpoint.name, label, outcome).observe(
                time.monotonic() - started
            )
        if raw.ttft_s is not None:
            metrics.TTFT_SECONDS.labels(endpoint.name, label).observe(raw.ttft_s)
        metrics.TOKENS.labels(endpoint.name, "in").inc(raw.tokens_in)
        metrics.TOKENS.labels(endpoint.name, "out").inc(raw.tokens_out)
        return raw
