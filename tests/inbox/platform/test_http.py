"""The outbound HTTP floor against a real HTTP server on loopback: the client factory (all four
timeouts, pooled connections, the egress rule when pinned), the two kinds of failure and the
retry rule (bounded attempts, bounded total time, full jitter, Retry-After in seconds or as an
HTTP date). Waits go through an injected sleep, so what is checked is the wait asked for."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import httpx
import pytest

from inbox.platform import egress, http
from inbox.platform.http import Backoff, Permanent, Transient
from tests.emulators.http import EmulatorServer


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Server:
    """Answers each request with the next scripted reply (200 "ok" once the script is done)."""

    base_url: str = ""
    script: list[Reply] = field(default_factory=list)
    seen: list[int] = field(default_factory=list)  # the client's port of each request

    def answers(self, *replies: Reply) -> None:
        self.script.extend(replies)


@contextmanager
def server() -> Iterator[Server]:
    state = Server()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: connection reuse is visible

        def do_GET(self) -> None:
            with lock:
                state.seen.append(self.client_address[1])
                reply = state.script.pop(0) if state.script else Reply()
            if reply.delay:
                time.sleep(reply.delay)
            body = b"ok" if reply.status == 200 else b"no"
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    httpd = EmulatorServer(("127.0.0.1", 0), Handler)
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


class Unavailable(Transient):
    pass


class Refused(Permanent):
    pass


def fetch(client: httpx.Client, url: str) -> str:
    """What an integration does with an answer: 429/5xx transient, other 4xx permanent."""
    response = client.get(url)
    if response.status_code == 429 or response.status_code >= 500:
        raise Unavailable(
            f"HTTP {response.status_code}", retry_after=http.retry_after(response.headers)
        )
    if response.status_code >= 400:
        raise Refused(f"HTTP {response.status_code}")
    return response.text


class Waits:
    """An injected sleep that only records, and the clock it moves."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.asked.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


# --- the client factory ----------------------------------------------------------------------


def test_every_timeout_is_set_and_an_unset_one_is_refused() -> None:
    with http.client(timeout=http.timeouts(7.0, connect=2.0, pool=1.0)) as client:
        timeout = client.timeout
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (2.0, 7.0, 7.0, 1.0)
    assert http.DEFAULT_TIMEOUT.read == 15.0
    with pytest.raises(ValueError, match="pool"):
        http.client(timeout=httpx.Timeout(5.0, pool=None))


def test_a_read_timeout_ends_the_request_when_the_server_stalls() -> None:
    with server() as srv, http.client(timeout=http.timeouts(0.2)) as client:
        srv.answers(Reply(delay=1.0))
        started = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            client.get(f"{srv.base_url}/")
        assert time.monotonic() - started < 0.9


@pytest.mark.parametrize("pinned", [False, True])
def test_connections_are_pooled_and_reused(settings: Any, pinned: bool) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = ["127.0.0.1"]
    with server() as srv, http.client(pinned=pinned) as client:
        assert [client.get(f"{srv.base_url}/{n}").text for n in range(3)] == ["ok"] * 3
    assert len(set(srv.seen)) == 1  # one connection for the three requests


def test_a_pinned_client_goes_through_the_egress_rule(settings: Any) -> None:
    settings.OUTBOUND_ALLOWED_HOSTS = []
    with server() as srv, http.client(pinned=True) as client:
        with pytest.raises(egress.ConnectRefused):
            client.get(f"{srv.base_url}/")
    assert srv.seen == []


def test_the_shared_client_is_one_per_process_and_kind() -> None:
    assert http.shared() is http.shared()
    assert http.shared(pinned=True) is not http.shared()


# --- Retry-After -----------------------------------------------------------------------------


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = 1_750_000_000.0
    assert http.retry_after({"Retry-After": "7"}) == 7.0
    assert http.retry_after(httpx.Headers({"retry-after": "1.5"})) == 1.5
    assert http.retry_after({"Retry-After": http.http_date(30, now=now)}, now=now) == 30.0
    assert http.retry_after({"Retry-After": http.http_date(-30, now=now)}, now=now) == 0.0
    assert http.retry_after({"Retry-After": "-3"}) == 0.0
    assert http.retry_after({"Retry-After": "soon"}) is None
    assert http.retry_after({}) is None
    assert http.retry_after(None) is None


# --- retrying --------------------------------------------------------------------------------


def test_transient_failures_are_retried_with_full_jitter_until_one_works() -> None:
    waits = Waits()
    with server() as srv, http.client() as client:
        srv.answers(Reply(503), Reply(502), Reply(500))
        policy = Backoff(attempts=5, base=0.5, cap=1.5, total=60)

        text = http.retry(
            lambda: fetch(client, f"{srv.base_url}/"), policy,
            sleep=waits.sleep, clock=waits.clock, rng=lambda: 0.999,
        )  # fmt: skip

    assert text == "ok"
    assert len(srv.seen) == 4
    # The top of each jitter range: base·2^(n-1), capped.
    assert waits.asked == pytest.approx([0.4995, 0.999, 1.4985])


def test_the_jitter_is_full_between_zero_and_the_step() -> None:
    policy = Backoff(base=1.0, cap=8.0)
    delays = [policy.delay(3) for _ in range(400)]
    assert 0.0 <= min(delays) < 0.5
    assert 3.5 < max(delays) <= 4.0
    assert policy.delay(3, rng=lambda: 0.0) == 0.0
    assert policy.delay(10, rng=lambda: 1.0) == 8.0  # the cap


