"""ASGI entry point: HTTP (Django, with the webhook endpoints in front of it) and websockets.

Production sends WhatsApp's webhooks to a server of their own (`inbox/site/webhook_app.py`,
deploy/nginx.conf); this app still answers them, so one process is a whole web tier (`make run`,
a small install without nginx)."""

from __future__ import annotations

import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "inbox.site.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from inbox.platform import heap  # noqa: E402
from inbox.site.routing import websocket_urlpatterns  # noqa: E402
from inbox.site.websocket_auth import websocket_auth_stack  # noqa: E402
from integrations.whatsapp import webhooks  # noqa: E402


async def http(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """The webhook routes skip Django's middleware stack (see integrations/whatsapp/webhooks.py);
    everything else is a normal Django request."""
    handler = webhooks.route(scope["path"])
    if handler is not None:
        await handler(scope, receive, send)
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

heap.freeze_startup_heap()
