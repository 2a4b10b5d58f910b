"""The LLM client: the only module that imports `openai`.

    client = LLMClient.from_settings()
    completion = client.complete_decision(messages_for, business_id=7)

`messages_for(structured_output, compact=False)` builds the prompt for an endpoint's
structured-output mode; `compact=True` asks for the smaller, retrieval-only prompt.
The chain: endpoints in order (primary: LLM_BASE_URL, possibly several replicas; secondary:
LLM_FALLBACK_BASE_URL). On an endpoint, each attempt goes to the replica with the fewest
requests in flight whose breaker lets it through and which has an admission slot (waiting up to
LLM_ADMISSION_WAIT_SECONDS for one); timeouts, connection errors, 429 and 5xx are retried up to
LLM_MAX_RETRIES times with exponential backoff and full jitter, preferring another replica
(a 429's Retry-After is honoured, capped at LLM_RETRY_AFTER_MAX_SECONDS). When every attempt
fails the next endpoint is tried; after the last, `ModelUnavailable`.

Errors by class (`classify`): 401/403 (key refused), 404 (unknown model or path), 422 and other
400s (a request the server refuses) are configuration errors, not a flaky replica: the replica's
breaker is tripped open at once with the cause, and when no endpoint is left the turn fails with
`ModelMisconfigured` (the chat is handed off with reason `model_misconfigured` and the alert
names the cause). A 400 saying the prompt is over the model's context (vLLM's "maximum context
length", llama.cpp's "exceeds the available context size") is retried once on the same endpoint
with the compact prompt (retrieved items only, shorter history) before it counts as one.

Output is parsed and validated with pydantic; invalid output gets one repair request (the error
is shown to the model); invalid again → `ModelOutputError`. Every request carries the business's
`cache_salt` (vLLM prefix-cache isolation: businesses never share cache entries, all chats of one
business do) unless the endpoint is configured not to send it.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import logging
import os
import random
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import httpx
import openai
from django.conf import settings
from pydantic import ValidationError

from assistant.llm import metrics
from assistant.llm.prompt import inline_schema, repair_message
from assistant.llm.resilience import STATE_VALUES, Guard, Lease, Permit, RedisGuard, replica_label
from assistant.schema import Action, Decision
from inbox.platform import egress
from inbox.platform.redis import get_redis

log = logging.getLogger(__name__)

Messages = list[dict[str, str]]
STRUCTURED_MODES = ("json_schema", "json_object")
RETRY_AFTER_MAX_SECONDS = 10.0
# What vLLM, llama-cpp-python and llama.cpp's own server say when prompt + max_tokens do not fit.
CONTEXT_OVERFLOW = re.compile(
    r"maximum context length|context_length_exceeded|exceeds? the available context size|"
    r"exceed_context_size_error|exceed context window|longer than the maximum model length",
    re.IGNORECASE,
)


class MessagesFor(Protocol):
    def __call__(self, structured_output: str, /, compact: bool = False) -> Messages: ...


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


class ModelUnavailable(Exception):
    """No endpoint produced an answer (down, timing out, breaker open or no admission slot)."""


class ModelMisconfigured(ModelUnavailable):
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


class _Transient(Exception):
    """Worth retrying elsewhere: timeout, connection, 408/409/429/5xx."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class _Misconfigured(Exception):
    """The server refuses this request as configured (401/403/404/422, a 400): the cause."""


class _ContextOverflow(_Misconfigured):
    """A 400 saying the prompt does not fit the model's context."""


class _Overflowed(Exception):
    """Internal: the prompt was over the context; the caller may try a compact one."""


class _EndpointFailed(Exception):
    def __init__(self, message: str, misconfigured: bool = False) -> None:
        super().__init__(message)
        self.misconfigured = misconfigured


def classify(status: int, body: str, headers: Any = None) -> Exception:
    """The client's exception for an HTTP error from the model server (see the module doc)."""
    text = " ".join(body.split())[:300]
    if status in (408, 409, 429) or status >= 500:
        if CONTEXT_OVERFLOW.search(body):  # older llama.cpp answered overflows with 500
            return _ContextOverflow(f"HTTP {status}: prompt over the model's context: {text}")
        return _Transient(f"HTTP {status}", retry_after=retry_after_seconds(headers))
    if status in (401, 403):
        return _Misconfigured(f"HTTP {status}: the model server refused the API key ({text})")
    if status == 404:
        return _Misconfigured(f"HTTP 404: unknown model or wrong LLM_BASE_URL path ({text})")
    if CONTEXT_OVERFLOW.search(body):
        return _ContextOverflow(f"HTTP {status}: prompt over the model's context: {text}")
    if status == 422:
        return _Misconfigured(f"HTTP 422: the server refused the request's schema ({text})")
    return _Misconfigured(f"HTTP {status}: the server refused the request ({text})")


def retry_after_seconds(headers: Any) -> float | None:
    """Retry-After (seconds, or an HTTP date) as seconds from now, None when absent/unreadable."""
    if headers is None:
        return None
    value = str(headers.get("retry-after") or headers.get("Retry-After") or "").strip()
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        from email.utils import parsedate_to_datetime

        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


