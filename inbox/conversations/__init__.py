"""The conversation core: channels, chats and messages, who owns a chat (`ownership`), the ingest
of inbound events, the debounce that turns a burst into one turn, handoffs, and everything that
goes out to a customer (`outbound`, through a `transports.Transport`; its retries are the
`tasks.deliver_reply` Celery task's).

It imports only the platform floor (`inbox.platform`), Django, Celery and third-party packages:
never the web UI, upkeep, the assistant, the integrations or the site shell, which all import
it (the layer contract in pyproject.toml). Those reach back in through `hooks` and the
transport registry, or by task name.
"""
