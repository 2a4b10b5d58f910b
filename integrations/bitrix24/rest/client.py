"""The Bitrix24 REST client: the only module that makes HTTP requests to Bitrix24.

One small method per concern: `call` (one method), `batch` (≤50 commands in one request),
`iterate` (`>ID` + `start=-1` pagination), `refresh_oauth` (the OAuth token endpoint).

Every request first takes a slot from the portal's shared Redis bucket (limiter.py). The
response envelope is read on every call and its `time` block logged. Failures are classified
(errors.py) and retried here only while that is safe and short:
- 503 QUERY_LIMIT_EXCEEDED: exponential backoff with jitter, and the shared bucket is marked
  full so every worker slows down;
- 429 OPERATION_TIME_LIMIT: wait until the method's `operating_reset_at` (remembered from the
  last success, shared in Redis), or hand the wait to the caller when it is long;
- non-JSON 5xx bodies and network errors: transient. A write whose outcome is unknown (timeout
  after sending, proxy error page) is NOT repeated here: it raises with `in_doubt=True`, and the
  sync looks before it writes again.
After `max_attempts` the last TransientError is raised; the caller's job is retried later.

The webhook URL is a bearer secret: it never appears in logs or exception messages; logs name
the portal host only.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from inbox.platform import egress
from inbox.platform.redis import get_redis
from integrations.bitrix24.rest import phpquery
from integrations.bitrix24.rest.errors import (
    AuthError,
    Bitrix24Error,
    OperationTimeLimited,
    PermanentError,
    RateLimited,
    TokenExpired,
    TransientError,
    classify,
)
from integrations.bitrix24.rest.limiter import LeakyBucket

log = logging.getLogger(__name__)

BATCH_LIMIT = 50
PAGE_SIZE = 50
USER_AGENT = "whatsapp-operator-inbox/0.1 (+bitrix24 sync)"
_READ_SUFFIXES = (".get", ".list", ".current", ".findbycomm", ".fields", ".info", ".status")
_READ_METHODS = {"scope", "methods", "profile", "server.time", "crm.settings.mode.get"}


def is_read(method: str) -> bool:
    """Whether repeating `method` after an unknown outcome is harmless."""
    name = method.lower()
    if name == "event.offline.get":
        return False  # it reserves records: repeat it with the same process_id instead
    return name in _READ_METHODS or name.endswith(_READ_SUFFIXES)


class TokenSource(Protocol):
    """Where an application's OAuth access token comes from (connection.py keeps them)."""

    def access_token(self) -> str: ...

    def refresh(self, stale: str) -> str:
        """Return a valid token; refresh it unless another worker already did."""
        ...


class Auth(Protocol):
    @property
    def portal_host(self) -> str: ...

    def url(self, method: str) -> str: ...

    def sign(self, payload: dict[str, Any]) -> dict[str, Any]: ...

    def refresh(self, payload: dict[str, Any]) -> bool: ...


@dataclass(frozen=True)
class WebhookAuth:
    """An incoming webhook `https://{portal}/rest/{user}/{code}/`. `repr` hides the code."""

    base_url: str = field(repr=False)

    @property
    def portal_host(self) -> str:
        return urlsplit(self.base_url).netloc

    def url(self, method: str) -> str:
        return f"{self.base_url.rstrip('/')}/{method}.json"

    def sign(self, payload: dict[str, Any]) -> dict[str, Any]:
        return payload

    def refresh(self, payload: dict[str, Any]) -> bool:
        return False