@dataclass
class _Raw:
    content: str
    replica: str
    latency_s: float
    ttft_s: float | None
    tokens_in: int
    tokens_out: int
    finish_reason: str


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


def parse_decision(content: str) -> tuple[Decision | None, str]:
    """(decision, "") or (None, what is wrong), for the repair prompt."""
    text = content.strip()
    fenced = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    if not text:
        return None, "the answer was empty"
    try:
        # strict=False: a raw newline inside a string (llama.cpp's JSON grammar allows it)
        # is still the text the model meant.
        value = json.loads(text, strict=False)
    except json.JSONDecodeError as exc:
        return None, f"the answer is not valid JSON ({exc.msg} at position {exc.pos})"
    if not isinstance(value, dict):
        return None, "the answer must be a JSON object"
    try:
        decision = Decision.model_validate(value)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'object'}: {e['msg']}" for e in exc.errors()
        )
        return None, f"the JSON does not match the format: {problems}"
    if (
        decision.action in (Action.ANSWER, Action.CLARIFY)
        and not decision.reply_to_customer.strip()
    ):
        return None, "reply_to_customer is empty"
    return decision, ""


def grammar_schema() -> dict[str, Any]:
    """The schema llama.cpp's server is given for its grammar (`prompt.inline_schema`)."""
    return inline_schema()


@functools.cache
def _decision_schema() -> dict[str, Any]:
    return Decision.model_json_schema()


def response_format(mode: str) -> dict[str, Any]:
    if mode == "json_object":
        # llama.cpp's server turns `schema` into a grammar (inlined: see prompt.inline_schema);
        # others ignore the extra key. vLLM gets json_schema: guided decoding takes $defs.
        return {"type": "json_object", "schema": grammar_schema()}
    schema = _decision_schema()
    return {
        "type": "json_schema",
        "json_schema": {"name": "decision", "schema": schema, "strict": True},
    }


_clients: dict[tuple[int, str, str, float, float, bool], openai.OpenAI] = {}


