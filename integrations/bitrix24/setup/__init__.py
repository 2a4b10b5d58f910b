"""Connecting a business to its portal: `config.py` (validated settings, the first sync),
`forms.py` (the settings form, secrets write-only), `check.py` ("test connection") and
`install.py` (the local application's install event and the events it binds).

A feature layer: may import `sync/`, `crm/`, `rest/`, the package's top-level `models.py` and
`payloads.py`, the web UI's form helpers and the conversation core; never `inbound/` or
`openlines/`, its siblings (the Bitrix24 contract in pyproject.toml).
"""
