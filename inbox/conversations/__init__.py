"""The domain core: chats and messages, their rules and the one writer of each state (ownership,
assignment, status), ingest (webhook event → stored message), debounce (a burst → one turn),
the send path (`outbound`, through a `transports.Transport`; its retries are the
`tasks.deliver_reply` Celery task's), handoff, the audit of transitions and the hooks other
packages listen to.

What it may import: `inbox.platform` (HTTP, Redis, logs, metrics, egress, heap, fields), Django,
Celery and third-party packages. Never `inbox.web`, `inbox.site`, `inbox.upkeep`, `assistant` or
`integrations`: they import the core, not the other way round. The layers are import-linter's
contracts in pyproject.toml (`make lint`, tests/test_architecture.py); the core reaches the
packages above it only through `hooks` listeners, the transport registry and Celery task names.
"""