@dataclass
class AppAuth:
    """A local application: `https://{portal}/rest/{method}` with `auth=<access token>`."""

    portal_url: str
    tokens: TokenSource = field(repr=False)

    @property
    def portal_host(self) -> str:
        return urlsplit(self.portal_url).netloc

    def url(self, method: str) -> str:
        return f"{self.portal_url.rstrip('/')}/rest/{method}.json"

    def sign(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {**payload, "auth": self.tokens.access_token()}

    def refresh(self, payload: dict[str, Any]) -> bool:
        self.tokens.refresh(str(payload.get("auth") or ""))
        return True


@dataclass(frozen=True)
class Response:
    result: Any
    total: int | None = None
    next: int | None = None
    time: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Command:
    """One batch command. Keys must not be numeric (PHP would turn the map into a list)."""

    key: str
    method: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.key or self.key.isdigit() or not self.key.replace("_", "").isalnum():
            raise ValueError(f"batch command key must be alphanumeric, not numeric: {self.key!r}")

    def query(self) -> str:
        encoded = phpquery.encode(self.params)
        return f"{self.method}?{encoded}" if encoded else self.method


@dataclass
class BatchResult:
    """Per-command outcome of one or more batch requests."""

    results: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, Bitrix24Error] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)

    def merge(self, other: BatchResult) -> None:
        self.results.update(other.results)
        self.errors.update(other.errors)
        self.totals.update(other.totals)


def _as_map(value: Any) -> dict[str, Any]:
    """PHP serialises an empty map as `[]` and a 0..n-1 keyed map as a list."""
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, list):
        return {str(i): v for i, v in enumerate(value)}
    return {}


def parse_batch(payload: Any, commands: Sequence[Command]) -> BatchResult:
    """Map a batch response back to its commands. `result_error` may be a map keyed by command
    or a list that lost its keys; commands in neither map did not run (`halt`)."""
    body = payload if isinstance(payload, dict) else {}
    by_key = {c.key: c for c in commands}
    outcome = BatchResult()
    outcome.results = {k: v for k, v in _as_map(body.get("result")).items() if k in by_key}
    for key, total in _as_map(body.get("result_total")).items():
        if key in by_key and str(total).lstrip("-").isdigit():
            outcome.totals[key] = int(total)
    raw_errors = body.get("result_error")
    missing = [c.key for c in commands if c.key not in outcome.results]
    pairs: list[tuple[str, Any]]
    if isinstance(raw_errors, dict):
        pairs = [(str(k), v) for k, v in raw_errors.items() if str(k) in by_key]
    elif isinstance(raw_errors, list):
        # Keys lost: the failed commands are the ones without a result, in command order.
        pairs = list(zip(missing, raw_errors, strict=False))
    else:
        pairs = []
    for key, raw in pairs:
        detail = raw if isinstance(raw, dict) else {}
        outcome.errors[key] = classify(
            None,
            str(detail.get("error") or ""),
            str(detail.get("error_description") or ""),
            method=by_key[key].method,
        )
    for key in missing:
        if key not in outcome.errors:
            outcome.errors[key] = TransientError(
                "NOT_EXECUTED", "the batch stopped before this command", method=by_key[key].method
            )
    return outcome


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


