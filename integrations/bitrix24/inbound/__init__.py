"""Changes made in Bitrix24 coming back to the inbox: `pull.py` (re-read what an event, the
offline queue or reconciliation named, and apply it; echoes of our own writes are dropped),
`offline.py` (the portal's offline event queue, app mode), `reconcile.py` (the periodic pass for
what events lost) and `customers.py` (the one thing the CRM may change on a chat: its name).

A feature layer: may import `sync/`, `crm/`, `rest/`, the package's top-level `models.py` and
`payloads.py`, and the conversation core; never `openlines/` or `setup/`, its siblings (the
Bitrix24 contract in pyproject.toml).
"""
