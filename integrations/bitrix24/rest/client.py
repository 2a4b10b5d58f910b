"""The Bitrix24 REST client: the only module that makes REST calls to Bitrix24 (the OAuth
token refresh is auth.py's).

One small method per concern: `call` (one method), `batch` (≤50 commands in one request,
batch.py reads the answer), `iterate` (`>ID` + `start=-1` pagination).

Every request first takes a slot from the portal's shared Redis bucket (limiter.py). The
response envelope is read on every call and its `time` block logged. Failures are classified
(errors.py: `TransientError` / `PermanentError`, the platform's `Transient` / `Permanent`) and
retried here with `inbox.platform.http.retry`, only while that is safe and short:
- 503 QUERY_LIMIT_EXCEEDED: exponential backoff with full jitter, and the shared bucket is
  marked full so every worker slows down;
- 429 OPERATION_TIME_LIMIT: wait until the method's `operating_reset_at` (remembered from the
  last success, shared in Redis), or hand the wait to the caller when it is long;
- non-JSON 5xx bodies and network errors: transient. A write whose outcome is unknown (timeout
  after sending, proxy error page) is NOT repeated here: it raises with `in_doubt=True`, and the
  sync looks before it writes again;
- an expired OAuth token is refreshed once per call and the request repeated (not an attempt).
After `max_attempts` tries, or when the next could not start within `max_total` seconds (below
the tasks' time limit), the last TransientError is raised; the caller's job is retried later.

The webhook URL is a bearer secret: it never appears in logs or exception messages; logs name
the portal host only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from django.conf import settings

from inbox.platform import http as platform_http
from inbox.platform.redis import get_redis
from integrations.bitrix24.rest.auth import (
    USER_AGENT,
    AppAuth,
    Auth,
    TokenSource,
    WebhookAuth,
    check_egress,
    http_timeout,
    refresh_oauth,
)
from integrations.bitrix24.rest.batch import (
    BATCH_LIMIT,
    BatchResult,
    Command,
    as_map,
    parse_batch,
)
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

__all__ = [
    "BATCH_LIMIT",
    "PAGE_SIZE",
    "USER_AGENT",
    "AppAuth",
    "Auth",
    "BatchResult",
    "Bitrix24Client",
    "Command",
    "Response",
    "TokenSource",
    "WebhookAuth",
    "is_read",
    "parse_batch",
    "refresh_oauth",
]

log = logging.getLogger(__name__)

PAGE_SIZE = 50
# A call with its retries ends before the tasks' soft time limit (tasks.py: 300 s).
MAX_TOTAL_SECONDS = 240.0
_READ_SUFFIXES = (".get", ".list", ".current", ".findbycomm", ".fields", ".info", ".status")
_READ_METHODS = {"scope", "methods", "profile", "server.time", "crm.settings.mode.get"}


def is_read(method: str) -> bool:
    """Whether repeating `method` after an unknown outcome is harmless."""
    name = method.lower()
    if name == "event.offline.get":
        return False  # it reserves records: repeat it with the same process_id instead
    return name in _READ_METHODS or name.endswith(_READ_SUFFIXES)


@dataclass(frozen=True)
class Response:
    result: Any
    total: int | None = None
    next: int | None = None
    time: Mapping[str, Any] = field(default_factory=dict)


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
        max_total: float = MAX_TOTAL_SECONDS,
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
        self.max_total = max_total
        self._own_http = http is None
        self.http = http or platform_http.client(
            timeout=http_timeout(),
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            pinned=True,
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

    def _policy(self) -> platform_http.Backoff:
        return platform_http.Backoff(
            attempts=self.max_attempts,
            base=self.backoff_base,
            cap=self.backoff_cap,
            total=self.max_total,
            retry_after_max=self.max_block_wait,  # an operating-time block we wait out here
        )

    def _send(
        self, method: str, payload: dict[str, Any], *, repeatable: bool, commands: int
    ) -> Response:
        check_egress(self.auth.url(method), method)
        attempt = 0
        refreshed = False
        not_here: list[BaseException] = []

        def one_attempt() -> Response:
            nonlocal attempt, refreshed
            attempt += 1
            try:
                return self._request(method, payload, repeatable, commands, attempt)
            except TokenExpired as error:
                if refreshed:
                    raise AuthError(
                        error.code, error.description, status=error.status, method=method
                    ) from None
                refreshed = True  # once per call, and the repeat is not another attempt
                try:
                    renewed = self.auth.refresh(payload)
                except TransientError as failed:
                    not_here.append(failed)  # the refresh is the caller's to try again
                    raise
                if not renewed:
                    # A webhook past its expiry date (or a token that stays expired): only a
                    # person can fix that.
                    raise AuthError(
                        error.code, error.description, status=error.status, method=method
                    ) from None
            try:
                return self._request(method, payload, repeatable, commands, attempt)
            except TokenExpired as error:
                raise AuthError(
                    error.code, error.description, status=error.status, method=method
                ) from None

        return platform_http.retry(
            one_attempt,
            self._policy(),
            on=TransientError,
            retry_if=lambda error: error not in not_here and self._may_retry(error),
        )

    def _may_retry(self, error: BaseException) -> bool:
        """Transient errors this client must not repeat itself: a write that may have happened
        (the caller looks first), a full client bucket or an operating-time block longer than
        it may wait (the caller's job waits instead)."""
        if not isinstance(error, TransientError) or error.in_doubt:
            return False
        if error.code == "CLIENT_BUCKET_FULL":
            return False
        return not (
            isinstance(error, OperationTimeLimited)
            and (error.retry_after or 0.0) > self.max_block_wait
        )

    def _request(
        self,
        method: str,
        payload: dict[str, Any],
        repeatable: bool,
        commands: int,
        attempt: int,
    ) -> Response:
        """One request: the parsed answer, or the classified error raised."""
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
        if isinstance(error, OperationTimeLimited):
            self._block_until_reset(method, error)
        elif isinstance(error, RateLimited):
            self.bucket.saturate()
        raise error

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
        times = as_map(payload.get("result_time")) if isinstance(payload, dict) else {}
        by_key = {c.key: c for c in commands}
        for key, timing in times.items():
            if key in by_key and isinstance(timing, dict):
                self._remember_reset(by_key[key].method, timing)

    def _block_until_reset(self, method: str, error: OperationTimeLimited) -> None:
        """Remember (for every worker) that `method` is blocked until its reset time; the wait
        becomes the error's `retry_after`: waited out here when it is short (the retry rule),
        handed to the caller otherwise (`_may_retry`)."""
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
