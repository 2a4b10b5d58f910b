"""ASGI entry point: HTTP (Django, with the webhook endpoints in front of it) and websockets."""

from __future__ import annotations

import gc
import os
import re
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inbox.site.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from inbox.site.routing import websocket_urlpatterns  # noqa: E402
from inbox.site.websocket_auth import websocket_auth_stack  # noqa: E402
from integrations.whatsapp import webhooks  # noqa: E402

BRIDGE_PATH = re.compile(r"^/webhooks/bridge/(\d{1,18})/?$")


async def http(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The webhook routes skip Django's middleware stack (see integrations/whatsapp/webhooks.py);
    everything else is a normal Django request."""
    path = scope["path"]
    if path in ("/webhooks/whatsapp/", "/webhooks/whatsapp"):
        await webhooks.cloud_api(scope, receive, send)
        return
    bridge = BRIDGE_PATH.match(path)
    if bridge:
        await webhooks.bridge_events(scope, receive, send, int(bridge.group(1)))
        return
    await django_asgi_app(scope, receive, send)


application = ProtocolTypeRouter(
    {
        "http": http,
        # Session auth (the same login as the pages) and an Origin check against ALLOWED_HOSTS,
        # so another site cannot open a socket with a manager's cookies.
        "websocket": AllowedHostsOriginValidator(
            websocket_auth_stack(URLRouter(websocket_urlpatterns))
        ),
    }
)

# What is loaded by now (Django, the apps, the templates' modules) lives as long as the server:
# frozen, a full collection no longer walks it. Unfrozen, daphne's first full collections after
# a hundred dashboards connected took 96-149 ms (measured with gc.callbacks in bench/fanout.py),
# a stall every webhook and every socket of the process waited out. The ingest consumer does
# the same (`manage.py ingest_worker`).
gc.collect()
gc.freeze()
# A young collection every 20,000 allocations instead of 700, as the consumer does: a burst
# rendered to a hundred sockets makes tens of thousands of short-lived objects. Alternating
# `bench/fanout.py --clients 100,500` runs (2026-12-06): 100 bursty p99 105.9 / 101.4 ms
# against 108.4 / 109.1 without, 500 bursty 265 / 249 against 273 / 314.
gc.set_threshold(20_000, 20, 20)
