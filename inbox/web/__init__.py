"""The manager web UI: the inbox pages, the JSON API, the live websocket, the business admins'
settings pages and reports, template tags, and the Django admin of the core.

Sub-packages by concern: `settings/` (the business admin's pages), `reports/` (the reports page
and its CSV), `live/` (what open pages are told, and the websocket). The modules here are the
inbox page itself: views, actions, selectors (`dashboard`, `contact`), fragments, the API.

May import `inbox.upkeep`, `assistant`, `inbox.conversations` and `inbox.platform`; never the
site shell (`inbox.site`) or an integration, which sit above it in the layer contract
(pyproject.toml): an integration that must show something here registers with the web UI
(`crm_cards`), and the shell wires the two together.
"""
