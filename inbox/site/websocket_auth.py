"""The websocket's login: channels' session and user middleware, without a wrapper on every frame.

channels' `SessionMiddleware` hands the application a `send` that, before every message, reads
whether the session changed, to save it and set its cookie on an HTTP response. A websocket
never sends an HTTP response, so for the inbox's socket that read does nothing, once per
frame to every socket: 5 µs a frame in-process, up to a tenth of what daphne spends on each
frame under load (py-spy, docs/performance.md).
Here the session is resolved from the cookie at connect, as channels does, and the server's
own `send` goes to the application.
"""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddleware
from channels.sessions import CookieMiddleware, InstanceSessionWrapper, SessionMiddleware


class WebsocketSessionMiddleware(SessionMiddleware):  # type: ignore[misc]
    """For the websocket route only (`asgi.py`): an HTTP response would need the wrapper."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        wrapper = InstanceSessionWrapper(scope, send)
        await wrapper.resolve_session()
        return await self.inner(wrapper.scope, receive, send)


def websocket_auth_stack(inner: Any) -> Any:
    """`channels.auth.AuthMiddlewareStack`, its session middleware replaced by the one above."""
    return CookieMiddleware(WebsocketSessionMiddleware(AuthMiddleware(inner)))
