"""The site shell: settings (one, from the environment), ASGI and its websocket routes, the
Celery app, the URLs, the local stack (`make run`), health, metrics, the webhook app and its
server, the socket's session login, security headers, an embedded Redis, the local LLM and the
generated local secrets. No pages of its own beyond health, metrics and the error pages.

The top of the layer contract (pyproject.toml): it may import every package (the web UI, the
integrations, upkeep, the assistant, the core, the platform) and is the one place that wires
them together (`apps.SiteConfig.ready`, `urls`, `routing`). Nothing below imports it: only
`inbox/__init__.py` (the Celery app, as Celery expects), the entry points and the tests.
"""
