"""The HTTP server every emulator runs on: threaded, with a listen backlog big enough for the
concurrency tests and benchmarks (the standard library's default of 5 drops connections)."""

from __future__ import annotations

from http.server import ThreadingHTTPServer


class EmulatorServer(ThreadingHTTPServer):
    request_queue_size = 128
    daemon_threads = True
