"""The webhook endpoints as an ASGI app of their own, for a server that takes only webhooks
(`python -m inbox.site.webhook_server`, behind nginx's `/webhooks/whatsapp/` and
`/webhooks/bridge/` locations).

Why a server of their own: a burst of webhooks is answered on other cores than the sockets of
the open dashboards, and uvicorn spends about half of daphne's CPU on each (bench/ingest.py).
It serves the webhook routes (the same table as `inbox/site/asgi.py`) and `/healthz`; any
other path is a 404, so this port exposes no page, API or socket of the inbox.
"""

from __future__ import annotations

import os
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inbox.site.settings")
django.setup(set_prefix=False)

from inbox.platform import heap  # noqa: E402
from integrations.whatsapp import webhooks  # noqa: E402


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})  # before accept: a 403
        return
    path = scope["path"]
    handler = webhooks.route(path)
    if handler is not None:
        await handler(scope, receive, send)
    elif path == "/healthz":
        await webhooks.respond(send, 200, "ok")
    else:
        await webhooks.respond(send, 404, "not found: this server takes only webhooks")


heap.freeze_startup_heap()