def _openai_client(
    base_url: str, api_key: str, timeout: float, connect: float, pinned: bool = False
) -> openai.OpenAI:
    """One client (connection pool) per replica per process; the pid keeps forked Celery
    children from sharing their parent's sockets. `pinned`: a business's URL, connected only
    to addresses the egress allow-list passes."""
    key = (os.getpid(), base_url, api_key, timeout, connect, pinned)
    client = _clients.get(key)
    if client is None:
        client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            max_retries=0,  # retries are ours: other replica, breaker, jitter
            timeout=openai.Timeout(timeout, connect=connect),
            http_client=cast(Any, egress.client(timeout=httpx.Timeout(timeout, connect=connect)))
            if pinned
            else None,
        )
        _clients[key] = client
    return client


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
            except _EndpointFailed as exc:
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
        except _Overflowed:
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
            except _Overflowed as exc:  # the bad answer made the repair too long to send
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

    def _request(
        self, endpoint: Endpoint, messages: Messages, salt: str, overflow_is_final: bool = False
    ) -> _Raw:
        """One successful response from some replica of the endpoint, or _EndpointFailed
        (_Overflowed when the prompt is over the context and a compact one may still fit)."""
        last_error = last_failed = ""
        avoid: set[str] = set()
        wait: float | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                metrics.RETRIES.labels(endpoint.name, last_failed).inc()
                cap = self.backoff * (2 ** (attempt - 1))
                # Full jitter; a 429's Retry-After is honoured, within a bound.
                pause = random.uniform(0, cap) if wait is None else min(wait, self.retry_after_max)
                time.sleep(pause)
            slot = self._admit(endpoint, avoid)
            if slot is None:
                metrics.ADMISSION_REJECTED.labels(endpoint.name).inc()
                causes = self._trip_causes(endpoint)
                if causes:
                    raise _EndpointFailed("; ".join(causes), misconfigured=True)
                raise _EndpointFailed(last_error or "every replica is open or at its limit")
            permit, lease = slot
            replica = permit.replica
            try:
                raw = self._call(endpoint, replica, messages, salt)
            except _Transient as exc:
                last_failed = replica_label(replica)
                last_error = f"{last_failed}: {exc}"
                wait = exc.retry_after
                self._record(permit, ok=False)
                avoid.add(replica)
                continue
            except _ContextOverflow as exc:
                # The server is healthy; this prompt is too long for it.
                self.guard.give_back(permit)
                if not overflow_is_final:
                    raise _Overflowed(str(exc)) from exc
                self._trip(permit, f"{replica_label(replica)}: {exc}")
                raise _EndpointFailed(f"{replica_label(replica)}: {exc}", True) from exc
            except _Misconfigured as exc:
                self._trip(permit, f"{replica_label(replica)}: {exc}")
                raise _EndpointFailed(f"{replica_label(replica)}: {exc}", True) from exc
            finally:
                self.guard.release(lease)
            self._record(permit, ok=True)
            return raw
        raise _EndpointFailed(last_error)

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

    def _call(self, endpoint: Endpoint, replica: str, messages: Messages, salt: str) -> _Raw:
        client = _openai_client(
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
                raw = self._streamed(client, kwargs, replica, started)
            else:
                raw = self._whole(client, kwargs, replica, started)
            outcome = "ok"
        except openai.APIStatusError as exc:
            outcome = f"http_{exc.status_code}"
            raise classify(exc.status_code, _error_text(exc), exc.response.headers) from exc
        except openai.APITimeoutError as exc:
            outcome = "timeout"
            raise _Transient("timeout") from exc
        except openai.APIError as exc:
            outcome = "connection"
            raise _Transient(type(exc).__name__) from exc
        except Exception as exc:
            # httpx errors raised while reading a stream (read timeout, dropped connection).
            if type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "httpcore2"):
                outcome = "connection"
                raise _Transient(type(exc).__name__) from exc
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

    def _streamed(
        self, client: openai.OpenAI, kwargs: dict[str, Any], replica: str, started: float
    ) -> _Raw:
        """The answer read off the server-sent events as plain JSON. The openai library's own
        stream builds a typed object per chunk (about 60 µs each, most of a turn's overhead
        outside the model with a fast server); the request, its errors and retries stay the
        library's."""
        parts: list[str] = []
        ttft: float | None = None
        tokens_in = tokens_out = 0
        finish = ""
        request = client.chat.completions.with_streaming_response.create(
            **kwargs, stream=True, stream_options={"include_usage": True}
        )
        with request as response:
            for event, data in sse_events(response.iter_lines()):
                if time.monotonic() - started > self.timeout:
                    # The read timeout is per chunk; a server dripping tokens must not hold
                    # the turn longer than the whole-request timeout.
                    raise _Transient("timeout (stream too slow)")
                if data == "[DONE]":
                    break
                chunk = _stream_chunk(event, data)
                choices = chunk.get("choices") or []
                if choices and isinstance(choices[0], dict):
                    choice = choices[0]
                    delta = (choice.get("delta") or {}).get("content")
                    if delta:
                        if ttft is None:
                            ttft = time.monotonic() - started
                        parts.append(str(delta))
                    if choice.get("finish_reason"):
                        finish = str(choice["finish_reason"])
                usage = chunk.get("usage")
                if isinstance(usage, dict):
                    tokens_in = int(usage.get("prompt_tokens") or 0)
                    tokens_out = int(usage.get("completion_tokens") or 0)
        content = "".join(parts)
        if not tokens_in:
            tokens_in = _estimate(kwargs["messages"])
            tokens_out = tokens_out or len(content) // 4
        return _Raw(
            content, replica, time.monotonic() - started, ttft, tokens_in, tokens_out, finish
        )

    def _whole(
        self, client: openai.OpenAI, kwargs: dict[str, Any], replica: str, started: float
    ) -> _Raw:
        response = cast(Any, client.chat.completions.create(**kwargs))
        choice = response.choices[0] if response.choices else None
        content = (choice.message.content or "") if choice else ""
        usage = response.usage
        tokens_in = usage.prompt_tokens if usage else _estimate(kwargs["messages"])
        tokens_out = usage.completion_tokens if usage else len(content) // 4
        finish = (choice.finish_reason or "") if choice else ""
        return _Raw(
            content, replica, time.monotonic() - started, None, tokens_in, tokens_out, finish
        )


def sse_events(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """(event type, data) of each server-sent event: data lines joined, comments and unknown
    fields skipped (the text/event-stream format; vLLM and llama.cpp send one data line each)."""
    event, data = "", list[str]()
    for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = "", list[str]()
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
        elif name == "error":  # llama.cpp's server reports a failure mid-stream on such a line
            yield "error", value
    if data:
        yield event, "\n".join(data)


def _stream_chunk(event: str, data: str) -> dict[str, Any]:
    """One streamed chunk; an error event (vLLM and llama.cpp report a failure mid-stream that
    way) or an unreadable chunk is worth a retry elsewhere, as a dropped connection is."""
    try:
        chunk = json.loads(data)
    except ValueError as exc:
        raise _Transient("unreadable stream chunk") from exc
    if not isinstance(chunk, dict):
        raise _Transient("unreadable stream chunk")
    error = chunk.get("error")
    if event == "error" or error or chunk.get("object") == "error":
        detail = error.get("message") if isinstance(error, dict) else error or chunk.get("message")
        raise _Transient(f"stream error: {str(detail or data)[:200]}")
    return chunk


def _error_text(exc: openai.APIStatusError) -> str:
    """The server's error message (and type), whatever shape its JSON body has."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            text = " ".join(str(inner.get(k) or "") for k in ("message", "type", "code"))
            if text.strip():
                return text.strip()
        return json.dumps(body, ensure_ascii=False)[:1000]  # e.g. FastAPI's {"detail": […]}
    try:
        return exc.response.text[:1000]
    except Exception:
        return str(exc)


def _estimate(messages: Messages) -> int:
    return sum(len(m.get("content", "")) for m in messages) // 4
