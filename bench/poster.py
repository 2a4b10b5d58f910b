"""A webhook sender in a process of its own: keep-alive sockets, requests built in advance.

The fan-out bench stamps each message's send time and measures to its arrival on every socket.
Sent from the benchmark's own event loop with httpx, a burst of 20 posts cost the client
itself tens of milliseconds of Python (building, sending and parsing each request) while that
loop was also stamping the 100 sockets' arrivals; on a slow day the burst's webhooks were
"answered" after ~100 ms though the server spent ~10 ms on them. Meta's servers are not on
the inbox's machine. This sender does the least a client can: the HTTP/1.1 bytes are built
before the burst, each is stamped right before its `send`, and the answers are read off
non-blocking sockets (status line and Content-Length) with `selectors`. It shares the machine's
two cores with everything else, as Meta's traffic does not, so it costs the server side a
little more than a real sender would.

    poster = Poster("127.0.0.1", 8000, connections=20)
    sent = poster.send([(due_unix_time, key, request_bytes), ...])   # in the child process
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import selectors
import socket
import time
from dataclasses import dataclass, field
from typing import Any


def request_bytes(host: str, port: int, path: str, body: bytes, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", f"Content-Length: {len(body)}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@dataclass
class _Connection:
    sock: socket.socket
    key: str = ""  # the request awaiting its answer; "" when free
    buffer: bytearray = field(default_factory=bytearray)


@dataclass
class Sent:
    """Per request key: when it was sent, how long its answer took, the status."""

    sent_at: dict[str, float]
    answer_s: dict[str, float]
    status: dict[str, int]


def _answer(buffer: bytearray) -> tuple[int, int] | None:
    """(status, length of the whole response) once `buffer` holds a whole response."""
    end = buffer.find(b"\r\n\r\n")
    if end < 0:
        return None
    head = bytes(buffer[:end]).decode("latin-1").split("\r\n")
    status = int(head[0].split()[1])
    length = 0
    for line in head[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    total = end + 4 + length
    return (status, total) if len(buffer) >= total else None


def _send_all(
    host: str, port: int, connections: int, plan: list[tuple[float, str, bytes]], timeout: float
) -> Sent:
    selector = selectors.DefaultSelector()
    conns = []
    for _ in range(connections):
        sock = socket.create_connection((host, port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        conn = _Connection(sock)
        conns.append(conn)
        selector.register(sock, selectors.EVENT_READ, conn)
    sent = Sent({}, {}, {})
    waiting = 0
    queue = sorted(plan, key=lambda item: item[0])
    deadline = (queue[-1][0] if queue else time.time()) + timeout

    def read(wait: float) -> int:
        done = 0
        for key, _events in selector.select(max(0.0, wait)):
            conn: _Connection = key.data
            chunk = conn.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed a keep-alive connection")
            conn.buffer += chunk
            while conn.key and (found := _answer(conn.buffer)) is not None:
                status, length = found
                now = time.time()
                sent.answer_s[conn.key] = now - sent.sent_at[conn.key]
                sent.status[conn.key] = status
                del conn.buffer[:length]
                conn.key = ""
                done += 1
        return done

    try:
        for due, key, raw in queue:
            while (now := time.time()) < due:
                waiting -= read(due - now)
            free = next((c for c in conns if not c.key), None)
            while free is None:  # every connection has a request out: wait for an answer
                waiting -= read(1.0)
                free = next((c for c in conns if not c.key), None)
                if time.time() > deadline:
                    raise TimeoutError("no connection came free")
            free.key = key
            sent.sent_at[key] = time.time()
            free.sock.setblocking(True)
            free.sock.sendall(raw)
            free.sock.setblocking(False)
            waiting += 1
        while waiting and time.time() < deadline:
            waiting -= read(deadline - time.time())
    finally:
        for conn in conns:
            selector.unregister(conn.sock)
            conn.sock.close()
        selector.close()
    return sent


def _serve(pipe: multiprocessing.connection.Connection, host: str, port: int, n: int) -> None:
    pipe.send("ready")
    while True:
        job = pipe.recv()
        if job is None:
            return
        plan, timeout = job
        try:
            pipe.send(_send_all(host, port, n, plan, timeout))
        except Exception as exc:  # reported to the bench, which fails the level
            pipe.send(exc)


class Poster:
    """The sender's child process; `send` hands it a plan and waits for what it sent."""

    def __init__(self, host: str, port: int, *, connections: int) -> None:
        context = multiprocessing.get_context("spawn")  # no copy of Django's state
        self._pipe, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child, host, port, connections), daemon=True
        )
        self._process.start()
        # Started (its imports done) before anything is measured: its start is not a level's CPU.
        if not self._pipe.poll(60) or self._pipe.recv() != "ready":
            raise RuntimeError("the webhook sender did not start")

    def send(self, plan: list[tuple[float, str, bytes]], timeout: float = 60.0) -> Sent:
        self._pipe.send((plan, timeout))
        result: Any = self._pipe.recv()
        if isinstance(result, Exception):
            raise result
        assert isinstance(result, Sent)
        return result

    def cpu_seconds(self) -> float:
        import psutil

        times = psutil.Process(self._process.pid).cpu_times()
        return float(times.user + times.system)

    def close(self) -> None:
        self._pipe.send(None)
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()