def test_attempts_are_bounded_and_the_last_error_is_raised() -> None:
    waits = Waits()
    with server() as srv, http.client() as client:
        srv.answers(*[Reply(503)] * 10)
        with pytest.raises(Unavailable, match="HTTP 503"):
            http.retry(
                lambda: fetch(client, f"{srv.base_url}/"), Backoff(attempts=3),
                sleep=waits.sleep, clock=waits.clock,
            )  # fmt: skip
    assert len(srv.seen) == 3
    assert len(waits.asked) == 2


def test_retry_after_in_seconds_is_waited_for_instead_of_the_backoff() -> None:
    waits = Waits()
    with server() as srv, http.client() as client:
        srv.answers(Reply(429, {"Retry-After": "4"}))
        assert http.retry(
            lambda: fetch(client, f"{srv.base_url}/"), Backoff(base=0.1, total=60),
            sleep=waits.sleep, clock=waits.clock,
        ) == "ok"  # fmt: skip
    assert waits.asked == [4.0]


def test_retry_after_as_an_http_date_is_waited_for() -> None:
    waits = Waits()
    with server() as srv, http.client() as client:
        srv.answers(Reply(503, {"Retry-After": http.http_date(6)}))
        http.retry(
            lambda: fetch(client, f"{srv.base_url}/"), Backoff(base=0.1, total=60),
            sleep=waits.sleep, clock=waits.clock,
        )  # fmt: skip
    (asked,) = waits.asked
    assert 4.5 <= asked <= 6.0  # an HTTP date has whole seconds


def test_a_long_retry_after_is_bounded() -> None:
    waits = Waits()
    with server() as srv, http.client() as client:
        srv.answers(Reply(429, {"Retry-After": "3600"}))
        http.retry(
            lambda: fetch(client, f"{srv.base_url}/"), Backoff(retry_after_max=2.5, total=60),
            sleep=waits.sleep, clock=waits.clock,
        )  # fmt: skip
    assert waits.asked == [2.5]


def test_no_retry_starts_past_the_total_time() -> None:
    waits = Waits()
    with server() as srv, http.client() as client:
        srv.answers(*[Reply(503, {"Retry-After": "0.6"})] * 10)
        with pytest.raises(Unavailable):
            http.retry(
                lambda: fetch(client, f"{srv.base_url}/"), Backoff(attempts=10, total=1.0),
                sleep=waits.sleep, clock=waits.clock,
            )  # fmt: skip
    assert waits.asked == [0.6]  # a second wait of 0.6 s would end at 1.2 s, past the bound
    assert len(srv.seen) == 2


def test_the_total_time_counts_the_requests_themselves() -> None:
    """A real clock: slow answers use up the budget as much as waits do."""
    with server() as srv, http.client() as client:
        srv.answers(*[Reply(503, delay=0.3)] * 10)
        started = time.monotonic()
        with pytest.raises(Unavailable):
            http.retry(lambda: fetch(client, f"{srv.base_url}/"),
                       Backoff(attempts=10, base=0.01, total=0.5))  # fmt: skip
    assert len(srv.seen) == 2
    assert time.monotonic() - started < 1.5


def test_permanent_errors_are_never_retried() -> None:
    waits = Waits()
    with server() as srv, http.client() as client:
        srv.answers(Reply(404), Reply(200))
        with pytest.raises(Refused):
            http.retry(lambda: fetch(client, f"{srv.base_url}/"), Backoff(attempts=5),
                       sleep=waits.sleep)  # fmt: skip
    assert len(srv.seen) == 1
    assert waits.asked == []


def test_an_error_both_transient_and_permanent_counts_as_permanent() -> None:
    class Misconfigured(Unavailable, Permanent):
        pass

    calls = []

    def call() -> str:
        calls.append(1)
        raise Misconfigured("wrong key")

    with pytest.raises(Misconfigured):
        http.retry(call, Backoff(attempts=5), sleep=Waits().sleep)
    assert len(calls) == 1


def test_retry_if_can_refuse_a_retry_and_before_retry_sees_each_one() -> None:
    waits = Waits()
    seen: list[tuple[int, str, float]] = []
    with server() as srv, http.client() as client:
        srv.answers(Reply(503), Reply(502), Reply(500))
        with pytest.raises(Unavailable, match="HTTP 500"):
            http.retry(
                lambda: fetch(client, f"{srv.base_url}/"), Backoff(attempts=9),
                retry_if=lambda error: "500" not in str(error),
                before_retry=lambda n, error, delay: seen.append((n, str(error), delay)),
                sleep=waits.sleep, clock=waits.clock, rng=lambda: 0.5,
            )  # fmt: skip
    assert seen == [(1, "HTTP 503", 0.25), (2, "HTTP 502", 0.5)]
    assert len(srv.seen) == 3


def test_network_errors_can_be_retried_by_naming_them() -> None:
    with server() as srv:
        url = f"{srv.base_url}/"
    # The server is gone: connecting fails each time.
    waits = Waits()
    with http.client(timeout=http.timeouts(1.0, connect=0.5)) as client:
        with pytest.raises(httpx.ConnectError):
            http.retry(lambda: client.get(url), Backoff(attempts=3),
                       on=(Transient, httpx.TransportError),
                       sleep=waits.sleep, clock=waits.clock)  # fmt: skip
    assert len(waits.asked) == 2


def test_the_real_sleep_waits() -> None:
    with server() as srv, http.client() as client:
        srv.answers(Reply(503, {"Retry-After": "0.2"}))
        started = time.monotonic()
        assert http.retry(lambda: fetch(client, f"{srv.base_url}/"), Backoff()) == "ok"
    assert time.monotonic() - started >= 0.2


def test_a_policy_needs_at_least_one_attempt() -> None:
    with pytest.raises(ValueError):
        Backoff(attempts=0)
