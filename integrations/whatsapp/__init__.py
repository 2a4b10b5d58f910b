"""WhatsApp: the two ways a business number is connected, and the webhooks they post to.

`cloud_api` (the WhatsApp Business Platform's Graph API) and `bridge` (a linked-device bridge
next to the inbox) are the core's transports (`inbox.conversations.transports.Transport`):
they send text and managers' attachments and fetch customers' media, over clients from
`inbox.platform.http` (the bridge's pinned to the egress rule), and report failures as the
core's `TransientSendError` / `PermanentSendError` / `MediaError` (the platform's `Transient` /
`Permanent`). `webhooks`, `cloud_events` and `payloads` read what the platform and the bridge
post and hand it to the ingest.

It imports the core (`inbox.conversations`) and the platform (`inbox.platform`); the layer
contract would also let it use the web UI, upkeep and the assistant, and forbids the site shell
and the other integrations (Bitrix24, the sandbox).
"""
