"""Upkeep: what the inbox does unattended. `alerts.py` (raising, resolving and announcing the
`Alert` rows, and the checks the beat runs every minute), `retention.py` (purging old message
content), `queues.py` (how long the oldest job of each Celery queue has waited) and `tasks.py`
(the beat's tasks: idle release, waking snoozed chats, the alert checks and the purge, and the
safety nets for unanswered chats, stuck sends and stuck transcriptions).

May import the assistant (`assistant.llm.health` for the model-server alerts), the conversation
core (`inbox.conversations`) and the platform (`inbox.platform`); never the web UI, the
integrations or the site shell, which sit above it (the layer contract in pyproject.toml). The
integrations call in instead (the Bitrix24 sync raises its own CRM_SYNC_FAILING alert).
"""
