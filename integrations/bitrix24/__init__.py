"""Bitrix24 CRM sync: the only package that talks to Bitrix24.

rest/ (the HTTP client, the only module that makes requests; the shared rate-limit bucket;
errors; a ready client per business), crm/ (how our data looks in Bitrix24: fields, the
portal's stages, the snapshot that breaks echo loops), sync/ (the outbox and the push rounds
that move chats and handoffs to the CRM), inbound/ (CRM changes back: pull, reconciliation,
the offline queue), openlines/ (the Open Channels connector), setup/ (configuration, the
settings form, "test connection", the app install). At the top: hooks.py (the listener on the
conversation core), tasks.py (Celery), events.py and views.py (the event handler),
settings_page.py and admin.py.
"""
