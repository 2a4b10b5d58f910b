"""`python -m inbox.site.webhook_server [-b HOST] [-p PORT] [--workers N] [--proxy-headers]`:
the webhook endpoints (`inbox/site/webhook_app.py`) on uvicorn, with uvloop and httptools.

Logging is Django's (`LOGGING` in settings): JSON lines, phone numbers masked, and an access log
whose query strings lose their secrets (`hub.verify_token`) like daphne's. A websocket is refused
(the dashboards' sockets are daphne's). On SIGTERM uvicorn stops accepting and finishes the
requests in flight, each of which answers only once its events are in the durable queue.
"""

from __future__ import annotations

import argparse
import os

import django
import uvicorn

APP = "inbox.site.webhook_app:application"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m inbox.site.webhook_server", description=__doc__)
    p.add_argument("-b", "--bind", default="127.0.0.1", help="address to listen on")
    p.add_argument("-p", "--port", type=int, default=8100)
    p.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    p.add_argument(
        "--proxy-headers",
        action="store_true",
        help="trust X-Forwarded-For/-Proto from --forwarded-allow-ips (behind nginx)",
    )
    p.add_argument("--forwarded-allow-ips", default="127.0.0.1")
    p.add_argument("--no-access-log", action="store_true")
    return p


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inbox.site.settings")
    django.setup(set_prefix=False)  # Django's LOGGING for uvicorn's own lines too
    uvicorn.run(
        APP,
        host=args.bind,
        port=args.port,
        workers=args.workers,
        loop="uvloop",
        http="httptools",
        lifespan="off",
        log_config=None,
        access_log=not args.no_access_log,
        proxy_headers=args.proxy_headers,
        forwarded_allow_ips=args.forwarded_allow_ips,
        server_header=False,
        timeout_graceful_shutdown=20,
    )


if __name__ == "__main__":
    main()
