"""One package per outside system: `bitrix24/` (the CRM sync), `whatsapp/` (the Cloud API and
the linked-device bridge: webhooks and transports) and `sandbox/` (the in-browser test channel).

They sit above the web UI in the layer contract (pyproject.toml): each may import `inbox.web`,
`inbox.upkeep`, `assistant`, `inbox.conversations` and `inbox.platform`, never `inbox.site` and
never one another. The core reaches them only through the interfaces it publishes (its hooks'
listeners, the transport registry, the CRM card providers), wired by `inbox/site/apps.py`.
"""
