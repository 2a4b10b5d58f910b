"""Bitrix24 CRM sync: the only package that talks to Bitrix24.

rest/ (the HTTP client, the only module that makes requests; the shared rate-limit bucket;
errors; a ready client per business), crm/ (how our data looks in Bitrix24: fields, the
portal's stages, the snapshot that breaks echo loops), sync/ (the outbox and the push rounds
that move chats and handoffs to the CRM), inbound/ (CRM changes back: pull, reconciliation,
the offline queue), openlines/ (the Open Channels connector), setup/ (configuration, the
settings form, "test connection", the app install). At the top: models.py (the sync's state,
and `CrmEntity`), payloads.py (the event form, and the event names: `EventName`,
`crm_event`), hooks.py (the listener on the conversation core), tasks.py (Celery), events.py
and views.py (the event handler), settings_page.py and admin.py.

Imports run down the layers of the Bitrix24 contract in pyproject.toml: inbound/, openlines/
and setup/ (independent of one another) over sync/, over crm/, over rest/. models.py and
payloads.py import no layer, so every layer may import them; the top-level modules (hooks,
tasks, events, views, settings_page, admin) may import every layer, and no layer imports them.
Outside the package: the web UI, upkeep, the assistant, the conversation core and the platform,
never `inbox.site` or the other integrations.
"""
