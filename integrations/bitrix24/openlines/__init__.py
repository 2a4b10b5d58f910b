"""Bitrix24 Open Channels: `imconnector.py` (customer messages to the connector and operator
replies back out through our WhatsApp transport) and `bbcode.py` (the operators' BB-code as
WhatsApp text).

A feature layer: may import `sync/`, `crm/`, `rest/`, the package's models and the conversation
core; never `inbound/` or `setup/`, its siblings (the Bitrix24 contract in pyproject.toml).
"""