class Bitrix24Client:
    def __init__(
        self,
        auth: Auth,
        *,
        bucket: LeakyBucket,
        http: httpx.Client | None = None,
        auth_connector: str = "",
        max_attempts: int | None = None,
        backoff_base: float | None = None,
        backoff_cap: float | None = None,
        max_bucket_wait: float | None = None,
        max_block_wait: float | None = None,
    ) -> None:
        conf = settings
        self.auth = auth
        self.bucket = bucket
        self.portal = auth.portal_host
        self.auth_connector = auth_connector
        self.max_attempts = max_attempts or int(getattr(conf, "BITRIX24_MAX_ATTEMPTS", 5))
        self.backoff_base = backoff_base or float(getattr(conf, "BITRIX24_BACKOFF_BASE", 1.0))
        self.backoff_cap = backoff_cap or float(getattr(conf, "BITRIX24_BACKOFF_CAP", 30.0))
        self.max_bucket_wait = max_bucket_wait or float(
            getattr(conf, "BITRIX24_MAX_BUCKET_WAIT", 120.0)
        )
        self.max_block_wait = max_block_wait or float(
            getattr(conf, "BITRIX24_MAX_BLOCK_WAIT", 30.0)
        )
        timeout = float(getattr(conf, "BITRIX24_HTTP_TIMEOUT", 30.0))
        self._own_http = http is None
        self.http = http or egress.client(
            timeout=httpx.Timeout(timeout, connect=5.0),
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
        )
        self.redis = get_redis()

    def close(self) -> None:
        if self._own_http:
            self.http.close()

    def __enter__(self) -> Bitrix24Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- public ---------------------------------------------------------------------------

    def call(self, method: str, params: Mapping[str, Any] | None = None) -> Response:
        """Call one REST method. Raises PermanentError or (after retries) TransientError."""
        payload = dict(params or {})
        if self.auth_connector and not is_read(method):
            payload.setdefault("auth_connector", self.auth_connector)
        return self._send(method, payload, repeatable=is_read(method), commands=1)

    def batch(self, commands: Sequence[Command], *, halt: bool = False) -> BatchResult:
        """Run ≤50 commands in one request (one bucket slot). Failed commands are reported
        per key in `errors`; `halt` stops at the first failure but undoes nothing."""
        if not commands:
            return BatchResult()
        if len(commands) > BATCH_LIMIT:
            raise ValueError(f"a batch takes at most {BATCH_LIMIT} commands")
        if len({c.key for c in commands}) != len(commands):
            raise ValueError("batch command keys must be unique")
        if self.auth_connector:
            commands = [
                c
                if is_read(c.method)
                else Command(c.key, c.method, {**c.params, "auth_connector": self.auth_connector})
                for c in commands
            ]
        payload = {"halt": 1 if halt else 0, "cmd": {c.key: c.query() for c in commands}}
        response = self._send(
            "batch",
            payload,
            repeatable=all(is_read(c.method) for c in commands),
            commands=len(commands),
        )
        outcome = parse_batch(response.result, commands)
        self._remember_batch_times(response.result, commands)
        if outcome.errors:
            log.warning(
                "bitrix24.batch_errors",
                extra={
                    "portal": self.portal,
                    "commands": len(commands),
                    "failed": len(outcome.errors),
                    "codes": sorted({e.code or e.description for e in outcome.errors.values()}),
                },
            )
        return outcome

    def iterate(
        self,
        method: str,
        params: Mapping[str, Any],
        *,
        id_field: str = "ID",
        items_key: str | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every row of a list method, fast: `order {ID: ASC}`, `filter {>ID: last}`,
        `start=-1` (no COUNT), until a page has fewer than 50 rows. `select` is required:
        without it custom `UF_*` fields are silently missing."""
        if not params.get("select"):
            raise ValueError("name the fields you need in `select`")
        last = 0
        base_filter = dict(params.get("filter") or {})
        while True:
            page_params = {
                **params,
                "order": {id_field: "ASC"},
                "filter": {**base_filter, f">{id_field}": last},
                "start": -1,
            }
            result = self.call(method, page_params).result
            rows = result.get(items_key, []) if items_key and isinstance(result, dict) else result
            rows = list(rows or [])
            yield from rows
            if len(rows) < PAGE_SIZE:
                return
            last = int(rows[-1][id_field])

    # --- one request with retries ---------------------------------------------------------

    def _send(
        self, method: str, payload: dict[str, Any], *, repeatable: bool, commands: int
    ) -> Response:
        attempt = 0
        refreshed = False
        _check_egress(self.auth.url(method), method)
        while True:
            attempt += 1
            self._wait_if_blocked(method)
            waited = self.bucket.acquire(max_wait=self.max_bucket_wait)
            signed = self.auth.sign(payload)
            started = time.monotonic()
            status: int | None = None
            error: Bitrix24Error
            try:
                reply = self.http.post(self.auth.url(method), json=signed)
            except httpx.TransportError as exc:
                sent = not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout)
                error = TransientError("NETWORK", type(exc).__name__, method=method)
                error.in_doubt = sent and not repeatable
            else:
                status = reply.status_code
                parsed = self._parse(reply, method)
                if isinstance(parsed, Response):
                    self._log_success(method, status, parsed, started, waited, attempt, commands)
                    return parsed
                error = parsed
                if (
                    isinstance(error, TransientError)
                    and error.code == "NON_JSON_RESPONSE"
                    and not repeatable
                ):
                    error.in_doubt = True
            log.warning(
                "bitrix24.call_failed",
                extra={
                    "portal": self.portal,
                    "method": method,
                    "http_status": status,
                    "code": error.code,
                    "attempt": attempt,
                    "elapsed_ms": round((time.monotonic() - started) * 1000),
                },
            )
            if isinstance(error, TokenExpired):
                if not refreshed and self.auth.refresh(payload):
                    refreshed = True
                    attempt -= 1
                    continue
                # A webhook past its expiry date (or a token that stays expired): only a person
                # can fix that.
                raise AuthError(error.code, error.description, status=status, method=method)
            if isinstance(error, PermanentError):
                raise error
            if isinstance(error, TransientError) and error.in_doubt:
                raise error  # the write may have happened: the caller must look first
            if isinstance(error, OperationTimeLimited):
                self._block_until_reset(method, error)
            elif isinstance(error, RateLimited):
                self.bucket.saturate()
            if attempt >= self.max_attempts:
                raise error
            if not isinstance(error, OperationTimeLimited):
                time.sleep(self._backoff(attempt))

    def _parse(self, reply: httpx.Response, method: str) -> Response | Bitrix24Error:
        status = reply.status_code
        try:
            body = reply.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            kind = reply.headers.get("content-type", "").split(";")[0] or "unknown"
            description = f"HTTP {status} with a {kind} body"
            if status >= 500 or status < 400:
                return TransientError(
                    "NON_JSON_RESPONSE", description, status=status, method=method
                )
            return PermanentError("NON_JSON_RESPONSE", description, status=status, method=method)
        if "error" in body:
            return classify(
                status,
                str(body.get("error") or ""),
                str(body.get("error_description") or ""),
                method=method,
            )
        if status >= 400:
            return classify(status, f"HTTP_{status}", "", method=method)
        total = body.get("total")
        nxt = body.get("next")
        raw_time = body.get("time")
        timing: dict[str, Any] = raw_time if isinstance(raw_time, dict) else {}
        if timing:
            self._remember_reset(method, timing)
        return Response(
            result=body.get("result"),
            total=int(total) if isinstance(total, int | str) and str(total).isdigit() else None,
            next=int(nxt) if isinstance(nxt, int | str) and str(nxt).isdigit() else None,
            time=timing,
        )

    def _log_success(
        self,
        method: str,
        status: int,
        response: Response,
        started: float,
        waited: float,
        attempt: int,
        commands: int,
    ) -> None:
        timing = response.time
        log.info(
            "bitrix24.call",
            extra={
                "portal": self.portal,
                "method": method,
                "http_status": status,
                "commands": commands,
                "elapsed_ms": round((time.monotonic() - started) * 1000),
                "bucket_wait_ms": round(waited * 1000),
                "b24_duration": _number(timing.get("duration")),
                "b24_processing": _number(timing.get("processing")),
                "operating": _number(timing.get("operating")),
                "operating_reset_at": _number(timing.get("operating_reset_at")),
                "attempt": attempt,
            },
        )

    def _backoff(self, attempt: int) -> float:
        """Exponential, capped, with ±50 % jitter so workers do not retry in lockstep."""
        base = min(self.backoff_cap, self.backoff_base * 2 ** (attempt - 1))
        return float(base * random.uniform(0.5, 1.5))

    # --- operating-time limit -------------------------------------------------------------

    def _reset_key(self, method: str) -> str:
        return f"b24:op_reset:{self.portal}:{method.lower()}"

    def _block_key(self, method: str) -> str:
        return f"b24:op_block:{self.portal}:{method.lower()}"

    def _remember_reset(self, method: str, timing: Mapping[str, Any]) -> None:
        reset_at = _number(timing.get("operating_reset_at"))
        if reset_at is None or method == "batch":
            return
        ttl = max(60, int(reset_at - time.time()) + 60)
        self.redis.set(self._reset_key(method), str(reset_at), ex=ttl)

    def _remember_batch_times(self, payload: Any, commands: Sequence[Command]) -> None:
        times = _as_map(payload.get("result_time")) if isinstance(payload, dict) else {}
        by_key = {c.key: c for c in commands}
        for key, timing in times.items():
            if key in by_key and isinstance(timing, dict):
                self._remember_reset(by_key[key].method, timing)

    def _block_until_reset(self, method: str, error: OperationTimeLimited) -> None:
        """Remember (for every worker) that `method` is blocked until its reset time, then
        wait for it here if that is short, else hand the wait to the caller."""
        raw = self.redis.get(self._reset_key(method))
        reset_at = float(raw) if raw else time.time() + self.max_block_wait * 2
        wait = max(0.0, reset_at - time.time())
        if wait > 0:
            self.redis.set(self._block_key(method), str(reset_at), px=max(1, int(wait * 1000)))
        error.retry_after = wait
        log.info(
            "bitrix24.operating_limit",
            extra={"portal": self.portal, "method": method, "wait_s": round(wait, 1)},
        )
        if wait > self.max_block_wait:
            raise error

    def _wait_if_blocked(self, method: str) -> None:
        raw = self.redis.get(self._block_key(method))
        if not raw:
            return
        wait = float(raw) - time.time()
        if wait <= 0:
            return
        if wait > self.max_block_wait:
            error = OperationTimeLimited(
                "OPERATION_TIME_LIMIT", "method blocked until its reset time", method=method
            )
            error.retry_after = wait
            raise error
        time.sleep(wait)


def refresh_oauth(
    oauth_url: str,
    *,
    client_id: str,
    client_secret: str,
    refresh_token: str,
) -> dict[str, Any]:
    """Exchange a refresh token for new tokens at the OAuth server. The old refresh token stops
    working, so callers serialise this (connection.py holds a row lock around it)."""
    timeout = float(getattr(settings, "BITRIX24_HTTP_TIMEOUT", 30.0))
    _check_egress(oauth_url, "oauth.token")
    try:
        with egress.client(timeout=timeout, headers={"User-Agent": USER_AGENT}) as http:
            reply = http.get(
                f"{oauth_url.rstrip('/')}/oauth/token/",
                params={
                    "grant_type": "refresh_token",
                    "client_id": client_id,
                    "client_secret": client_secret,
                    "refresh_token": refresh_token,
                },
            )
    except httpx.TransportError as exc:
        raise TransientError("NETWORK", type(exc).__name__, method="oauth.token") from None
    try:
        body = reply.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        raise TransientError("NON_JSON_RESPONSE", f"HTTP {reply.status_code}", method="oauth.token")
    if "error" in body or not body.get("access_token"):
        code = str(body.get("error") or "oauth_error")
        if reply.status_code >= 500:
            raise TransientError(code, "", status=reply.status_code, method="oauth.token")
        raise AuthError(
            code,
            str(body.get("error_description") or ""),
            status=reply.status_code,
            method="oauth.token",
        )
    log.info("bitrix24.oauth_refreshed", extra={"portal": urlsplit(oauth_url).netloc})
    return body


def _check_egress(url: str, method: str) -> None:
    """A portal URL typed by a business admin may not point inside this network."""
    try:
        egress.check(url)
    except egress.EgressRefused as exc:
        raise PermanentError("EGRESS_REFUSED", str(exc), method=method) from None
