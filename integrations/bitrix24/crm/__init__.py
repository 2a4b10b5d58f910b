"""How our data looks in Bitrix24: `fields.py` (phones, names, titles, comment texts with their
idempotency markers, the hash of the synced fields), `portal.py` (a portal's pipelines, stages
and user fields, cached) and `snapshot.py` (an entity as read back, recorded on the chat's link).

The CRM mapping layer: imports the REST client (`rest/`) and the package's models, never the
sync, inbound, openlines or setup layers above it (the Bitrix24 contract in pyproject.toml).
"""
